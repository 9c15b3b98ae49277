"""Canonical records of the segment stage, typed: tasks, their start-state recipes and verifier candidates.

The stored tables stay flat (:mod:`logmine.store.tables`): JSON-valued columns (``start_state``,
``runs``, ``files``, ``followups``) hold JSON text so any Parquet reader can read them. This module
is the one place that encodes and decodes them: :meth:`Task.from_row` / :meth:`Task.to_row` and
:meth:`Candidate.from_row` / :meth:`Candidate.to_row`. verify, ``export sft`` and ``export tmax``
read tasks through :func:`read_tasks` (and :func:`load_task`) and work on these records. The events
segment reads (and :func:`load_task` reads back) are ingest's :class:`~logmine.ingest.records.Event`
records, which decode ``events.arguments``. The JSON shapes are documented in
``schemas/tasks.schema.json``, ``schemas/verifiers.schema.json`` and ``docs/segment.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path

import orjson

from logmine.errors import LogmineError
from logmine.ingest.records import Event
from logmine.patch import FileOp
from logmine.segment.branches import BRANCH, off_branch, read_lines
from logmine.segment.powershell import on_posix
from logmine.store import Store, fetch_dicts
from logmine.store.tables import TASKS, VERIFIERS  # noqa: F401 - this stage's tables

VERIFIER_KINDS = ("test_command", "check_command", "file_diff")
TMAX_KINDS = ("test_pass", "exact_text", "metric_threshold")
_PATCH_SUCCESS = ("Success", "Done!")


class NoTasks(LogmineError, RuntimeError):
    """A stage that reads tasks (verify, export) ran before there were any: segment first.

    Each such stage raises its own subclass (also its own error type) made by :meth:`in_store`.
    """

    @classmethod
    def in_store(cls, store: Path) -> NoTasks:
        return cls(f"no tasks in {store}", "run `logmine segment` first")


def _json(value) -> str:
    return orjson.dumps(value).decode()


# -- the start state -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Repo:
    """Where the session worked, as its metadata recorded it."""

    cwd: str | None = None
    git_repo_url: str | None = None
    git_commit: str | None = None
    git_branch: str | None = None


@dataclass(frozen=True, slots=True)
class PriorPatch:
    """Earlier work of the session redone onto the commit: a successful apply_patch call, or (when
    ``command`` is set) a shell command that edited files, re-run in its ``workdir``."""

    task_index: int
    seq: int
    call_id: str | None
    command: str | None = None
    workdir: str | None = None


@dataclass(frozen=True, slots=True)
class StartState:
    """How to rebuild the workspace as a task began (``tasks.start_state``, decoded)."""

    repo: Repo = Repo()
    ghost_commit: str | None = None  # Codex's snapshot commit of the turn, when it took one
    prior_patches: tuple[PriorPatch, ...] = ()
    method: str | None = None  # ghost_snapshot | git_commit+patches | git_commit+edits | dated_commit | None (not rebuildable)
    untracked: tuple[str, ...] = ()  # files untracked in the work tree at the session's start (its first snapshot)
    session_started: str | None = None  # ISO time; with no commit recorded, the start is the newest commit before it

    @property
    def commit(self) -> str | None:
        """The commit to start from: the turn's snapshot, else the session's recorded commit."""
        return self.ghost_commit or self.repo.git_commit

    @classmethod
    def from_row(cls, row: dict) -> StartState:
        """From the decoded JSON object of ``tasks.start_state``."""
        return cls(Repo(**(row.get("repo") or {})), row.get("ghost_commit"),
                   tuple(PriorPatch(**p) for p in row.get("prior_patches") or ()), row.get("method"),
                   tuple(row.get("untracked") or ()), row.get("session_started"))

    def prior_row(self) -> list[dict]:
        """``prior_patches`` as stored: a shell edit's ``command``/``workdir`` only where set."""
        return [{k: v for k, v in asdict(p).items() if v is not None or k == "call_id"} for p in self.prior_patches]

    def to_row(self) -> dict:
        """The JSON object stored (as text) in ``tasks.start_state``."""
        return {"repo": asdict(self.repo), "ghost_commit": self.ghost_commit,
                "prior_patches": self.prior_row(), "method": self.method,
                **({"untracked": list(self.untracked)} if self.untracked else {}),
                **({"session_started": self.session_started} if self.session_started else {})}


