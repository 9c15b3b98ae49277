"""The store, at the bottom of the stack: Parquet parts plus a DuckDB catalog (see :mod:`.core`).

- :mod:`.tables`: the pyarrow schema of every table;
- :mod:`.catalog`: which generation column and state table make a table's rows live, and the views;
- :mod:`.parts`: the health of the Parquet parts (missing, unreadable);
- :mod:`.core`: :class:`Store`, atomic commits of parts and state;
- :mod:`.query`: :func:`open_store`, a read-only DuckDB connection whose views work wherever the store is.

Nothing here imports a stage package; every stage imports this one.

Its names are imported on first use (:func:`__getattr__`): a process that only writes parts or
builds tables (ingest's workers: :mod:`.parts`, :mod:`.rows`) never imports DuckDB.
"""

import importlib

_HOMES = {"CATALOG": "catalog", "DEFAULT_STORE": "catalog", "Store": "core", "StoreError": "core",
          "fetch_dicts": "core", "PartProblem": "parts", "open_store": "query"}

__all__ = ["CATALOG", "DEFAULT_STORE", "PartProblem", "Store", "StoreError", "fetch_dicts", "open_store"]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"logmine.store.{home}"), name)
    globals()[name] = value
    return value
