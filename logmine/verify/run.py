"""The verify stage: verify every task whose current candidates have not been verified yet.

Resumable: results are committed every few tasks, and a task counts as done once its current
segmentation (``seg_gen``) has a row in ``verified``. Tasks run in parallel (``jobs`` threads; the
work happens in sandbox processes).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa

from logmine.errors import LogmineError
from logmine.patch import FileOp
from logmine.sandbox import Limits
from logmine.segment.session import patch_applied
from logmine.store import CATALOG, DEFAULT_STORE, Store, fetch_dicts
from logmine.verify.records import VERIFICATIONS
from logmine.verify.task import TaskInput, TaskOutcome, VerifyOptions, verify_task

COMMIT_EVERY = 8

_TODO_SQL = """
SELECT t.* FROM tasks t LEFT JOIN verified v USING (task_id)
WHERE t.n_candidates > 0 AND (v.task_id IS NULL OR v.seg_gen <> t.seg_gen)
ORDER BY t.source_path, t.index
"""
_ACTIONS_SQL = """
SELECT e.seq, e.kind, e.tool_name, e.call_id, e.command, e.workdir, e.arguments
FROM events e WHERE e.source_path = ? AND e.seq BETWEEN ? AND ? AND e.kind IN ('tool_call', 'patch')
ORDER BY e.seq
"""
_CALLS_SQL = "SELECT call_id, exit_code, left(output, 64) AS output FROM tool_calls WHERE source_path = ?"


class NothingToVerify(LogmineError, RuntimeError):
    """The store has no segmented tasks."""


@dataclass(frozen=True, slots=True)
class VerifyConfig:
    store: Path = DEFAULT_STORE
    repo_map: tuple[tuple[str, str], ...] = ()  # (old prefix, new prefix)
    jobs: int = 2
    backend: str = "bwrap"
    timeout_s: float = 120.0  # per command, replayed or grading


@dataclass
class VerifySummary:
    tasks: int = 0
    rebuilt: int = 0
    not_rebuilt: Counter = field(default_factory=Counter)  # by reason
    statuses: Counter = field(default_factory=Counter)  # (kind, status) -> candidates
    reasons: Counter = field(default_factory=Counter)  # status_reason of non-validated candidates
    elapsed_s: float = 0.0


def verify(config: VerifyConfig, progress: Callable[[int, int], None] | None = None) -> VerifySummary:
    started = time.monotonic()
    if not (config.store / CATALOG).exists():
        raise NothingToVerify(f"no logmine store at {config.store}")
    options = VerifyOptions(dict(config.repo_map), config.backend, Limits(wall_s=config.timeout_s))
    summary = VerifySummary()
    with Store(config.store) as store:
        if not store.con.execute("SELECT count(*) FROM tasks").fetchone()[0]:
            raise NothingToVerify(f"no tasks in {config.store}")
        calls: dict[str, dict] = {}
        items = [load_task(store, task, calls) for task in fetch_dicts(store.con.execute(_TODO_SQL))]
        summary.tasks = len(items)
        kinds = {c["verifier_id"]: c["kind"] for item in items for c in item.candidates}
        seg_gens = {item.task["task_id"]: item.task["seg_gen"] for item in items}
        pending: list[tuple[TaskOutcome, int]] = []
        with ThreadPoolExecutor(max_workers=max(1, config.jobs)) as pool:
            for done, outcome in enumerate(pool.map(lambda i: verify_task(i, options), items), 1):
                pending.append((outcome, seg_gens[outcome.task_id]))
                _account(summary, outcome, kinds)
                if len(pending) >= COMMIT_EVERY:
                    _commit(store, pending)
                if progress:
                    progress(done, len(items))
        _commit(store, pending)
    summary.elapsed_s = time.monotonic() - started
    return summary


def load_task(store: Store, task: dict, calls_by_file: dict[str, dict] | None = None) -> TaskInput:
    """A task with its candidates, replayable actions and the earlier patches its start state needs.

    ``calls_by_file`` caches each session file's tool calls across the tasks of one run.
    """
    con = store.con
    candidates = fetch_dicts(con.execute("SELECT * FROM _verifiers_raw WHERE task_id = ? AND seg_gen = ?",
                                         [task["task_id"], task["seg_gen"]]))
    cache = {} if calls_by_file is None else calls_by_file
    if task["source_path"] not in cache:
        cache[task["source_path"]] = {c["call_id"]: c for c in fetch_dicts(con.execute(_CALLS_SQL, [task["source_path"]]))}
    calls = cache[task["source_path"]]
    state = orjson.loads(task["start_state"])
    prior = [p["call_id"] for p in state.get("prior_patches", [])]
    prior_ops = []
    if prior:
        rows = fetch_dicts(con.execute("SELECT call_id, arguments FROM events WHERE source_path = ? AND kind = 'patch' "
                                 "AND call_id IN (SELECT unnest(?)) ORDER BY seq", [task["source_path"], prior]))
        by_call: dict[str, list[FileOp]] = {}
        for row in rows:
            by_call.setdefault(row["call_id"], []).append(FileOp.from_dict(orjson.loads(row["arguments"])))
        prior_ops = [by_call[c] for c in prior if c in by_call]
    events = fetch_dicts(con.execute(_ACTIONS_SQL, [task["source_path"], task["first_seq"], task["last_seq"]]))
    patched = {e["call_id"] for e in events if e["kind"] == "patch"}
    actions: list[dict] = []
    for event in events:
        if event["kind"] == "patch":
            if not patch_applied(calls.get(event["call_id"])):
                continue
            op = FileOp.from_dict(orjson.loads(event["arguments"]))
            if actions and actions[-1]["kind"] == "patch" and actions[-1]["call_id"] == event["call_id"]:
                actions[-1]["ops"].append(op)
            else:
                actions.append({"seq": event["seq"], "kind": "patch", "call_id": event["call_id"], "ops": [op],
                                "workdir": None, "command": None})
        elif event["command"] and event["call_id"] not in patched and event["tool_name"] != "write_stdin":
            actions.append({"seq": event["seq"], "kind": "command", "call_id": event["call_id"],
                            "command": event["command"], "workdir": event["workdir"], "ops": None})
    return TaskInput(task, candidates, actions, prior_ops)


def _account(summary: VerifySummary, outcome: TaskOutcome, kinds: dict[str, str]) -> None:
    if outcome.rebuilt:
        summary.rebuilt += 1
    else:
        summary.not_rebuilt[(outcome.reason or "").split(" (")[0]] += 1
    for row in outcome.rows:
        summary.statuses[(kinds[row["verifier_id"]], row["status"])] += 1
        if row["status"] != "validated":
            summary.reasons[row["status"]] += 1


def _commit(store: Store, pending: list[tuple[TaskOutcome, int]]) -> None:
    if not pending:
        return
    rows, state = [], []
    for outcome, seg_gen in pending:
        gen = store.new_gen()
        rows += [{**row, "verify_gen": gen} for row in outcome.rows]
        state.append((outcome.task_id, seg_gen, gen, outcome.rebuilt, outcome.reason))
    store.commit({"verifications": pa.Table.from_pylist(rows, schema=VERIFICATIONS)}, {"verified": state})
    pending.clear()
