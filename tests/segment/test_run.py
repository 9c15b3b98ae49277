"""The segment stage over stores written by an older ingest."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from conftest import query
from session_builder import SessionBuilder

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment

GHOST_COLUMNS = ("ghost_commit", "ghost_untracked")


def test_a_ghost_snapshot_in_a_part_without_the_ghost_columns_still_starts_its_task(tmp_path):
    b = (SessionBuilder().user("Fix add").ghost("c" * 40, untracked=("notes.py",)).run("pytest -q", 1)
         .run("sed -i 's/-/+/' calc.py").run("pytest -q", 0).agent("Fixed."))
    b.write(tmp_path / "sessions")
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(tmp_path / "sessions",), store=store, jobs=1))
    parts = [p for p in (store / "events").glob("*.parquet") if p.name != "_empty.parquet"]
    assert parts
    for part in parts:  # as an ingest from before the columns existed wrote it
        table = pq.read_table(part)
        pq.write_table(table.drop_columns(list(GHOST_COLUMNS)), part)
        assert not set(GHOST_COLUMNS) & set(pq.read_schema(part).names)
    assert query(store, "SELECT count(*) AS n FROM events WHERE ghost_commit IS NOT NULL") == [{"n": 0}]
    segment(SegmentConfig(store=store))
    (task,) = query(store, "SELECT start_state FROM tasks")
    state = json.loads(task["start_state"])
    assert state["method"] == "ghost_snapshot" and state["ghost_commit"] == "c" * 40
    assert state["untracked"] == ["notes.py"]
