"""Ingest stage: Codex session logs on disk → redacted canonical tables in a Parquet + DuckDB store.

Names are loaded lazily (:mod:`logmine.lazy`): the store's catalog imports this stage's records.
"""

from logmine.lazy import lazy_exports

_EXPORTS = {
    "IngestConfig": "logmine.ingest.run",
    "IngestSummary": "logmine.ingest.run",
    "NothingToIngest": "logmine.ingest.run",
    "ingest": "logmine.ingest.run",
    "Store": "logmine.store",
    "StoreError": "logmine.store",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
