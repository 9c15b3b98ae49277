"""Reading a store with SQL from anywhere: :func:`open_store`, what ``logmine sql`` and the notebooks use.

A plain ``duckdb.connect("STORE/catalog.duckdb")`` reads the views the catalog persists, which name
the parts by absolute path as of the last logmine command that opened the store. After a ``mv`` of
the store those paths are gone until a logmine command opens it again (any command does: a read-only
open of a moved store rewrites them when it can). :func:`open_store` needs no such step: it opens
the catalog read-only with views over the parts where the store is now.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from logmine.store.catalog import DEFAULT_STORE
from logmine.store.core import Store


def open_store(path: str | Path | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only DuckDB connection to the store at ``path`` (default: ``./logmine-store``) whose views (``sessions``, ``events``, ``tool_calls``, ``tasks``,
    ``verifiers``, …) read the parts where the store is now. Close it when done; while it is open, no
    logmine command can write the store. Raises :class:`~logmine.store.core.StoreError` when there
    is no store there."""
    store = Store(Path(path) if path is not None else DEFAULT_STORE, read_only=True)
    return store.detach()
