"""Verifier candidates of a task: test commands, check commands and file diffs.

Kinds, strengths and their TMax mapping (TMax's taxonomy: ``exact_text`` for an exact file state,
``metric_threshold`` for a graded similarity; ``test_pass`` is ours, for a command that must pass):

| kind            | when                                                          | strength | tmax_kind        |
|-----------------|---------------------------------------------------------------|----------|------------------|
| test_command    | fail_to_pass: a run failed, the last run after the last edit passed | 1.0 | test_pass        |
| test_command    | passed after the last edit, no failing run seen               | 0.6      | test_pass        |
| test_command    | ran after the last edit and failed                            | 0.2      | test_pass        |
| test_command    | never ran after the last edit                                 | 0.3      | test_pass        |
| check_command   | other command: failed before the first edit, passed after the last | 0.5 | test_pass        |
| file_diff exact | end-of-task file contents equal                               | 0.4      | exact_text       |
| file_diff hunks | every added line present, every removed line absent           | 0.3      | metric_threshold |

A file_diff whose task also edited files through shell commands is ``incomplete`` (strength 0.1):
the patches do not tell the whole change. Verify later keeps only candidates that fail on the
task's start state and pass after its replay.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import orjson

from logmine.segment.commands import CommandClassifier, unwrap
from logmine.segment.diffs import FileChange


@dataclass
class TaskWork:
    """What a task did, in order: its commands (with exit codes) and its edits."""

    commands: list[dict] = field(default_factory=list)  # {seq, command, workdir, exit_code}
    edit_seqs: list[int] = field(default_factory=list)  # successful patches and file-editing commands
    opaque_edits: list[str] = field(default_factory=list)  # file-editing shell commands


def candidates(task_id: str, session_id: str, work: TaskWork, changes: dict[str, FileChange],
               classifier: CommandClassifier, cwd: str | None) -> list[dict]:
    """Verifier rows for one task (``seg_gen`` is filled in by the caller)."""
    first_edit = min(work.edit_seqs, default=None)
    last_edit = max(work.edit_seqs, default=None)
    groups: dict[str, list[dict]] = {}
    for run in work.commands:
        groups.setdefault(" ".join(unwrap(run["command"]).command.split()), []).append(run)
    tests = [_changed_file(c) for c in changes.values() if c.op != "delete" and classifier.is_test_file(c.path)]
    rows = []
    for runs in groups.values():
        last = runs[-1]
        if classifier.is_test(last["command"]):
            rows.append(_test_row(task_id, session_id, runs, last_edit, tests, cwd))
        elif first_edit is not None and not classifier.edits_files(last["command"]):
            before = [r for r in runs if r["seq"] < first_edit and r["exit_code"] not in (None, 0)]
            after = [r for r in runs if r["seq"] > last_edit]
            if before and after and after[-1]["exit_code"] == 0:
                rows.append(_row(task_id, session_id, "check_command", None, last, cwd, runs, True, True, None,
                                 False, 0.5, "test_pass"))
    if changes:
        incomplete = bool(work.opaque_edits)
        files = orjson.dumps([c.to_dict() for c in changes.values()]).decode()
        for mode, strength, tmax in (("exact", 0.4, "exact_text"), ("hunks", 0.3, "metric_threshold")):
            rows.append(_row(task_id, session_id, "file_diff", mode, None, cwd, None, None, None, files,
                             incomplete, 0.1 if incomplete else strength, tmax))
    return rows


def _test_row(task_id: str, session_id: str, runs: list[dict], last_edit: int | None, tests: list[dict],
              cwd: str | None) -> dict:
    last = runs[-1]
    after_edit = last_edit is None or last["seq"] > last_edit
    failed_before = any(r["exit_code"] not in (None, 0) for r in runs[:-1])
    passed = last["exit_code"] == 0
    fail_to_pass = after_edit and passed and failed_before and last_edit is not None
    if fail_to_pass:
        strength = 1.0
    elif after_edit:
        strength = 0.6 if passed else 0.2
    else:
        strength = 0.3
    files = orjson.dumps(tests).decode() if tests else None
    return _row(task_id, session_id, "test_command", None, last, cwd, runs, after_edit, fail_to_pass, files,
                False, strength, "test_pass")


def _row(task_id, session_id, kind, mode, last, cwd, runs, after_edit, fail_to_pass, files, incomplete,
         strength, tmax_kind) -> dict:
    command = last["command"] if last else None
    key = f"{task_id}/{kind}/{mode}/{command}"
    return {
        "verifier_id": "v-" + hashlib.sha1(key.encode()).hexdigest()[:16],
        "task_id": task_id,
        "session_id": session_id,
        "kind": kind,
        "mode": mode,
        "command": command,
        "workdir": (last.get("workdir") or cwd) if last else cwd,
        "runs": None if runs is None else orjson.dumps(
            [{"seq": r["seq"], "exit_code": r["exit_code"]} for r in runs]).decode(),
        "ran_after_last_edit": after_edit,
        "fail_to_pass": fail_to_pass,
        "files": files,
        "incomplete": incomplete,
        "strength": strength,
        "tmax_kind": tmax_kind,
    }


def _changed_file(change: FileChange) -> dict:
    return {"path": change.path, "content": change.content}
