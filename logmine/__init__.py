"""logmine: turn coding-agent session logs (OpenAI Codex CLI) into verified training data.

Stages, one subpackage each: ``ingest`` (this release) → segment → verify → export → train.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``logmine.open_store`` (:func:`logmine.store.query.open_store`), imported on first use so that
    ``import logmine`` stays free of DuckDB."""
    if name == "open_store":
        from logmine.store.query import open_store

        return open_store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
