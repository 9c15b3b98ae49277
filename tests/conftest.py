"""Shared test helpers: the fixture corpus and a catalog query helper."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from logmine.ingest.run import IngestConfig, ingest

# Nothing is ever downloaded from a model hub: tests build tiny tokenizers and models locally.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# In a pytest-xdist worker (the README's `pytest -n auto`), torch and the tokenizers use one thread:
# two workers each spinning two threads on two cores made the training tests three times slower.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FIXTURES = Path(__file__).parent / "fixtures"
# `logmine ingest` without paths also reads Claude Code's projects folder: never the real one of
# whoever runs the tests (a test that wants one sets it, as tests set CODEX_HOME)
os.environ["CLAUDE_CONFIG_DIR"] = str(Path(__file__).parent / "no-claude-config-dir")


def pytest_collection_modifyitems(items):
    """Tests marked ``slow`` run first, the longest first (``slow(minutes)``, else 1), then the rest in
    collection order: with ``pytest -n 2`` (the README's command) each worker starts on a long test
    instead of one ending the run alone on one core."""
    def minutes(item) -> float:
        marker = item.get_closest_marker("slow")
        return (marker.args[0] if marker.args else 1) if marker else 0

    items.sort(key=lambda item: -minutes(item))


def query(store: Path, sql: str, params=None) -> list[dict]:
    """Rows of ``sql`` against the store's catalog, as dicts."""
    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True)
    try:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
    finally:
        con.close()


@pytest.fixture(scope="session")
def fixture_store(tmp_path_factory) -> tuple[Path, object]:
    """Every file under tests/fixtures ingested once into a fresh store."""
    store = tmp_path_factory.mktemp("fixtures") / "store"
    summary = ingest(IngestConfig(paths=(FIXTURES / "codex-public", FIXTURES / "codex-generated"), store=store))
    return store, summary


@pytest.fixture(scope="session")
def shell_family(tmp_path_factory) -> dict:
    """The synthetic shell-task family (train/held-out TMax dirs) and a tiny model SFT-trained on it."""
    from rl_support import shell_family as build

    return build(tmp_path_factory.mktemp("shell-family"))


@pytest.fixture(scope="session")
def demo_tmax(tmp_path_factory) -> Path:
    """The demo's TMax export: tasks of a real Codex CLI 0.171 session, with runnable bundles."""
    from rl_support import demo_tmax as build

    return build(tmp_path_factory.mktemp("demo-tmax"))
