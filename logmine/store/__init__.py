"""The store, at the bottom of the stack: Parquet parts plus a DuckDB catalog (see :mod:`.core`).

- :mod:`.tables`: the pyarrow schema of every table;
- :mod:`.catalog`: which generation column and state table make a table's rows live, and the views;
- :mod:`.parts`: the health of the Parquet parts (missing, unreadable);
- :mod:`.core`: :class:`Store`, atomic commits of parts and state.

Nothing here imports a stage package; every stage imports this one.
"""

from logmine.store.core import CATALOG, DEFAULT_STORE, Store, StoreError, fetch_dicts
from logmine.store.parts import PartProblem

__all__ = ["CATALOG", "DEFAULT_STORE", "PartProblem", "Store", "StoreError", "fetch_dicts"]
