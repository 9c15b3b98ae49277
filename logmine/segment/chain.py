"""Earlier sessions' work, for a session that may have begun where they left the files.

Authors often run several sessions in one directory without committing between them: each session
records the same commit, but the second began with the first one's edits in the work tree. Rebuilt
from the commit alone, such a session's first patch fails on a file the first session changed (a dirty
start). :func:`earlier_edits` gives the edits of the earlier sessions that recorded the same commit in
the same cwd — their successful patches and the shell commands that edited files, in order — for the
rebuild to try when the commit alone is shown not to be the start (``logmine.workspace.start``); the
task's own patches then decide.

Sessions that recorded no commit (they ran before the repository's first, or the CLI recorded none)
chain with the earlier ones in the same cwd that recorded none either: their edits serve only a start
rebuilt from nothing (``Chain.commitless``).

Sessions that forked another (their history copies the parent's edits) and sub-agent sessions are
left out, and at most :data:`MAX_SESSIONS` sessions are taken, the latest (:data:`MAX_COMMITLESS`
without a commit).
"""

from __future__ import annotations

from dataclasses import replace

from logmine.segment.commands import packaged_classifier
from logmine.segment.records import Action, Chain, Task, TaskInput, load_task, read_tasks
from logmine.segment.shown import session_reads, shown_for_task
from logmine.store import Store, fetch_dicts

MAX_SESSIONS = 12
MAX_COMMITLESS = 40  # a start from nothing needs every earlier session's edits, not the latest few
_EARLIER_SQL = """
SELECT p.source_path, p.session_id, p.git_branch, me.git_commit IS NULL AS commitless FROM sessions p, sessions me
WHERE me.source_path = ? AND me.cwd IS NOT NULL
  AND p.git_commit IS NOT DISTINCT FROM me.git_commit AND p.cwd = me.cwd AND p.source_path <> me.source_path
  AND p.started_at < me.started_at AND p.forked_from_id IS NULL AND coalesce(p.source, '') NOT LIKE 'subagent%'
ORDER BY p.started_at
"""
_LAST_TASK_SQL = "SELECT * FROM tasks WHERE source_path = ? ORDER BY index DESC LIMIT 1"


def _last_task(store: Store, source_path: str, calls_by_file: dict[str, dict] | None) -> TaskInput | None:
    """A session's last task with its actions, whose ``prior`` holds the session's earlier edits."""
    last = read_tasks(store, _LAST_TASK_SQL, [source_path])
    return load_task(store, last[0], calls_by_file) if last else None


def _session_edits(store: Store, source_path: str, calls_by_file: dict[str, dict] | None) -> tuple[Action, ...]:
    """A session's edits, in order: its last task's earlier work and that task's own patches and
    file-editing commands."""
    item = _last_task(store, source_path, calls_by_file)
    if item is None:
        return ()
    own = [a for a in item.actions if a.kind == "patch" or (a.command and packaged_classifier().redone(a.command))]
    return (*item.prior, *own)


def earlier_edits(store: Store, task: Task, cache: dict,
                  calls_by_file: dict[str, dict] | None = None) -> Chain | None:
    """The edits of the sessions before ``task``'s that recorded its commit in its cwd, oldest first
    (None when they made none); ``cache`` keeps them per session file across the tasks of one run."""
    if task.source_path in cache:
        return cache[task.source_path]
    edits: list[Action] = []
    sessions: list[str] = []
    branches: list[str | None] = []
    rows = fetch_dicts(store.con.execute(_EARLIER_SQL, [task.source_path]))
    for row in rows[-(MAX_COMMITLESS if rows and rows[0]["commitless"] else MAX_SESSIONS):]:
        key = ("edits", row["source_path"])  # each earlier session read once per run, however many follow it
        if key not in cache:
            cache[key] = _session_edits(store, row["source_path"], calls_by_file)
        if cache[key]:
            edits += cache[key]
            sessions.append(row["session_id"] or row["source_path"])
            branches.append(row["git_branch"])
    cache[task.source_path] = Chain(tuple(edits), tuple(sessions), branches[0], rows[0]["commitless"]) if edits else None
    return cache[task.source_path]


_CARRIED_SQL = """
SELECT p.source_path FROM sessions p, sessions me
WHERE me.source_path = ? AND me.cwd IS NOT NULL AND p.cwd = me.cwd AND p.source_path <> me.source_path
  AND p.started_at < me.started_at AND p.git_commit IS DISTINCT FROM me.git_commit
  AND p.forked_from_id IS NULL AND coalesce(p.source, '') NOT LIKE 'subagent%'
ORDER BY p.started_at
"""


def carried_patches(store: Store, task: Task, cache: dict, calls_by_file: dict[str, dict] | None = None
                    ) -> tuple[Action, ...]:
    """The patches of earlier sessions in ``task``'s cwd that recorded another commit, oldest first,
    that name a file Codex's first snapshot found untracked at the session's start: the author
    committed part of that work and left these files out, and the rebuild makes them again
    (:mod:`logmine.workspace.untracked`). Empty when the snapshot lists none."""
    untracked = tuple(p for p in task.start_state.untracked if not p.startswith((".codex/", ".claude/")))
    if not untracked:
        return ()
    key = ("carried", task.source_path)
    if key not in cache:
        kept: list[Action] = []
        for row in fetch_dicts(store.con.execute(_CARRIED_SQL, [task.source_path])):
            item = _last_task(store, row["source_path"], calls_by_file)
            if item is not None:
                kept += [a for a in (*item.prior, *item.actions) if a.kind == "patch" and _names(a, untracked)]
        cache[key] = tuple(kept)
    return cache[key]


def _names(action: Action, paths: tuple[str, ...]) -> bool:
    """Does a patch name one of ``paths`` (root-relative), by its own path or a path ending in it?"""
    named = [p for op in action.ops for p in (op.path, op.move_to) if p]
    return any(n == p or n.endswith("/" + p) for n in named for p in paths)


def with_earlier(store: Store, item: TaskInput, cache: dict, calls_by_file: dict[str, dict] | None = None) -> TaskInput:
    """``item`` with what the log shows of its start beyond the commit: the edits of the earlier
    sessions at its commit (:func:`earlier_edits`), the earlier sessions' patches of the files
    untracked at its start (:func:`carried_patches`), the files its session's reads showed
    (:func:`logmine.segment.shown.shown_for_task`), the tracked files its session's ``git status``
    showed changed as it began (:mod:`logmine.segment.status`), and the directories its ``ls`` showed
    as it began (:mod:`logmine.segment.listing`)."""
    chain = earlier_edits(store, item.task, cache, calls_by_file)
    carried = carried_patches(store, item.task, cache, calls_by_file)
    key = ("reads", item.task.source_path)
    if key not in cache:
        cache[key] = session_reads(store, item.task.source_path, item.task.start_state.repo.cwd)
    shown = shown_for_task(cache[key], item.task.first_seq, (a.seq for a in item.prior))
    listed = cache[key].listed_at_start()
    began = cache[key].began_with()
    return replace(item, chain=chain, carried=carried, shown=shown, listed=listed, began=began) \
        if chain or carried or shown or listed or began else item
