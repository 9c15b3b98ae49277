"""Reading a store with SQL from anywhere: :func:`open_store`, what ``logmine sql`` and the notebooks use.

A plain ``duckdb.connect("STORE/catalog.duckdb")`` reads the views the catalog persists, which find
the parts next to the catalog file wherever the store now is (see :mod:`logmine.store.core`).
:func:`open_store` also checks each part first: a missing or damaged one is left out of its views
and reported, where a plain connection fails on it.
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
