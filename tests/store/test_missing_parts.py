"""A deleted or corrupt part is detected when the store opens, dropped from the views with a
warning, and healed by the next ingest (its source files are re-read)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from claude_support import FIXADD
from conftest import FIXTURES, query

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment
from logmine.store import Store

# a Codex and a Claude Code session file, each the real CLI's: the store heals alike
SESSIONS = {"codex": next((FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl")), "claude": FIXADD["2.1.332"]}


@pytest.fixture(params=list(SESSIONS))
def session(request) -> Path:
    return SESSIONS[request.param]


def _store(tmp_path: Path, session: Path) -> tuple[Path, int]:
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(session,), store=store))
    return store, query(store, "SELECT count(*) AS n FROM events")[0]["n"]


def test_deleted_part_is_dropped_with_a_warning(tmp_path, caplog, session):
    store, _ = _store(tmp_path, session)
    (part,) = (store / "events").glob("part-*.parquet")
    part.unlink()
    with Store(store) as opened:
        assert opened.con.execute("SELECT count(*) FROM events").fetchone()[0] == 0
        assert opened.problems == [f"part events/{part.name} is missing"]
    assert f"events/{part.name} is missing" in caplog.text
    assert query(store, "SELECT error FROM files")[0]["error"].startswith("stale")


def test_rerun_of_ingest_heals_a_deleted_part(tmp_path, session):
    store, n = _store(tmp_path, session)
    next((store / "events").glob("part-*.parquet")).unlink()
    summary = ingest(IngestConfig(paths=(session,), store=store))
    assert summary.changes["rewritten"] == 1
    assert query(store, "SELECT count(*) AS n FROM events")[0]["n"] == n
    assert query(store, "SELECT count(*) AS n FROM sessions")[0]["n"] == 1
    with Store(store) as opened:
        assert opened.problems == []


def test_corrupt_part_is_detected_and_segment_runs(tmp_path, session):
    store, n = _store(tmp_path, session)
    (part,) = (store / "sessions").glob("part-*.parquet")
    part.write_bytes(b"not a parquet file at all")
    segment(SegmentConfig(store=store))  # no DuckDB traceback
    with Store(store, read_only=True) as opened:
        assert opened.problems == []  # the rw open above dropped it and marked the file stale
    ingest(IngestConfig(paths=(session,), store=store))
    assert query(store, "SELECT count(*) AS n FROM sessions")[0]["n"] == 1
    assert query(store, "SELECT count(*) AS n FROM events")[0]["n"] == n


def test_check_parts_reads_every_part(tmp_path, session):
    store, _ = _store(tmp_path, session)
    (part,) = (store / "events").glob("part-*.parquet")
    data = part.read_bytes()
    part.write_bytes(data[:4] + b"\0" * (len(data) - 8) + data[-4:])  # magic intact, body garbage
    with Store(store, read_only=True) as opened:
        assert opened.problems == []  # the cheap check at open sees a plausible file
        deep = opened.check_parts()
    assert [p.path for p in deep] == [f"events/{part.name}"] and deep[0].kind == "unreadable"


def test_the_ingest_command_heals_a_deleted_part_although_no_input_changed(tmp_path, session):
    """The unchanged-input shortcut of ``logmine ingest`` (``logmine.ingest.seen``) notices the part."""
    store = tmp_path / "store"
    command = [sys.executable, "-m", "logmine", "ingest", str(session), "--store", str(store), "-q"]
    subprocess.run(command, check=True, capture_output=True)
    n = query(store, "SELECT count(*) AS n FROM events")[0]["n"]
    next((store / "events").glob("part-*.parquet")).unlink()
    subprocess.run(command, check=True, capture_output=True)
    assert query(store, "SELECT count(*) AS n FROM events")[0]["n"] == n > 0
