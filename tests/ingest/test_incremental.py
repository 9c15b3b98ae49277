"""Incremental, idempotent and crash-safe ingest."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from claude_support import FIXADD
from conftest import FIXTURES, query

from logmine.ingest.run import IngestConfig, ingest

SESSION = next((FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl"))
COLUMNS = "* EXCLUDE (file_gen)"
#: One session file of each format, real files written by the CLIs (a Claude Code file keeps its
#: ``<session uuid>.jsonl`` name, by which it is told from Codex's).
SESSIONS = {"codex": SESSION, **{f"claude-{v}": path for v, path in FIXADD.items()}}
#: A file rewritten in place: (what it held first, what it holds then, the cli_version read then).
REWRITES = {
    "codex": (SESSION, next((FIXTURES / "codex-generated/codex-0.90.0").glob("*.jsonl")), "0.90.0"),
    "claude": (FIXADD["2.1.332"], FIXADD["2.0.50"], "2.0.50"),
}


def _ingest(store: Path, *paths: Path):
    return ingest(IngestConfig(paths=paths, store=store))


def _events(store: Path, path: Path | None = None) -> list[dict]:
    where, params = ("WHERE source_path = ?", [str(path)]) if path else ("", [])
    return query(store, f"SELECT {COLUMNS} FROM events {where} ORDER BY source_path, seq", params)


def _parts(store: Path) -> list[str]:
    return sorted(p.name for p in store.rglob("part-*.parquet"))


def test_rerun_on_unchanged_input_adds_nothing(tmp_path):
    store = tmp_path / "store"
    first = _ingest(store, FIXTURES)
    before, parts = _events(store), _parts(store)
    assert {"g2", "claude"} <= set(first.formats)  # both tools' files
    second = _ingest(store, FIXTURES)
    assert second.events == second.sessions == second.quarantined == 0
    assert second.changes["unchanged"] == first.files_seen
    assert _events(store) == before and _parts(store) == parts


def _strip(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "source_path"} for r in rows]


@pytest.mark.parametrize("fmt", SESSIONS)
def test_growing_file_reads_only_new_complete_lines(tmp_path, fmt):
    session = SESSIONS[fmt]
    live = tmp_path / "live" / session.name
    live.parent.mkdir()
    data = session.read_bytes()
    cuts = [len(data) // 5, len(data) // 2, len(data) - 7, len(data)]  # most cuts fall inside a line
    store = tmp_path / "store"
    seen = 0
    for cut in cuts:
        live.write_bytes(data[:cut])
        summary = _ingest(store, live.parent)
        assert summary.quarantined == 0
        complete = data[:cut].count(b"\n")
        assert query(store, "SELECT max(line_no) AS n FROM events")[0]["n"] in (complete, complete + 1)
        seen += summary.events
    _ingest(tmp_path / "clean", session)
    clean = _events(tmp_path / "clean")
    grown = _events(store)
    assert len(grown) == len(clean)
    # a Claude Code file cut before its first answer is read again whole (its session row is still open)
    assert seen == len(grown) if fmt == "codex" else seen >= len(grown)
    assert _strip(grown) == _strip(clean)
    sessions = f"SELECT {COLUMNS} FROM sessions ORDER BY session_id"
    assert _strip(query(store, sessions)) == _strip(query(tmp_path / "clean", sessions))


@pytest.mark.parametrize("fmt", REWRITES)
def test_rewritten_file_replaces_its_rows(tmp_path, fmt):
    first, then, version = REWRITES[fmt]
    path = tmp_path / "in" / first.name
    path.parent.mkdir()
    shutil.copy(first, path)
    store = tmp_path / "store"
    _ingest(store, path.parent)
    other = then.read_bytes()
    path.write_bytes(other)  # same name, different content: a changed prefix
    summary = _ingest(store, path.parent)
    assert summary.changes["rewritten"] == 1
    assert query(store, "SELECT cli_version FROM sessions") == [{"cli_version": version}]
    assert len(_events(store)) == other.count(b"\n") + query(
        store, "SELECT count(*) AS n FROM events WHERE raw IS NULL")[0]["n"]
    assert len(_parts(store)) == 2  # the superseded parts were deleted (events, sessions)


def _corpus(root: Path, copies: int) -> Path:
    corpus = root / "corpus"
    for i in range(copies):
        shutil.copytree(FIXTURES, corpus / f"c{i:03d}")
    return corpus


def test_kill_9_then_rerun_equals_a_clean_run(tmp_path):
    corpus = _corpus(tmp_path, 12)
    clean = tmp_path / "clean"
    _ingest(clean, corpus)
    expected = _events(clean), query(clean, f"SELECT {COLUMNS} FROM sessions ORDER BY source_path, session_id")
    store = tmp_path / "store"
    store.mkdir()  # the clean run's key: the same pseudonyms
    shutil.copy(clean / "redaction.json", store)
    cmd = [sys.executable, "-m", "logmine", "ingest", str(corpus), "--store", str(store), "--batch-mb", "1", "-q"]
    left = []  # the killed runs' forkservers and workers
    for delay in (0.5, 1.0, 1.5, 2.0, 3.0):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        left += _descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 15
    while [pid for pid in left if _running(pid)] and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [pid for pid in left if _running(pid)]
    assert left and not survivors, [_describe(pid) for pid in survivors]  # none outlives its ingest
    rerun = subprocess.run(cmd, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert {"g2", "claude"} <= {r["format"] for r in expected[1]}  # both tools' files
    got = _events(store), query(store, f"SELECT {COLUMNS} FROM sessions ORDER BY source_path, session_id")
    assert got == expected
    assert not [p for p in store.rglob("*.tmp")]
    registered = {r["path"] for r in query(store, "SELECT path FROM parts")}
    assert set(_parts(store)) == registered  # no orphan part left behind


def _descendants(root: int) -> list[int]:
    """The pids of ``root``'s children, their children, and so on (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        try:
            children.setdefault(_stat(int(entry.name))[1], []).append(int(entry.name))
        except (ValueError, OSError):
            continue
    found, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _running(pid: int) -> bool:
    try:
        return _stat(pid)[0] != "Z"
    except OSError:
        return False


def _describe(pid: int) -> str:
    """What a process is (for a failure message): pid, state, parent and command line."""
    try:
        state, parent = _stat(pid)
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return f"{pid}: gone"
    return f"{pid}: state {state}, parent {parent}: {command}"


def _stat(pid: int) -> tuple[str, int]:
    """(state, parent pid) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def test_the_views_a_batched_ingest_leaves_in_the_catalog_show_every_batch(tmp_path):
    """Batches but the last leave the views alone; the last makes them, so the catalog's own views
    (read here by DuckDB alone, not through a store open that would rebuild them) hold every row."""
    import duckdb

    store = tmp_path / "store"
    summary = ingest(IngestConfig(paths=(FIXTURES,), store=store, batch_bytes=1, jobs=1))
    assert summary.events > 0 and summary.files_seen > 2
    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True)
    try:
        (events,) = con.execute("SELECT count(*) FROM events").fetchone()
        (files,) = con.execute("SELECT count(DISTINCT source_path) FROM events").fetchone()
    finally:
        con.close()
    assert events == summary.events
    assert files == len({r["source_path"] for r in query(store, "SELECT source_path FROM events")})