# -- tasks -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Task:
    """One row of ``tasks``: a genuine user request and the work it caused."""

    task_id: str
    session_id: str | None
    source_path: str
    index: int  # 0-based position of the task in its session
    prompt: str
    first_seq: int
    last_seq: int
    start_state: StartState
    rebuildable: bool
    followups: tuple[str, ...] = ()  # follow-up messages folded into the task
    n_tool_calls: int = 0
    n_failed_commands: int = 0
    files_touched: tuple[str, ...] = ()
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration_s: float | None = None
    aborted: bool = False
    final_message: str | None = None
    has_final_message: bool = False
    cwd: str | None = None
    start_state_reason: str | None = None  # why not rebuildable, when it is not
    n_candidates: int = 0
    seg_gen: int | None = None  # set when the segmentation is committed

    @classmethod
    def from_row(cls, row: dict) -> Task:
        """From a ``tasks`` row (columns beyond the table's, as a query may add, are ignored)."""
        values = {f.name: row[f.name] for f in fields(cls) if f.name in row}
        values["start_state"] = StartState.from_row(orjson.loads(row["start_state"]))
        values["followups"] = tuple(orjson.loads(row["followups"])) if row.get("followups") else ()
        values["files_touched"] = tuple(row.get("files_touched") or ())
        return cls(**values)

    def to_row(self) -> dict:
        """The ``tasks`` row, JSON columns encoded."""
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        row["start_state"] = _json(self.start_state.to_row())
        row["followups"] = _json(list(self.followups)) if self.followups else None
        row["files_touched"] = list(self.files_touched)
        return row


# -- verifier candidates ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a candidate's command in the session.

    ``failed``: True when it exited non-zero or its output says it failed without a code (a sandbox
    denial, a time-out, an execution error), False when it exited 0, None when the outcome is unknown
    (no output, a process never seen to exit, a command refused before it ran). Runs stored before the
    field existed read it from their exit code.
    """

    seq: int
    exit_code: int | None
    failed: bool | None = None

    def __post_init__(self) -> None:
        if self.failed is None and self.exit_code is not None:
            object.__setattr__(self, "failed", self.exit_code != 0)


@dataclass(frozen=True, slots=True)
class FileDiff:
    """A file's net change over a task (a ``file_diff`` candidate's ``files`` entry)."""

    path: str
    op: str  # add | update | delete
    move_from: str | None = None
    content: str | None = None  # end-of-task text when the log holds it
    added: tuple[str, ...] = ()  # lines added (net), sorted
    removed: tuple[str, ...] = ()  # lines removed (net), sorted

    def to_dict(self) -> dict:
        return {"path": self.path, "op": self.op, "move_from": self.move_from, "content": self.content,
                "added": list(self.added), "removed": list(self.removed)}


@dataclass(frozen=True, slots=True)
class HiddenTest:
    """A test file the task changed (a ``test_command`` candidate's ``files`` entry): graded with
    its end-of-task content, which is None when the log does not hold it."""

    path: str
    content: str | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One row of ``verifiers``: a verifier candidate of a task (see :mod:`logmine.segment.verifiers`).

    The ``files`` column decodes into ``diffs`` (``file_diff``) or ``hidden_tests`` (``test_command``).
    """

    verifier_id: str
    task_id: str
    session_id: str | None
    kind: str  # test_command | check_command | file_diff
    strength: float
    tmax_kind: str
    mode: str | None = None  # file_diff: exact | hunks
    command: str | None = None  # command kinds: the command as last run
    workdir: str | None = None
    runs: tuple[Run, ...] | None = None  # command kinds, in order
    ran_after_last_edit: bool | None = None
    fail_to_pass: bool | None = None
    diffs: tuple[FileDiff, ...] = ()
    hidden_tests: tuple[HiddenTest, ...] = ()
    incomplete: bool = False
    seg_gen: int | None = None

    @classmethod
    def from_row(cls, row: dict) -> Candidate:
        """From a ``verifiers`` row (the view's verification columns are ignored)."""
        values = {f.name: row[f.name] for f in fields(cls) if f.name in row}
        if row["runs"] is not None:
            values["runs"] = tuple(Run(**r) for r in orjson.loads(row["runs"]))
        files = orjson.loads(row["files"]) if row["files"] else []
        if row["kind"] == "file_diff":
            values["diffs"] = tuple(FileDiff(**{**f, "added": tuple(f["added"]), "removed": tuple(f["removed"])})
                                    for f in files)
        else:
            values["hidden_tests"] = tuple(HiddenTest(**f) for f in files)
        return cls(**values)

    def to_row(self) -> dict:
        """The ``verifiers`` row, JSON columns encoded."""
        row = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("diffs", "hidden_tests")}
        row["runs"] = None if self.runs is None else _json([asdict(r) for r in self.runs])
        if self.kind == "file_diff":
            row["files"] = _json([d.to_dict() for d in self.diffs])
        else:
            row["files"] = _json([asdict(t) for t in self.hidden_tests]) if self.hidden_tests else None
        return row


