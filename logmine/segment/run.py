"""The segment stage: cut every changed session of the store into tasks with verifier candidates.

Incremental: a session file is (re)segmented only when its ingested state (generation, bytes read)
differs from the one its tasks were cut from; its old tasks are replaced in the same commit.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa

from logmine.errors import LogmineError
from logmine.ingest.records import GHOST_SNAPSHOT, Event
from logmine.pipeline import load_pipeline
from logmine.segment.branches import read_lines
from logmine.segment.commands import CommandClassifier
from logmine.segment.records import TASKS, VERIFIERS, Task
from logmine.segment.session import SessionResult, segment_session
from logmine.segment.tasks import FollowupRules
from logmine.store import CATALOG, DEFAULT_STORE, Store, fetch_dicts

BATCH_FILES = 200

_TODO_SQL = """
SELECT f.source_path, f.file_gen, f.consumed FROM files f LEFT JOIN segmented s USING (source_path)
WHERE f.error IS NULL AND f.format IN ('g0', 'g1', 'g2', 'claude')
  AND (s.source_path IS NULL OR s.file_gen <> f.file_gen OR s.consumed <> f.consumed)
ORDER BY f.source_path
"""
# Segment reads only patch events' arguments (their file operations). A part written before the
# ghost_commit column existed reads it as NULL: its ghost snapshots bring their raw line (Event.from_row).
_EVENTS_SQL = f"""
SELECT source_path, seq, line_no, ts, kind, record_type, text, call_id, command, workdir, is_injected, injected_kind,
       copied_from, CASE WHEN kind = 'patch' THEN arguments END AS arguments, ghost_commit, ghost_untracked,
       CASE WHEN record_type = '{GHOST_SNAPSHOT}' AND ghost_commit IS NULL THEN raw END AS raw
FROM events WHERE source_path IN (SELECT unnest(?)) ORDER BY source_path, seq
"""
_CALLS_SQL = """
SELECT source_path, call_id, exit_code, failed, left(output, 64) AS output FROM tool_calls
WHERE source_path IN (SELECT unnest(?)) AND call_id IS NOT NULL
"""


class NothingToSegment(LogmineError, RuntimeError):
    """The store holds no ingested sessions."""


@dataclass(frozen=True, slots=True)
class SegmentConfig:
    store: Path = DEFAULT_STORE
    pipeline: Path | None = None  # overrides of logmine/pipelines/codex-default.toml [segment]
    settings: dict | None = None  # the [segment] settings, already loaded (``pipeline`` is then not read)

    def segment_settings(self) -> dict:
        """The ``[segment]`` settings: as given, else read from the pipeline (the default's values)."""
        return self.settings if self.settings is not None else load_pipeline(self.pipeline)["segment"]


@dataclass
class SegmentSummary:
    sessions_seen: int = 0
    sessions_segmented: int = 0
    tasks: int = 0
    no_task_reasons: Counter = field(default_factory=Counter)  # sessions without a task, by reason
    candidates: Counter = field(default_factory=Counter)  # by kind
    fail_to_pass: int = 0
    without_candidate: Counter = field(default_factory=Counter)  # tasks without any candidate, by reason
    not_rebuildable: int = 0
    off_branch: Counter = field(default_factory=Counter)  # Claude Code: sessions, lines, requests, tool_calls off the active branch
    elapsed_s: float = 0.0


def segment(config: SegmentConfig, progress: Callable[[int, int], None] | None = None, *,
            store: Store | None = None) -> SegmentSummary:
    """Segment the store's changed sessions; returns what this run did.

    ``store``: an already-open store (``logmine run`` opens it once); else ``config.store`` is opened.
    """
    started = time.monotonic()
    settings = config.segment_settings()
    rules, classifier = FollowupRules(settings), CommandClassifier(settings)
    if store is None and not (config.store / CATALOG).exists():
        raise NothingToSegment(f"no logmine store at {config.store}")
    summary = SegmentSummary()
    with nullcontext(store) if store is not None else Store(config.store) as store:
        con = store.con
        summary.sessions_seen = con.execute("SELECT count(*) FROM files WHERE format IN ('g0','g1','g2','claude')").fetchone()[0]
        if not summary.sessions_seen:
            raise NothingToSegment(f"no ingested sessions in {store.root}")
        todo = con.execute(_TODO_SQL).fetchall()
        for start in range(0, len(todo), BATCH_FILES):
            batch = todo[start:start + BATCH_FILES]
            _segment_batch(store, batch, rules, classifier, summary)
            if progress:
                progress(min(start + BATCH_FILES, len(todo)), len(todo))
    summary.elapsed_s = time.monotonic() - started
    return summary


def _segment_batch(store: Store, batch: list[tuple], rules: FollowupRules, classifier: CommandClassifier,
                   summary: SegmentSummary) -> None:
    con = store.con
    paths = [path for path, _, _ in batch]
    sessions = fetch_dicts(con.execute("SELECT * FROM _sessions_raw WHERE source_path IN (SELECT unnest(?))", [paths]))
    by_path = {s["source_path"]: s for s in sessions}
    events: dict[str, list[Event]] = {p: [] for p in paths}
    for row in fetch_dicts(con.execute(_EVENTS_SQL, [paths])):
        events[row["source_path"]].append(Event.from_row(row))
    calls: dict[str, dict[str, dict]] = {p: {} for p in paths}
    for call in fetch_dicts(con.execute(_CALLS_SQL, [paths])):
        calls[call.pop("source_path")][call["call_id"]] = call
    lines = read_lines(con, paths)  # Claude Code files' uuid trees: their abandoned branches are no task's
    tasks, verifiers, state = [], [], []
    for path, file_gen, consumed in batch:
        seg_gen = store.new_gen()
        session = by_path.get(path) or {"session_id": None, "source_path": path}
        result = segment_session(session, events[path], calls[path], rules, classifier, lines.get(path, ()))
        tasks += [replace(task, seg_gen=seg_gen).to_row() for task in result.tasks]
        verifiers += [replace(candidate, seg_gen=seg_gen).to_row() for candidate in result.verifiers]
        state.append((path, file_gen, consumed, seg_gen, len(result.tasks), result.no_task_reason))
        _account(summary, result)
    store.commit({"tasks": pa.Table.from_pylist(tasks, schema=TASKS),
                  "verifiers": pa.Table.from_pylist(verifiers, schema=VERIFIERS)}, {"segmented": state})


def _account(summary: SegmentSummary, result: SessionResult) -> None:
    summary.sessions_segmented += 1
    if result.no_task_reason:
        summary.no_task_reasons[result.no_task_reason.split(" of ")[0]] += 1
    summary.tasks += len(result.tasks)
    summary.candidates.update(v.kind for v in result.verifiers)
    summary.fail_to_pass += sum(bool(v.fail_to_pass) for v in result.verifiers)
    summary.not_rebuildable += sum(not t.rebuildable for t in result.tasks)
    if result.off_branch.lines:
        off = result.off_branch
        summary.off_branch.update(sessions=1, lines=off.lines, requests=off.requests, tool_calls=off.tool_calls)
    for task in result.tasks:
        if not task.n_candidates:
            summary.without_candidate[_why_no_candidate(task)] += 1


def _why_no_candidate(task: Task) -> str:
    if not task.n_tool_calls:
        return "no tool call"
    if task.aborted:
        return "aborted before any edit or test"
    return "no patch edit and no test or check command"
