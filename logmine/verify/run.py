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
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from logmine.pipeline import load_pipeline
from logmine.sandbox import Limits
from logmine.segment.records import NoTasks, load_task, read_tasks
from logmine.store import CATALOG, DEFAULT_STORE, Store
from logmine.verify.records import VERIFICATIONS
from logmine.verify.task import TaskOutcome, VerifyOptions, verify_task

COMMIT_EVERY = 8

_TODO_SQL = """
SELECT t.* FROM tasks t LEFT JOIN verified v USING (task_id)
WHERE t.n_candidates > 0 AND (v.task_id IS NULL OR v.seg_gen <> t.seg_gen)
ORDER BY t.source_path, t.index
"""
_DEFAULTS = load_pipeline()["verify"]  # the packaged pipeline's [verify] values are the defaults


class NothingToVerify(NoTasks):
    """The store has no segmented tasks (or there is no store)."""


@dataclass(frozen=True, slots=True)
class VerifyConfig:
    store: Path = DEFAULT_STORE
    repo_map: tuple[tuple[str, str], ...] = tuple(_DEFAULTS["repo_map"].items())  # (old prefix, new prefix)
    jobs: int = _DEFAULTS["jobs"]
    backend: str = _DEFAULTS["backend"]
    timeout_s: float = _DEFAULTS["timeout_s"]  # per command, replayed or grading

    @classmethod
    def from_settings(cls, settings: dict, store: Path = DEFAULT_STORE,
                      repo_map: dict[str, str] | None = None) -> VerifyConfig:
        """From a pipeline's ``[verify]`` settings (``repo_map`` replaces theirs when given)."""
        mapping = settings["repo_map"] if repo_map is None else repo_map
        return cls(store=store, repo_map=tuple(mapping.items()), jobs=settings["jobs"], backend=settings["backend"],
                   timeout_s=settings["timeout_s"])


@dataclass
class VerifySummary:
    tasks: int = 0
    rebuilt: int = 0
    not_rebuilt: Counter = field(default_factory=Counter)  # by reason
    statuses: Counter = field(default_factory=Counter)  # (kind, status) -> candidates
    reasons: Counter = field(default_factory=Counter)  # status_reason of non-validated candidates
    elapsed_s: float = 0.0


def verify(config: VerifyConfig, progress: Callable[[int, int], None] | None = None, *,
           store: Store | None = None) -> VerifySummary:
    """Verify the tasks not verified yet for their current segmentation; raises :class:`NothingToVerify`
    when there are no tasks. ``store``: an already-open store, else ``config.store`` is opened."""
    started = time.monotonic()
    if store is None and not (config.store / CATALOG).exists():
        raise NothingToVerify(f"no logmine store at {config.store}", "run `logmine ingest` and `logmine segment` first")
    options = VerifyOptions(dict(config.repo_map), config.backend, Limits(wall_s=config.timeout_s))
    summary = VerifySummary()
    with nullcontext(store) if store is not None else Store(config.store) as store:
        if not store.con.execute("SELECT count(*) FROM tasks").fetchone()[0]:
            raise NothingToVerify.in_store(store.root)
        calls: dict[str, dict] = {}
        items = [load_task(store, task, calls) for task in read_tasks(store, _TODO_SQL)]
        summary.tasks = len(items)
        kinds = {c.verifier_id: c.kind for item in items for c in item.candidates}
        seg_gens = {item.task.task_id: item.task.seg_gen for item in items}
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
