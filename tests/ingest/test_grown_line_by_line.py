"""A session file ingested after every line its CLI appends (each run also seeing half of the next
line, which waits) ends with the rows one run over the whole file makes: the same events, the same
session row, nothing quarantined, no part left unregistered. Codex and Claude Code files alike (a
Claude Code file resumes with its mapper's state: the chain's tip, the open tool calls, the last
response id)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from claude_support import FIXADD, GENERATED
from conftest import FIXTURES, query

from logmine.ingest.run import IngestConfig, ingest

COLUMNS = "* EXCLUDE (file_gen, source_path)"
SUBAGENT = GENERATED / "claude-2.1.332/projects/-home-dev-projects-subagent/3e032dae-ddb2-4607-ab00-0ddeaa3c3106"
SESSIONS = {
    "codex": next((FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl")),
    **{f"claude-{v}": path for v, path in FIXADD.items()},
    "claude-2.1.332-subagent": next((SUBAGENT / "subagents").glob("agent-*.jsonl")),
}
#: A Claude Code file read before its first answer is read again whole when it grows (its session
#: row takes cwd, version and 2.1's commit from the lines up to then): its runs count events again.
REREAD = {"claude-2.0.50", "claude-2.1.332", "claude-2.1.332-subagent"}


@dataclass(frozen=True)
class Grown:
    store: Path  # ingested after every line
    clean: Path  # ingested once, whole
    lines: int
    events_read: int  # the events the runs' summaries counted, all together


@pytest.fixture(scope="module", params=list(SESSIONS))
def grown(request, tmp_path_factory) -> Grown:
    session = SESSIONS[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    live = tmp / "live" / session.name
    live.parent.mkdir()
    lines = session.read_bytes().splitlines(keepends=True)
    store, read = tmp / "store", 0
    for n in range(1, len(lines) + 1):
        tail = lines[n][: len(lines[n]) // 2] if n < len(lines) else b""  # half a line: it waits
        live.write_bytes(b"".join(lines[:n]) + tail)
        summary = ingest(IngestConfig(paths=(live.parent,), store=store, jobs=1))
        assert summary.quarantined == 0 and not summary.bad_files, n
        assert summary.changes["new" if n == 1 else "grown"] == 1, (n, summary.changes)
        read += summary.events
    clean = tmp / "clean"
    shutil.copy(session, tmp / session.name)
    ingest(IngestConfig(paths=(tmp / session.name,), store=clean, jobs=1))
    return Grown(store, clean, len(lines), read)


def test_the_events_are_those_of_one_run_over_the_whole_file(grown, request):
    sql = f"SELECT {COLUMNS} FROM events ORDER BY seq"
    got, want = query(grown.store, sql), query(grown.clean, sql)
    assert len(got) == len(want) > grown.lines / 2
    if request.node.callspec.params["grown"] not in REREAD:
        assert grown.events_read == len(got)
    assert got == want


def test_the_session_row_is_that_of_one_run_over_the_whole_file(grown):
    """It once kept the fields of the lines the first run saw, for good (no cwd, no commit)."""
    sql = f"SELECT {COLUMNS} FROM sessions ORDER BY session_id"
    assert query(grown.store, sql) == query(grown.clean, sql)


def test_the_store_holds_each_part_once_and_no_orphan(grown):
    registered = sorted(r["path"] for r in query(grown.store, "SELECT path FROM parts"))
    on_disk = sorted(p.name for p in grown.store.rglob("part-*.parquet"))
    assert registered == on_disk and len(set(registered)) == len(registered)
    assert not list(grown.store.rglob("*.tmp"))
    (row,) = query(grown.store, "SELECT format, consumed, pending_bytes, error FROM files")
    assert row["error"] is None and row["pending_bytes"] == 0 and row["format"] in ("g2", "claude")
