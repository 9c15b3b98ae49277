"""Segment one session: its tasks, each task's start-state recipe and verifier candidates."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from logmine.ingest.records import Event
from logmine.patch import FileOp, PatchError, rooted, within
from logmine.segment.branches import Line, OffBranch, on_branch
from logmine.segment.commands import CommandClassifier
from logmine.segment.diffs import SessionFiles, compose
from logmine.segment.records import Candidate, PriorPatch, Repo, StartState, Task, patch_applied
from logmine.segment.tasks import MESSAGE_TYPES, FollowupRules, TaskSpan, request_text, split_tasks
from logmine.segment.verifiers import TaskWork, candidates, prose


@dataclass
class SessionResult:
    tasks: list[Task]
    verifiers: list[Candidate]
    no_task_reason: str | None
    off_branch: OffBranch = field(default_factory=OffBranch)  # what a Claude Code session's abandoned branches held


@dataclass
class _History:
    """What earlier tasks of the session did to the workspace."""

    edits: list[PriorPatch]  # successful patch calls and shell commands that edited files, in order


def segment_session(session: dict, events: list[Event], calls: dict[str, dict], rules: FollowupRules,
                    classifier: CommandClassifier, lines: Sequence[Line] = ()) -> SessionResult:
    """Tasks and candidates of one session file.

    ``events`` are the file's events in ``seq`` order (with ``ghost_commit``/``ghost_untracked`` of its
    snapshots, and ``line_no``); ``calls`` its ``tool_calls`` rows by call_id; ``lines`` a Claude Code
    file's ``uuid`` tree (:func:`logmine.segment.branches.read_lines`): the events of lines off its
    active trajectory are in no task, and counted in ``off_branch``.
    """
    source = session.get("source") or ""
    if source.startswith("subagent"):
        parent = session.get("parent_session_id")
        return SessionResult([], [], f"{source} session" + (f" of {parent}" if parent else ""))
    events, off = on_branch(events, lines)
    spans = split_tasks(events, rules)
    if not spans:
        reason = "no genuine user request" + (" on the active branch" if off.requests else "")
        return SessionResult([], [], reason if events else "empty session", off)
    # a resumed or forked session starts where its parent's copied history left the files
    files, history = SessionFiles(), _History(_copied_edits(events, spans[0].first_seq, calls, classifier))
    ghosts = [(e.seq, e.ghost_commit) for e in events if e.ghost_commit]
    untracked = _untracked_at_start(events)
    tasks, verifiers = [], []
    for span in spans:
        task, rows = _task(session, span, calls, classifier, files, history, ghosts, untracked)
        tasks.append(task)
        verifiers += rows
    return SessionResult(tasks, verifiers, None, off)


def _task(session: dict, span: TaskSpan, calls: dict[str, dict], classifier: CommandClassifier,
          files: SessionFiles, history: _History, ghosts: list[tuple[int, str]],
          untracked: tuple[str, ...] = ()) -> tuple[Task, list[Candidate]]:
    task_id = "t-" + hashlib.sha1(f"{session['session_id']}/{session['source_path']}/{span.first_seq}"
                                  .encode()).hexdigest()[:16]
    work, ops, edits = TaskWork(), [], []
    patched = {e.call_id for e in span.events if e.kind == "patch"}
    n_calls = n_failed = 0
    for event in span.events:
        call = calls.get(event.call_id) if event.call_id else None
        if event.kind == "tool_call":
            n_calls += 1
            exit_code = call["exit_code"] if call else None
            n_failed += exit_code not in (None, 0)
            command = event.command
            if not command or event.call_id in patched:
                continue
            if classifier.redone(command):
                work.opaque_edits.append(command)
                work.edit_seqs.append(event.seq)
                edits.append(PriorPatch(span.index, event.seq, event.call_id, command, event.workdir))
            else:
                work.commands.append({"seq": event.seq, "command": command, "workdir": event.workdir,
                                      "exit_code": exit_code, "failed": call["failed"] if call else None})
        elif event.kind == "patch" and patch_applied(call):
            ops.append(_relative(event.file_op, session.get("cwd"), event.workdir))
            work.edit_seqs.append(event.seq)
            if prose(ops[-1]):
                work.prose_edit_seqs.append(event.seq)
            if not edits or edits[-1].call_id != event.call_id:
                edits.append(PriorPatch(task_index=span.index, seq=event.seq, call_id=event.call_id))
    start_state, rebuildable, reason = _start_state(session, span, history, ghosts)
    start_state = replace(start_state, untracked=untracked)
    changes = compose(ops, files)
    rows = candidates(task_id, session["session_id"], work, changes, classifier, session.get("cwd"))
    history.edits += edits
    touched = sorted({*changes, *(c.move_from for c in changes.values() if c.move_from)})
    times = [e.ts for e in span.events if e.ts is not None]
    final = _final_message(span)
    task = Task(
        task_id=task_id,
        session_id=session["session_id"],
        source_path=session["source_path"],
        index=span.index,
        prompt=request_text(span.request),
        followups=tuple(span.followups),
        first_seq=span.first_seq,
        last_seq=span.last_seq,
        n_tool_calls=n_calls,
        n_failed_commands=n_failed,
        files_touched=tuple(touched),
        started_at=span.request.ts,
        ended_at=max(times) if times else None,
        duration_s=(max(times) - span.request.ts).total_seconds() if times and span.request.ts else None,
        aborted=any(e.kind == "aborted" or e.injected_kind == "turn_aborted" for e in span.events),
        final_message=final,
        has_final_message=final is not None,
        cwd=session.get("cwd"),
        start_state=start_state,
        rebuildable=rebuildable,
        start_state_reason=reason,
        n_candidates=len(rows),
    )
    return task, rows


def _start_state(session: dict, span: TaskSpan, history: _History,
                 ghosts: list[tuple[int, str]]) -> tuple[StartState, bool, str | None]:
    """How to rebuild the workspace as the task began, and whether that is possible."""
    first_work = next((e.seq for e in span.events if e.kind in ("tool_call", "patch")), span.last_seq)
    ghost = next((commit for seq, commit in reversed(ghosts) if span.first_seq <= seq <= first_work), None)
    repo = Repo(cwd=session.get("cwd"), git_repo_url=session.get("git_repo_url"),
                git_commit=session.get("git_commit"), git_branch=session.get("git_branch"))
    state = StartState(repo=repo, ghost_commit=ghost, prior_patches=tuple(history.edits))
    if ghost:  # Codex snapshots the work tree at the start of each turn
        return replace(state, method="ghost_snapshot"), True, None
    if not session.get("git_commit"):
        started = session.get("started_at")
        if session.get("cwd") and started:  # verify takes the newest commit made before the session began
            when = started.isoformat() if isinstance(started, datetime) else str(started)
            return replace(state, method="dated_commit", session_started=when), True, None
        return state, False, "no git commit recorded for the session" + ("" if session.get("cwd") else " and no cwd")
    shell = any(e.command is not None for e in history.edits)  # redone in a sandbox (logmine.workspace.edits)
    return replace(state, method="git_commit+edits" if shell else "git_commit+patches"), True, None


def _copied_edits(events: list[Event], before: int, calls: dict[str, dict],
                  classifier: CommandClassifier) -> list[PriorPatch]:
    """The edits of the parent's history a forked or resumed session copied before its first request
    (task index -1): its successful patches and file-editing shell commands, in order."""
    edits: list[PriorPatch] = []
    for event in events:
        if event.seq >= before:
            break
        if not event.copied_from or not event.call_id:
            continue
        if event.kind == "patch" and patch_applied(calls.get(event.call_id)):
            if not edits or edits[-1].call_id != event.call_id:
                edits.append(PriorPatch(-1, event.seq, event.call_id))
        elif event.kind == "tool_call" and event.command and classifier.redone(event.command):
            edits.append(PriorPatch(-1, event.seq, event.call_id, event.command, event.workdir))
    patched = {e.call_id for e in events if e.kind == "patch" and e.seq < before}
    return [e for e in edits if e.command is None or e.call_id not in patched]


def _untracked_at_start(events: list[Event]) -> tuple[str, ...]:
    """The files Codex's first snapshot of the session found untracked, when it was taken before any
    work (later snapshots also list what the session itself created)."""
    for event in events:
        if event.kind in ("tool_call", "patch") and not event.copied_from:
            return ()
        if event.ghost_commit and not event.copied_from:
            return event.ghost_untracked
    return ()


def _relative(op: FileOp, cwd: str | None, workdir: str | None = None) -> FileOp:
    """``op`` with paths relative to the session's ``cwd``, as verify replays them
    (:func:`logmine.patch.rooted`): an absolute path inside it (``/home/u/proj/src/x.py``) and a path
    relative to the call's ``workdir`` below it (``x.py`` run in ``src/``) both name ``src/x.py``. An op
    naming a path outside the cwd is kept as written."""
    if not cwd:
        return op
    below = workdir is not None and within(workdir, cwd) and workdir.rstrip("/") != cwd.rstrip("/")
    if not (below or op.path.startswith("/") or (op.move_to or "").startswith("/")):
        return op
    try:
        return rooted((op,), workdir if below else cwd, cwd)[0]
    except PatchError:
        return op


def _final_message(span: TaskSpan) -> str | None:
    """The last assistant message, if nothing but messages came after it."""
    final = None
    for event in span.events:
        if event.kind == "assistant_message" and event.record_type in MESSAGE_TYPES:
            final = event.text
        elif event.kind in ("tool_call", "tool_output", "patch"):
            final = None
    return final
