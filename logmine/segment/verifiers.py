"""Verifier candidates of a task: test commands, check commands and file diffs.

Kinds, strengths and their TMax mapping (TMax's taxonomy: ``exact_text`` for an exact file state,
``metric_threshold`` for a graded similarity; ``test_pass`` is ours, for a command that must pass):

| kind            | when                                                          | strength | tmax_kind        |
|-----------------|---------------------------------------------------------------|----------|------------------|
| test_command    | fail_to_pass: a run failed before an edit, the last run after the last edit passed (edits of prose, `.md`, `.txt`, `.rst`, do not count) | 1.0 | test_pass |
| test_command    | passed after the last edit, no failing run seen               | 0.6      | test_pass        |
| test_command    | ran after the last edit and failed                            | 0.2      | test_pass        |
| test_command    | never ran after the last edit                                 | 0.3      | test_pass        |
| check_command   | other command: failed before the first edit, passed after the last | 0.5 | test_pass        |
| file_diff exact | end-of-task file contents equal                               | 0.4      | exact_text       |
| file_diff hunks | every added line present, every removed line absent           | 0.3      | metric_threshold |

A file_diff whose task also edited files through shell commands is ``incomplete`` (strength 0.1):
the patches do not tell the whole change. Verify later keeps only candidates that fail on the
task's start state and pass after its replay.

A run failed when it exited non-zero or its output says it failed without a code (``failed`` in the
``tool_calls`` view); it passed only when it exited 0. A run whose outcome is unknown is neither. A
run that failed after the task's last edit and then passed (``pip install -e .`` between them, a
flaky test) makes no fail → pass: no edit of the task made it pass. For test runs, a patch that
changes only prose files (``.md``, ``.txt``, ``.rst``: a story or a changelog the agent updated once
its tests passed) is no edit: it changes nothing a run shows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from logmine.patch import FileOp
from logmine.segment.commands import CommandClassifier, unwrap
from logmine.segment.diffs import FileChange
from logmine.segment.records import Candidate, FileDiff, HiddenTest, Run

#: Files of prose: no test run reads them (a story file, a changelog, notes).
_PROSE = (".md", ".mdx", ".markdown", ".txt", ".rst", ".adoc")


def prose(op: FileOp) -> bool:
    """Does the patch op change a prose file only (its path and where it moves to)?"""
    return all(p.lower().endswith(_PROSE) for p in (op.path, op.move_to) if p)


@dataclass
class TaskWork:
    """What a task did, in order: its commands (with exit codes) and its edits."""

    commands: list[dict] = field(default_factory=list)  # {seq, command, workdir, exit_code[, failed]}
    edit_seqs: list[int] = field(default_factory=list)  # successful patches and file-editing commands
    prose_edit_seqs: list[int] = field(default_factory=list)  # those of the patches that change prose only (README.md)
    opaque_edits: list[str] = field(default_factory=list)  # file-editing shell commands


def candidates(task_id: str, session_id: str | None, work: TaskWork, changes: dict[str, FileChange],
               classifier: CommandClassifier, cwd: str | None) -> list[Candidate]:
    """Verifier candidates of one task (``seg_gen`` is filled in when the segmentation is committed)."""
    first_edit = min(work.edit_seqs, default=None)
    last_edit = max(work.edit_seqs, default=None)
    # what a test shows: an edit of prose after the last run (a story file ticked off) changes none of it
    last_code_edit = max(set(work.edit_seqs) - set(work.prose_edit_seqs), default=None)
    groups: dict[str, list[dict]] = {}
    for run in work.commands:
        groups.setdefault(" ".join(unwrap(run["command"]).command.split()), []).append(run)
    tests = tuple(HiddenTest(path=c.path, content=c.content) for c in changes.values()
                  if c.op != "delete" and classifier.is_test_file(c.path))
    found = []
    for runs in groups.values():
        last = runs[-1]
        if classifier.is_test(last["command"]):
            found.append(_test_candidate(task_id, session_id, runs, last_code_edit, tests, cwd))
        elif first_edit is not None and not classifier.edits_files(last["command"]):
            before = [r for r in runs if r["seq"] < first_edit and _failed(r) is True]
            after = [r for r in runs if r["seq"] > last_edit]
            if before and after and _failed(after[-1]) is False:
                found.append(_command_candidate(task_id, session_id, "check_command", runs, cwd, strength=0.5,
                                                ran_after_last_edit=True, fail_to_pass=True))
    if changes:
        incomplete = bool(work.opaque_edits)
        diffs = tuple(_diff(c) for c in changes.values())
        for mode, strength, tmax in (("exact", 0.4, "exact_text"), ("hunks", 0.3, "metric_threshold")):
            found.append(Candidate(
                verifier_id=_verifier_id(task_id, "file_diff", mode, None), task_id=task_id, session_id=session_id,
                kind="file_diff", mode=mode, workdir=cwd, diffs=diffs, incomplete=incomplete,
                strength=0.1 if incomplete else strength, tmax_kind=tmax))
    return found


def _test_candidate(task_id: str, session_id: str | None, runs: list[dict], last_edit: int | None,
                    tests: tuple[HiddenTest, ...], cwd: str | None) -> Candidate:
    last = runs[-1]
    after_edit = last_edit is None or last["seq"] > last_edit
    # a failure an edit followed: one after the last edit was mended by an install or a rerun, not by the task's code
    failed_before = last_edit is not None and any(_failed(r) is True and r["seq"] < last_edit for r in runs[:-1])
    passed = _failed(last) is False
    fail_to_pass = after_edit and passed and failed_before
    if fail_to_pass:
        strength = 1.0
    elif after_edit:
        strength = 0.6 if passed else 0.2
    else:
        strength = 0.3
    return _command_candidate(task_id, session_id, "test_command", runs, cwd, strength=strength,
                              ran_after_last_edit=after_edit, fail_to_pass=fail_to_pass, hidden_tests=tests)


def _command_candidate(task_id: str, session_id: str | None, kind: str, runs: list[dict], cwd: str | None, *,
                       strength: float, ran_after_last_edit: bool, fail_to_pass: bool,
                       hidden_tests: tuple[HiddenTest, ...] = ()) -> Candidate:
    """A command candidate: the command as last run, in its last workdir."""
    last = runs[-1]
    return Candidate(
        verifier_id=_verifier_id(task_id, kind, None, last["command"]), task_id=task_id, session_id=session_id,
        kind=kind, command=last["command"], workdir=last.get("workdir") or cwd,
        runs=tuple(Run(seq=r["seq"], exit_code=r["exit_code"], failed=_failed(r)) for r in runs),
        ran_after_last_edit=ran_after_last_edit, fail_to_pass=fail_to_pass, hidden_tests=hidden_tests,
        strength=strength, tmax_kind="test_pass")


def _failed(run: dict) -> bool | None:
    """The run's ``failed`` (from ``tool_calls``), else what its exit code says."""
    failed = run.get("failed")
    if failed is None and run["exit_code"] is not None:
        return run["exit_code"] != 0
    return failed


def _verifier_id(task_id: str, kind: str, mode: str | None, command: str | None) -> str:
    return "v-" + hashlib.sha1(f"{task_id}/{kind}/{mode}/{command}".encode()).hexdigest()[:16]


def _diff(change: FileChange) -> FileDiff:
    return FileDiff(path=change.path, op=change.op, move_from=change.move_from, content=change.content,
                    added=tuple(sorted(change.added.elements())), removed=tuple(sorted(change.removed.elements())))