# -- reading them back -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Action:
    """One replayable action of a task: a shell command, or a successful apply_patch call's ops."""

    seq: int
    kind: str  # command | patch
    call_id: str | None
    command: str | None = None
    workdir: str | None = None
    ops: tuple[FileOp, ...] = ()
    failed: bool | None = None  # a command: whether the session saw it fail (None: not recorded)
    ts: datetime | None = None  # when the session made it

    def failed_again(self, exit_code: int | None, error: str | None = None) -> bool:
        """Did this command fail at replay (``exit_code``, or a sandbox ``error``) where the session
        saw it succeed or did not record how it ended? A command that failed in the session and fails
        again replays consistently: it is no sign that the replay diverged."""
        return bool(error) or (exit_code != 0 and not self.failed)


@dataclass(frozen=True, slots=True)
class Chain:
    """The edits of earlier sessions at a session's commit in its cwd (:mod:`logmine.segment.chain`):
    what its start may hold beyond the commit when the author did not commit between sessions."""

    edits: tuple[Action, ...]
    sessions: tuple[str, ...]  # their ids, oldest first
    branch: str | None = None  # the branch the oldest of them recorded: where its replay starts
    commitless: bool = False  # sessions that recorded no commit: their edits make only a start from nothing


@dataclass(frozen=True, slots=True)
class Shown:
    """A file as the session's reads showed it whole before anything changed it: its text when the
    session began (:mod:`logmine.segment.shown`), or the ``git diff`` hunks that make it from a blob of
    the repository (``base``), the text checked to be blob ``after``."""

    path: str  # absolute: the path the reading command named, joined to the directory it ran in
    text: str
    seq: int  # the read that completed it
    before: int = -1  # the step (seq) before which the file held this text; -1: as the session began
    base: str = ""  # set when a ``git diff`` showed it: the blob id ``text`` (the hunks) applies to
    after: str = ""  # … and the blob id of the result (:mod:`logmine.segment.gitdiff`); ``path``: the diff's


@dataclass(frozen=True, slots=True)
class Listed:
    """A tracked file the session's own ``git status`` listed as changed in the work tree before the
    session could have changed it: the author's uncommitted work (:mod:`logmine.segment.status`)."""

    path: str  # absolute (joined to the directory the command ran in), or from the repository's top
    code: str  # the status's two letters: `` M``, ``D ``, ``R `` …
    seq: int  # the ``git status`` call
    from_top: bool = False  # ``--porcelain``: ``path`` is relative to the repository's top


