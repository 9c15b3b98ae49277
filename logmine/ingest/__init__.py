"""Ingest stage: Codex session logs on disk → redacted canonical tables in a Parquet + DuckDB store."""

from logmine.ingest.run import IngestConfig, IngestSummary, NothingToIngest, ingest

__all__ = ["IngestConfig", "IngestSummary", "NothingToIngest", "ingest"]
