"""Ingest stage: Codex session logs on disk → redacted canonical tables in a Parquet + DuckDB store.

Names are loaded lazily so that ``logmine.ingest.records`` (the schemas, needed by the store's
catalog) can be imported without pulling in the stage's runner.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "IngestConfig": "logmine.ingest.run",
    "IngestSummary": "logmine.ingest.run",
    "NothingToIngest": "logmine.ingest.run",
    "ingest": "logmine.ingest.run",
    "Store": "logmine.store",
    "StoreError": "logmine.store",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'logmine.ingest' has no attribute {name!r}")