@dataclass(frozen=True, slots=True)
class Listing:
    """A directory as the session's own ``ls`` showed it before the session could have changed
    anything: the names it held as the session began (:mod:`logmine.segment.listing`)."""

    path: str  # the directory, absolute
    names: tuple[str, ...]
    seq: int  # the ``ls`` call


@dataclass(frozen=True, slots=True)
class TaskInput:
    """A task with everything verify and export need to rebuild and replay it."""

    task: Task
    candidates: tuple[Candidate, ...]
    actions: tuple[Action, ...]
    prior: tuple[Action, ...]  # earlier tasks' patches and shell edits, redone onto the start commit
    chain: Chain | None = None  # earlier sessions' edits at the same commit in the same cwd
    # earlier sessions' patches (at other commits, same cwd) of the files untracked at this session's start
    carried: tuple[Action, ...] = ()
    shown: tuple[Shown, ...] = ()  # files as the session's reads showed them before its start or earlier work
    python: str | None = None  # the Python (``3.10``) the session's commands ran, as their outputs show it
    listed: tuple[Listed, ...] = ()  # tracked files ``git status`` showed changed as the session began
    began: tuple[Listing, ...] = ()  # directories as the session's ``ls`` showed them as it began


# With a Claude Code branch marker: a branch inside the task's span leaves its abandoned lines' actions out.
_ACTIONS_SQL = f"""
SELECT e.seq, e.ts, e.line_no, e.kind, e.record_type, e.tool_name, e.call_id, e.command, e.workdir, e.arguments
FROM events e WHERE e.source_path = ? AND e.seq BETWEEN ? AND ?
  AND (e.kind IN ('tool_call', 'patch') OR e.record_type = '{BRANCH}')
ORDER BY e.seq
"""
_PRIOR_SQL = """
SELECT seq, ts, kind, record_type, call_id, workdir, arguments FROM events WHERE source_path = ? AND kind = 'patch' AND call_id IN (SELECT unnest(?))
ORDER BY seq
"""
_CALLS_SQL = "SELECT call_id, exit_code, failed, left(output, 64) AS output FROM tool_calls WHERE source_path = ?"
_TS_SQL = "SELECT seq, ts FROM events WHERE source_path = ? AND seq IN (SELECT unnest(?))"
# where an output names the Python that ran: pytest's header, a traceback's or a venv's library path,
# `python --version`; each call counts once per version
_PYTHON_SQL = r"""
SELECT v, count(DISTINCT call_id) AS calls FROM (
  SELECT call_id, unnest(regexp_extract_all(output, '(?m)(?:platform \S+ -- Python |/python|^Python )(3\.\d+)', 1)) AS v
  FROM tool_calls WHERE source_path = ? AND output LIKE '%ython%')
GROUP BY v ORDER BY calls DESC, v DESC
"""


def read_tasks(store: Store, sql: str = "SELECT * FROM tasks ORDER BY source_path, index",
               params: list | dict | None = None) -> list[Task]:
    """The tasks a query over ``tasks`` returns (``SELECT t.* ...``), as records."""
    return [Task.from_row(row) for row in fetch_dicts(store.con.execute(sql, params or []))]


def read_candidates(store: Store, task: Task) -> tuple[Candidate, ...]:
    """The candidates of the task's current segmentation."""
    rows = fetch_dicts(store.con.execute("SELECT * FROM _verifiers_raw WHERE task_id = ? AND seg_gen = ?",
                                         [task.task_id, task.seg_gen]))
    return tuple(Candidate.from_row(row) for row in rows)


