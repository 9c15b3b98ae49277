"""Verify one task: rebuild its start state, replay it, grade every candidate before and after.

A candidate is ``validated`` iff it fails on the start state and passes after the replay. The
replay runs the task's original actions in order: each shell command fresh in its recorded workdir
(as Codex ran them; the sandbox has no network, so commands that needed it fail as they did or
would), and each originally successful patch through the same patch module. Interactive
``write_stdin`` polls are not replayed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from logmine.patch import FileOp, render_patch
from logmine.sandbox import Limits, SandboxError, open_sandbox
from logmine.segment.records import Candidate, TaskInput
from logmine.verify.grade import Grade, grade
from logmine.verify.workspace import NotRebuilt, RebuiltTree, read_inside, rebuild, within


@dataclass
class TaskOutcome:
    task_id: str
    rebuilt: bool
    reason: str | None
    rows: list[dict] = field(default_factory=list)  # verifications rows (verify_gen set by the caller)


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    repo_map: dict[str, str]
    backend: str = "bwrap"
    limits: Limits = Limits()


def verify_task(item: TaskInput, options: VerifyOptions) -> TaskOutcome:
    task = item.task
    with tempfile.TemporaryDirectory(prefix="logmine-verify-") as tmp:
        try:
            if not task.rebuildable:
                raise NotRebuilt(task.start_state_reason or "start state not rebuildable")
            state = rebuild(task.start_state, item.prior_ops, options.repo_map, Path(tmp) / "start")
        except NotRebuilt as exc:
            return _all(item, "not_rebuilt", str(exc), rebuilt=False)
        try:
            after, expected, problems = _replay_and_grade(item, state, options)
            before = _grade_all(item, state, options, expected)
        except SandboxError as exc:
            return _all(item, "unscored", f"sandbox could not start: {exc}", rebuilt=True)
    note = "; ".join(p for p in (state.note, *problems) if p) or None
    rows = [_row(c, before[c.verifier_id], after[c.verifier_id], note) for c in item.candidates]
    return TaskOutcome(task.task_id, True, state.note, rows)


def _replay_and_grade(item: TaskInput, state: RebuiltTree, options: VerifyOptions):
    problems: list[str] = []
    with open_sandbox(state.path, mount_at=state.root, backend=options.backend, limits=options.limits) as box:
        base = Path(box.workspace)
        for action in item.actions:
            if action.kind == "patch":  # through the sandbox's own apply_patch: same module, sandbox user
                result = box.run(_apply_patch_command(action.ops), cwd=state.cwd)
                if result.exit_code != 0:
                    problems.append(f"replay: patch at seq {action.seq} did not apply: "
                                    f"{(result.error or result.output).strip()[:200]}")
            else:
                result = box.run(action.command, cwd=inside(action.workdir, state))
                if result.error:
                    problems.append(f"replay: command at seq {action.seq}: {result.error}")
        expected = _end_contents(item.candidates, base / os.path.relpath(state.cwd, state.root))
        grades = {c.verifier_id: grade(box, c, state.cwd, expected) for c in _grading_order(item.candidates)}
    return grades, expected, problems


def _apply_patch_command(ops: tuple[FileOp, ...]) -> str:
    patch = render_patch(ops)
    mark = "LOGMINE_PATCH"
    while mark in patch:
        mark += "_"
    return f"apply_patch <<'{mark}'\n{patch.rstrip(chr(10))}\n{mark}"


def inside(workdir: str | None, state: RebuiltTree) -> str:
    """The recorded workdir when it lies in the rebuilt repository, else the session's cwd."""
    return workdir if within(workdir, state.root) else state.cwd


def _grade_all(item: TaskInput, state: RebuiltTree, options: VerifyOptions, expected) -> dict[str, Grade]:
    with open_sandbox(state.path, mount_at=state.root, backend=options.backend, limits=options.limits) as box:
        return {c.verifier_id: grade(box, c, state.cwd, expected) for c in _grading_order(item.candidates)}


def _grading_order(candidates: tuple[Candidate, ...]) -> list[Candidate]:
    """File checks read the tree before any grading command can touch it."""
    return sorted(candidates, key=lambda c: c.kind != "file_diff")


def _end_contents(candidates: tuple[Candidate, ...], base: Path) -> dict[str, str | None]:
    """The replayed end-of-task text of every file an exact diff or a test candidate's hidden test
    files name without recorded content."""
    wanted = {d.path for c in candidates if c.kind == "file_diff" and c.mode == "exact"
              for d in c.diffs if d.content is None and d.op != "delete"}
    wanted |= {t.path for c in candidates if c.kind == "test_command" for t in c.hidden_tests if t.content is None}
    return {path: read_inside(base, path) for path in wanted}


def _row(candidate: Candidate, before: Grade, after: Grade, note: str | None) -> dict:
    if before.passed is None or after.passed is None:
        which = "start state" if before.passed is None else "replayed state"
        status, reason = "unscored", f"could not grade on the {which}: {(before if before.passed is None else after).excerpt[:200]}"
    elif before.passed:
        status, reason = "passes_at_start", "the candidate already passes on the start state"
    elif not after.passed:
        status, reason = "fails_after", "the candidate still fails after the replay" + (f" ({note})" if note else "")
    else:
        status, reason = "validated", note
    return {
        "verifier_id": candidate.verifier_id, "task_id": candidate.task_id, "seg_gen": candidate.seg_gen,
        "status": status, "status_reason": reason,
        "before_passed": before.passed, "after_passed": after.passed,
        "before_exit_code": before.exit_code, "after_exit_code": after.exit_code,
        "before_s": before.seconds, "after_s": after.seconds,
        "before_excerpt": before.excerpt, "after_excerpt": after.excerpt,
    }


def _all(item: TaskInput, status: str, reason: str, rebuilt: bool) -> TaskOutcome:
    rows = [{"verifier_id": c.verifier_id, "task_id": c.task_id, "seg_gen": c.seg_gen, "status": status,
             "status_reason": reason} for c in item.candidates]
    return TaskOutcome(item.task.task_id, rebuilt, reason, rows)
