"""Ingest stage: Codex and Claude Code session logs on disk → redacted canonical tables in a Parquet + DuckDB store.

The entry point is :func:`logmine.ingest.run.ingest` (with :class:`~logmine.ingest.run.IngestConfig`).
This package exports nothing, so that :mod:`.discover`, :mod:`.summary` and :mod:`.seen` import
without pyarrow or DuckDB: ``logmine ingest`` on unchanged input answers from them alone
(:func:`logmine.ingest.seen.quick_summary`).
"""