def load_task(store: Store, task: Task, calls_by_file: dict[str, dict] | None = None) -> TaskInput:
    """A task with its candidates, replayable actions and the earlier patches its start state needs.

    ``calls_by_file`` caches each session file's tool calls across the tasks of one run, and the
    Python they ran (:func:`session_python`, under the key ``PATH\0python``).
    Interactive ``write_stdin`` polls are not actions; a patch that did not apply is not either, nor
    are the actions of a Claude Code branch the session abandoned inside the task's span
    (:mod:`logmine.segment.branches`).
    """
    con, path = store.con, task.source_path
    cache = {} if calls_by_file is None else calls_by_file
    if path not in cache:
        cache[path] = {c["call_id"]: c for c in fetch_dicts(con.execute(_CALLS_SQL, [path]))}
    calls = cache[path]
    if f"{path}\0python" not in cache:
        cache[f"{path}\0python"] = {"version": session_python(store, path)}
    python = cache[f"{path}\0python"]["version"]
    prior = [p.call_id for p in task.start_state.prior_patches if p.command is None]
    by_call: dict[str, list[Event]] = {}
    if prior:
        for row in fetch_dicts(con.execute(_PRIOR_SQL, [path, prior])):
            by_call.setdefault(row["call_id"], []).append(Event.from_row(row))
    events = [Event.from_row(row) for row in fetch_dicts(con.execute(_ACTIONS_SQL, [path, task.first_seq,
                                                                                      task.last_seq]))]
    if any(e.record_type == BRANCH for e in events):  # segment cut the task from the active branch only
        off = off_branch(read_lines(con, [path]).get(path, ()))
        events = [e for e in events if e.record_type != BRANCH and e.line_no not in off]
    patched = {e.call_id for e in events if e.kind == "patch"}
    actions: list[Action] = []
    for event in events:
        if event.kind == "patch":
            if not patch_applied(calls.get(event.call_id) if event.call_id else None):
                continue
            if actions and actions[-1].kind == "patch" and actions[-1].call_id == event.call_id:
                last = actions.pop()
                actions.append(Action(last.seq, "patch", last.call_id,
                                      ops=(*last.ops, event.file_op), ts=last.ts))
            else:
                actions.append(Action(event.seq, "patch", event.call_id, workdir=event.workdir, ops=(event.file_op,),
                                      ts=event.ts))
        elif event.command and event.call_id not in patched and event.tool_name != "write_stdin":
            actions.append(Action(event.seq, "command", event.call_id, command=event.command,
                                  workdir=event.workdir, failed=_failed(calls, event.call_id), ts=event.ts))
    when = dict(con.execute(_TS_SQL, [path, [p.seq for p in task.start_state.prior_patches]]).fetchall()) \
        if task.start_state.prior_patches else {}
    return on_posix(TaskInput(task, read_candidates(store, task), tuple(actions),
                              tuple(_prior_action(p, by_call, calls, when.get(p.seq))
                                    for p in task.start_state.prior_patches if p.command is not None or p.call_id in by_call),
                              python=python))


def session_python(store: Store, path: str) -> str | None:
    """The Python version (``3.10``) the commands of the session in ``path`` ran, as their outputs
    name it (pytest's ``platform linux -- Python 3.10.12``, ``/usr/lib/python3.10/``, ``Python
    3.10.12``): the one most calls show, or None when none shows one."""
    found = store.con.execute(_PYTHON_SQL, [path]).fetchone()
    return found[0] if found else None


def _failed(calls: dict[str, dict], call_id: str | None) -> bool | None:
    call = calls.get(call_id) if call_id else None
    return call["failed"] if call else None


def _prior_action(prior: PriorPatch, by_call: dict[str, list[Event]], calls: dict[str, dict],
                  ts: datetime | None) -> Action:
    if prior.command is not None:
        return Action(prior.seq, "command", prior.call_id, command=prior.command, workdir=prior.workdir,
                      failed=_failed(calls, prior.call_id), ts=ts)
    events = by_call[prior.call_id]
    return Action(prior.seq, "patch", prior.call_id, workdir=events[0].workdir,
                  ops=tuple(e.file_op for e in events), ts=ts or events[0].ts)


def patch_applied(call: dict | None) -> bool:
    """Did the apply_patch call (its ``tool_calls`` row) succeed? Without an output, it did not."""
    if call is None:
        return False
    if call["exit_code"] is not None:
        return call["exit_code"] == 0
    return (call["output"] or "").lstrip().startswith(_PATCH_SUCCESS)
