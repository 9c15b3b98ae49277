"""The verify stage: verify every task whose current candidates have not been verified yet.

Resumable: results are committed every few tasks, and a task counts as done once its current
segmentation (``seg_gen``) has a row in ``verified``. Tasks run in parallel (``jobs`` threads; the
work happens in sandbox processes).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from logmine.errors import LogmineError
from logmine.executor import ExecutorConfig, Placement, make_executor
from logmine.pipeline import packaged_default
from logmine.sandbox import Limits, backend_unavailable
from logmine.segment.chain import with_earlier
from logmine.segment.records import NoTasks, load_task, read_tasks
from logmine.store import CATALOG, DEFAULT_STORE, Store
from logmine.verify.environment import modes_to_try
from logmine.verify.records import ENVIRONMENTS, VERIFICATIONS
from logmine.verify.task import TaskOutcome, VerifyOptions, failed, verify_task

COMMIT_EVERY = 8

# not verified for its current segmentation; or not rebuilt / unscored by inputs that have changed
# since (repository mapping, search roots, environment mode, backend); or holding a status to redo
_TODO_SQL = """
SELECT t.* FROM tasks t LEFT JOIN verified v USING (task_id)
WHERE t.n_candidates > 0 AND (v.task_id IS NULL OR v.seg_gen <> t.seg_gen
    OR (v.inputs IS DISTINCT FROM $inputs AND (NOT v.rebuilt OR t.task_id IN (
        SELECT task_id FROM verifications WHERE status IN ('unscored', 'not_rebuilt'))))
    OR t.task_id IN (SELECT task_id FROM verifications WHERE status IN (SELECT unnest($redo::VARCHAR[]))))
ORDER BY t.source_path, t.index
"""
REDO_STATUSES = ("validated", "passes_at_start", "fails_after", "unscored", "not_rebuilt")


class VerifySettingsError(LogmineError, ValueError):
    """A verify setting that does not exist (an environment mode, a status to redo)."""


class NothingToVerify(NoTasks):
    """The store has no segmented tasks (or there is no store)."""


def verify_fields(settings: dict) -> dict:
    """:class:`VerifyConfig` fields from a pipeline's ``[verify]`` settings (export tmax reads the
    repository ones too)."""
    return {"repo_map": tuple(settings["repo_map"].items()), "jobs": settings["jobs"], "backend": settings["backend"],
            "timeout_s": float(settings["timeout_s"]), "env_mode": settings["env_mode"],
            "repo_search": tuple(Path(p) for p in settings["repo_search"]), "plain_dirs": settings["plain_dirs"]}


_default = functools.partial(packaged_default, verify_fields, ("verify",))


@dataclass(frozen=True, slots=True)
class VerifyConfig:
    store: Path = DEFAULT_STORE
    repo_map: tuple[tuple[str, str], ...] = _default("repo_map")  # (old prefix, new prefix)
    jobs: int = _default("jobs")
    backend: str = _default("backend")
    timeout_s: float = _default("timeout_s")  # per command, replayed or grading
    env_mode: str = _default("env_mode")  # auto | host | built | none (docs/environments.md)
    repo_search: tuple[Path, ...] = _default("repo_search")  # roots holding clones
    redo: tuple[str, ...] = ()  # statuses whose tasks are verified again whatever decided them
    plain_dirs: bool = _default("plain_dirs")  # copy working directories that are not git repositories
    executor: ExecutorConfig = ExecutorConfig()  # local threads (``jobs``), or a Ray cluster

    def __post_init__(self):
        try:
            modes_to_try(self.env_mode, self.backend)
        except ValueError as exc:
            raise VerifySettingsError(str(exc)) from None
        unknown = sorted(set(self.redo) - set(REDO_STATUSES))
        if unknown:
            raise VerifySettingsError(f"unknown status to redo: {', '.join(unknown)}",
                                      f"expected some of {', '.join(REDO_STATUSES)}")

    @property
    def inputs(self) -> str:
        """A fingerprint of what decides whether a task can be rebuilt and scored: a change retries
        the tasks it left not_rebuilt or unscored."""
        decided = [sorted(self.repo_map), sorted(str(p) for p in self.repo_search), self.env_mode, self.backend]
        if self.plain_dirs:  # (absent when off, so that stores verified before the setting keep their inputs)
            decided.append("plain_dirs")
        return hashlib.sha256(json.dumps(decided).encode()).hexdigest()[:16]

    @classmethod
    def from_settings(cls, settings: dict, **fields) -> VerifyConfig:
        """From a pipeline's ``[verify]`` settings; ``fields`` (the flags given, the run's store) win."""
        return cls(**{**verify_fields(settings), **fields})


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
    options = VerifyOptions(dict(config.repo_map), config.backend, Limits(wall_s=config.timeout_s),
                            config.env_mode, tuple(config.repo_search), config.plain_dirs)
    summary = VerifySummary()
    with nullcontext(store) if store is not None else Store(config.store) as store:
        if not store.con.execute("SELECT count(*) FROM tasks").fetchone()[0]:
            raise NothingToVerify.in_store(store.root)
        options = dataclasses.replace(options, mask=store.mask)  # the start trees hold the log's pseudonyms
        calls: dict[str, dict] = {}
        todo = read_tasks(store, _TODO_SQL, {"inputs": config.inputs, "redo": list(config.redo)})
        chains: dict = {}  # earlier sessions' edits per session file (logmine.segment.chain)
        items = [with_earlier(store, load_task(store, task, calls), chains, calls) for task in todo]
        summary.tasks = len(items)
        kinds = {c.verifier_id: c.kind for item in items for c in item.candidates}
        seg_gens = {item.task.task_id: item.task.seg_gen for item in items}
        pending: list[tuple[TaskOutcome, int, Placement | None]] = []
        executor = make_executor(config.executor, default_jobs=max(1, config.jobs))
        try:
            if items:
                executor.check_nodes(functools.partial(backend_unavailable, config.backend))
            for count, done in enumerate(executor.map(functools.partial(_verify_unit, options), items), 1):
                # a unit that raised (a worker lost on a cluster): that task's unscored, not the run's end
                outcome = done.result if done.error is None else failed(items[done.index], done.error, rebuilt=False)
                pending.append((outcome, seg_gens[outcome.task_id], done.placement))
                _account(summary, outcome, kinds)
                if len(pending) >= COMMIT_EVERY:
                    _commit(store, pending, config.inputs)
                if progress:
                    progress(count, len(items))
        finally:
            executor.close()
        _commit(store, pending, config.inputs)
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


def _verify_unit(options: VerifyOptions, item) -> TaskOutcome:
    """One unit of work for the executor (a module-level function, so Ray can ship it by name)."""
    return verify_task(item, options)


def _commit(store: Store, pending: list[tuple[TaskOutcome, int, Placement | None]], inputs: str) -> None:
    if not pending:
        return
    rows, environments, state = [], [], []
    for outcome, seg_gen, placement in pending:
        gen = store.new_gen()
        where = {"node": placement.node, "worker": placement.worker} if placement else {}
        rows += [{**row, **where, "verify_gen": gen} for row in outcome.rows]
        if outcome.environment is not None:
            environments.append({**outcome.environment, "verify_gen": gen})
        state.append((outcome.task_id, seg_gen, gen, outcome.rebuilt, outcome.reason, inputs))
    store.commit({"verifications": pa.Table.from_pylist(rows, schema=VERIFICATIONS),
                  "environments": pa.Table.from_pylist(environments, schema=ENVIRONMENTS)}, {"verified": state})
    pending.clear()
