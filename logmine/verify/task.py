"""Verify one task: rebuild its start state, replay it, grade every candidate before and after.

A candidate is ``validated`` iff it fails on the start state and passes after the replay. The
replay runs the task's original actions in order: each shell command fresh in its recorded workdir
(as Codex ran them; the sandbox has no network, so commands that needed it fail as they did or
would), and each originally successful patch through the same patch module. Interactive
``write_stdin`` polls are not replayed.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from logmine.environment.build import EnvironmentUnavailable
from logmine.environment.detect import Environment, detect, with_session_python
from logmine.environment.provide import Provided, provide, sandbox_options
from logmine.environment.recipe import python_version
from logmine.patch import PatchError
from logmine.redact import PLACEHOLDERS, Mask
from logmine.sandbox import Limits, SandboxError, open_sandbox
from logmine.segment.commands import packaged_classifier
from logmine.segment.records import Candidate, TaskInput
from logmine.testresults import TestReport, fail_to_pass, pass_to_pass
from logmine.verify.environment import EnvironmentRecord, modes_to_try
from logmine.verify.grade import Grade, grade
from logmine.workspace import NotRebuilt, RebuiltTree, read_inside, rebuild_task, within
from logmine.workspace.deps import changed_manifests, end_manifests
from logmine.workspace.edits import (
    FailedEdit,
    StartDiffered,
    explain,
    failing_path,
    patch_command,
    retried,
    rooted,
    without_agent_files,
)
from logmine.workspace.empty import EMPTY

# a failure that says the environment lacks something (not that the task's code is wrong)
# (cargo in the offline sandbox: a crate its registry cache lacks is "no matching package"; dash, which
# runs npm's scripts, says `sh: 1: cross-env: not found` of a program no install provided)
MISSING = re.compile(r"(?m)(^.*: command not found|^.*\bsh: \d+: [^\s/:]+: not found|"
                     r"^.*No module named [^\n]*|^.*Cannot find module [^\n]*|"
                     r"^.*Cannot find dependency '[^\n]*|"  # vitest's environment: 'jsdom' not installed
                     r"^.*ModuleNotFoundError[^\n]*|^error: rustup could not choose a version[^\n]*|"
                     r"^error: toolchain '[^']*' is not installed[^\n]*|^error: no matching package named [^\n]*|"
                     r"^error: failed to (?:download|get) `[^\n]*)")


def lacking(grade_: Grade) -> str | None:
    """The line of a failed run that says the environment lacks something — a tool, a package (the
    tail :data:`MISSING` searches), a service or a build (:attr:`Grade.unavailable`, from the whole
    output) — else None: such a failure says nothing of the task's code or of its start."""
    if grade_.passed is not False:
        return None
    found = MISSING.search(grade_.excerpt or "")
    if found and re.search(r"Cannot find module '(?:\.{1,2}/|/)", found.group(0)):
        found = None  # a file of the project's own (a patch that did not apply may have made it)
    return grade_.unavailable or (found.group(0).strip()[:200] if found else None)


@dataclass
class TaskOutcome:
    task_id: str
    rebuilt: bool
    reason: str | None
    rows: list[dict] = field(default_factory=list)  # verifications rows (verify_gen set by the caller)
    environment: dict | None = None  # the environments row (verify_gen set by the caller)


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    repo_map: dict[str, str]
    backend: str = "bwrap"
    limits: Limits = Limits()
    env_mode: str = "auto"  # auto | host | built | none (logmine.verify.environment)
    repo_search: tuple[Path, ...] = ()
    plain_dirs: bool = False  # copy a working directory that is not a git repository (credentials left out)
    mask: Mask = PLACEHOLDERS  # the store's (set by verify once the store is open)


def verify_task(item: TaskInput, options: VerifyOptions) -> TaskOutcome:
    """Rebuild, replay and grade one task. Never raises for the task's own problems (a damaged clone,
    a link to the author's home, an unreadable file, a bug of ours on a shape we did not foresee): each
    is this task's ``not_rebuilt`` (while rebuilding) or ``unscored`` result with the reason, so one task
    never ends a run of many."""
    try:
        return _verify_task(item, options)
    except Exception as exc:  # the task's result, not the run's end
        return failed(item, exc)


def failed(item: TaskInput, exc: BaseException, rebuilt: bool = True) -> TaskOutcome:
    """The outcome of a task whose verification raised ``exc`` outside the rebuild (``rebuilt``
    False: a unit the executor lost before it reported anything)."""
    return _all(item, "unscored", f"verify failed: {type(exc).__name__}: {str(exc)[:300]}", rebuilt=rebuilt)


def _verify_task(item: TaskInput, options: VerifyOptions) -> TaskOutcome:
    task = item.task
    with tempfile.TemporaryDirectory(prefix="logmine-verify-") as tmp:
        try:
            if not task.rebuildable:
                raise NotRebuilt(task.start_state_reason or "start state not rebuildable")
            state = rebuild_task(item, options.repo_map, Path(tmp) / "start", options.repo_search,
                                 options.plain_dirs, backend=options.backend, limits=options.limits, mask=options.mask)
        except NotRebuilt as exc:
            return _all(item, "not_rebuilt", str(exc), rebuilt=False)
        except SandboxError as exc:  # replaying earlier shell edits: infrastructure, never the task's fault
            return _all(item, "unscored", f"sandbox could not start: {exc}", rebuilt=False)
        except Exception as exc:  # e.g. an unreadable file of the clone
            return _all(item, "not_rebuilt", f"rebuild failed: {type(exc).__name__}: {str(exc)[:300]}",
                        rebuilt=False)
        commands = [(a.command, a.workdir or state.cwd) for a in item.actions if a.command] + \
            [(c.command, c.workdir or state.cwd) for c in item.candidates if c.command]
        detected = detect(state.path, commands, state.root)
        record = EnvironmentRecord(with_session_python(detected, item.python))
        changed = changed_manifests(item.actions, state.root, state.cwd)  # installed from the task's end manifests
        deps = end_manifests(item.actions, state.path, state.root, state.cwd, Path(tmp) / "deps") if changed else None
        outcome, lacked = None, None
        for mode in (modes := modes_to_try(options.env_mode, options.backend)):
            try:
                provided = _provide(mode, record, detected, deps or state.path, state, options.backend)
            except EnvironmentUnavailable as exc:
                record.tried.append(f"{mode}: {exc}")
                continue
            installed = deps is not None and provided.recipe is not None  # the task's new dependencies are there
            if installed:
                provided = replace(provided, reason=f"{provided.reason}; from the task's end-of-task {', '.join(changed)}")
            outcome = _verify_in(item, state, options, provided, None if installed else ", ".join(changed) or None)
            missing = _environment_missing(outcome)
            if missing and mode != modes[-1]:  # the next way may have what this one lacked
                record.tried.append(f"{mode}: {missing}")
                lacked = (outcome, provided)
                continue
            record.provided = provided
            break
        if record.provided is None and lacked is not None:  # no later way at all: this one's verdicts stand
            outcome, record.provided = lacked
        elif record.provided is None:
            outcome = _files_only(item, state, options, record)
    outcome.environment = record.row(task.task_id, task.seg_gen)
    return outcome


def _files_only(item: TaskInput, state: RebuiltTree, options: VerifyOptions, record: EnvironmentRecord) -> TaskOutcome:
    """No way provided the environment: the task's file checks need none, so they are graded in the bare
    sandbox (``none``), and its commands are ``unscored`` with the reason."""
    why = "environment not provided: " + "; ".join(record.tried)
    if not any(c.kind == "file_diff" for c in item.candidates):
        return _all(item, "unscored", why, rebuilt=True)
    bare = provide("none", record.environment, state.path, state.root, state.live, options.backend)
    record.provided = replace(bare, reason="the sandbox's own toolchain, for the task's file checks only: the "
                                           "project's environment was not provided")
    outcome = _verify_in(item, state, options, record.provided)
    unscored = {r["verifier_id"]: r for r in _all(item, "unscored", why, rebuilt=True, provided=record.provided).rows}
    kinds = {c.verifier_id: c.kind for c in item.candidates}
    outcome.rows = [row if kinds[row["verifier_id"]] == "file_diff" or not outcome.rebuilt else
                    unscored[row["verifier_id"]] for row in outcome.rows]
    return outcome


def _provide(mode: str, record: EnvironmentRecord, detected: Environment, tree: Path, state: RebuiltTree,
             backend: str) -> Provided:
    """Provide ``record``'s environment one way; when it is pinned to the session's Python and cannot be
    built with it (a dependency pinned since needs a newer one), the environment as ``detected``,
    the attempt kept in ``record.tried`` — so that a bundle's image is the one that installed."""
    try:
        return provide(mode, record.environment, tree, state.root, state.live, backend)
    except EnvironmentUnavailable as exc:
        if mode != "built" or python_version(record.environment) == python_version(detected):
            raise
        provided = provide(mode, detected, tree, state.root, state.live, backend)  # its failure is the reason
        record.tried.append(f"{mode} with the session's Python {record.environment.version('python')}: {exc}")
        record.environment = detected
        return provided


def _verify_in(item: TaskInput, state: RebuiltTree, options: VerifyOptions, provided: Provided,
               changed: str | None = None) -> TaskOutcome:
    """Replay and grade the task with its environment provided one way; ``changed``: the manifests
    the task changed that this environment was not installed from."""
    task = item.task
    for rel, target in provided.links:  # a container image's dependency directories, seen from the tree
        link = state.path / rel
        if not link.exists() and not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target)
    try:
        after, expected, problems, ran = _replay_and_grade(item, state, options, provided)
        before = _grade_all(item, state, options, provided, expected)
    except SandboxError as exc:
        return _all(item, "unscored", f"sandbox could not start: {exc}", rebuilt=True, provided=provided)
    except NotRebuilt as exc:  # the replay showed the start tree was not the author's
        return _all(item, "not_rebuilt", str(exc), rebuilt=False, provided=provided)
    python = _other_python(item.python, ran)
    refuted = _refuted(item, state, provided, after, python)
    if refuted:
        return refuted
    note = "; ".join(p for p in (state.note, *problems) if p) or None
    rows = [_row(c, before[c.verifier_id], after[c.verifier_id], note, provided, changed, python, bool(problems))
            for c in item.candidates]
    return TaskOutcome(task.task_id, True, state.note, rows)


def _refuted(item: TaskInput, state: RebuiltTree, provided: Provided, after: dict[str, Grade],
             python: str | None) -> TaskOutcome | None:
    """The outcome of a task whose replayed tree is shown not to be the author's (``not_rebuilt``), or
    None. A test the session saw pass that fails here refutes a start taken from a later commit, or
    made from other sessions' patches or the session's reads, only where the interpreter is the one
    the session ran: under another Python (argparse's ``conflicting subparser`` is an error from 3.11
    on) its failure shows nothing of the start, and the task is ``unscored`` with both versions
    (``python``: :func:`_other_python`)."""
    refuted = _later_commit_refuted(item, state, after)
    if refuted:
        if python:
            return _all(item, "unscored", f"environment differs from the session's: {python}; {refuted}",
                        rebuilt=True, provided=provided)
        made = "the later commit it was rebuilt from" if state.method == "later_commit" else \
            "the untracked files made from earlier sessions' patches" if state.carried else \
            "the files written as the session's reads showed them"
        return _all(item, "not_rebuilt", f"start tree differed from commit and from {made}: {refuted}", rebuilt=False,
                    provided=provided)
    missing = _project_file_missing(item, state, after)
    return _all(item, "not_rebuilt", missing, rebuilt=False, provided=provided) if missing else None


def _later_commit_refuted(item: TaskInput, state: RebuiltTree, after: dict[str, Grade]) -> str | None:
    """What shows a start taken from a commit made during the session (``later_commit``), or one
    holding untracked files made from earlier sessions' patches or files written as the session's
    reads showed them, not to be the author's tree, or None: a test the session ran after the task's
    last edit and saw pass fails after the replay, not for want of a tool or package, nor of a service
    or build its run names (``connect ECONNREFUSED 127.0.0.1:5432``: the suite's setup reaches a
    database). Its patches applied, but the author had work the log does not show."""
    if state.method != "later_commit" and not state.carried and not state.shown:
        return None
    for c in item.candidates:
        if c.kind == "file_diff" or not c.ran_after_last_edit or not c.runs or c.runs[-1].exit_code != 0:
            continue
        grade_ = after[c.verifier_id]
        # any MISSING line excuses, a relative ``Cannot find module './x'`` too (unlike a row's verdict)
        if grade_.passed is False and not MISSING.search(grade_.excerpt or "") and not grade_.unavailable:
            return (f"`{c.command[:80]}` passed in the session after the task's last edit and fails after the "
                    f"replay ({_failure(grade_)})")
    return None


_PYTHON_VERSION = "import sys; print('%d.%d' % sys.version_info[:2])"


def _python_in(box, cwd: str) -> str | None:
    """The Python version (``3.11``) that ``python3`` is in ``box``, or None (no ``python3`` there)."""
    result = box.run(f'python3 -c "{_PYTHON_VERSION}"', cwd=cwd)
    ran = result.output.strip()
    return ran if result.exit_code == 0 and re.fullmatch(r"3\.\d+", ran) else None


def _other_python(session: str | None, ran: str | None) -> str | None:
    """``it ran Python 3.10, the replay Python 3.11`` when the replay's Python (``ran``) is another
    version than the one the session's outputs name, else None (the same, or either unknown)."""
    if not session or not ran or ran == session:
        return None
    return f"it ran Python {session}, the replay Python {ran}"


_RAISED = re.compile(r"^(?:E\s+)?[\w.]*(?:Error|Exception)\b:")  # an exception's line: ImportError: cannot …


def _failure(grade_: Grade) -> str:
    """What a failing grade shows in a few words: the tests that failed, and its output's last error
    line (else its last line)."""
    failing = sorted(grade_.tests.ids("failed", "error")) if grade_.tests else []
    lines = [line.strip() for line in (grade_.excerpt or "").splitlines() if line.strip()]
    errors = [line for line in lines if _RAISED.match(line)] or [line for line in lines if "rror" in line] or lines[-1:]
    said = [f"failing: {', '.join(failing[:3])}" + (f" and {len(failing) - 3} more" if len(failing) > 3 else "")] \
        if failing else [f"exit {grade_.exit_code}"]
    return "; ".join(said + [errors[-1][:160]] if errors else said)


#: A test runner saying the project file it starts from is not there (cargo, npm, pytest, python, make),
#: or that no test file matches the files it was told to run (vitest's filter, jest's pattern).
_NO_PROJECT_FILE = re.compile(r"could not find `(Cargo\.toml)` in|ENOENT: no such file or directory, open '([^']*package\.json)'|"
                              r"ERROR: file or directory not found: (\S+)|can't open file '([^']+)': \[Errno 2\]|"
                              r"make: \*\*\* No rule to make target '[^']+'\.  Stop\.()|"
                              r"(?m:^filter:\s+([^,\s]+))(?s:.*?)No test files found, exiting with code 1|"
                              r"No tests found, exiting with code 1(?s:.*?)(?m:^Pattern:\s+(\S+))")


def _project_file_missing(item: TaskInput, state: RebuiltTree, after: dict[str, Grade]) -> str | None:
    """Why the start tree is shown not to be the author's by a test command that passed in the session
    and, after the replay, finds no project file to start from (``could not find `Cargo.toml```): the
    author's tree had the file, uncommitted, and nothing the replay failed to redo could have made it."""
    for c in item.candidates:
        if c.kind == "file_diff" or not any(run.failed is False for run in c.runs or ()):
            continue
        found = _NO_PROJECT_FILE.search(after[c.verifier_id].excerpt or "") if after[c.verifier_id].passed is False else None
        path = next((g or "Makefile" for g in found.groups() if g is not None), None) if found else None
        if path and not any(f.may_have_made(path) for f in state.failed_edits):
            against = _against(state)
            return str(StartDiffered(os.path.relpath(path, state.cwd) if os.path.isabs(path) else path, against,
                                     found_by=f"`{(c.command or '')[:60]}`"))
    return None


def _environment_missing(outcome: TaskOutcome) -> str | None:
    """Why a command candidate's failure after the replay looks like a missing environment, or None."""
    for row in outcome.rows:
        if row["status"] in ("fails_after", "unscored") and row.get("after_exit_code") is not None:
            match = MISSING.search(row.get("after_excerpt") or "")
            if row["after_exit_code"] == 127 or match:
                return "after the replay: " + (match.group(0) if match else "command not found (exit 127)")
    return None


def _open(state: RebuiltTree, options: VerifyOptions, provided: Provided):
    return open_sandbox(state.path, mount_at=state.root, backend=options.backend, limits=options.limits,
                        **sandbox_options(provided))


#: A command that reads files and writes none the task needs: its failure at replay on a file shows a file missing.
_READS = re.compile(r"^\s*(?:cat|head|tail|sed|nl|wc|grep|rg|ls|stat|less|diff|awk|file)\s")


def _against(state: RebuiltTree) -> str:
    """What a start that differed differed from, in a reason: the commit, the snapshot, or nothing."""
    return {"ghost_snapshot": "its snapshot", "empty_start": EMPTY}.get(state.method or "", "commit")


def _explain(ops, base: Path, state: RebuiltTree, item: TaskInput, failed: list[tuple[int, str]]) -> None:
    """What a failed patch of the task's own replay shows (:func:`logmine.workspace.edits.explain`): a
    file the patch needs that a reading command of this task (``cat F``) found in the session and the
    replay did not shows a start that differed; an earlier task's shell edit that failed at replay, or
    a command of this task that failed and names the file, may have been the edit it expected."""
    path = failing_path(ops, base)
    name = os.path.basename(path or "")
    against = _against(state)
    made = [seq for seq, command in failed if path and (FailedEdit(seq, "", command).ran_script() or name in command
                                                        and packaged_classifier().edits_files(command)
                                                        and not _READS.match(command))]
    if path and not (base / path).exists() and not any(f.may_have_made(path) for f in state.failed_edits):
        for seq, command in failed:  # the session read the file, the replay found none: the author had it
            if name in command and _READS.match(command) and not packaged_classifier().edits_files(command) \
                    and not any(m < seq for m in made):  # unless a project script that failed before may have made it
                raise StartDiffered(path, against, read_at=seq)
    suspects: list[FailedEdit | str] = [*state.failed_edits, *(f"seq {seq}" for seq, command in failed
                                                                if seq in made or name and name in command)]
    explain(ops, base, state.path, untracked=frozenset(item.task.start_state.untracked), failed_before=suspects,
            against=against)


def _replay_and_grade(item: TaskInput, state: RebuiltTree, options: VerifyOptions, provided: Provided):
    problems: list[str] = []
    failed: list[tuple[int, str]] = []  # commands that failed at replay: (seq, command)
    skipped = retried(item.actions)  # a command refused by the session's sandbox, then re-run: only the re-run
    with _open(state, options, provided) as box:
        base = Path(box.workspace)
        for i, action in enumerate(item.actions):
            if i in skipped:
                continue
            if action.kind == "patch":  # through the sandbox's own apply_patch: same module, sandbox user
                try:
                    ops = without_agent_files(rooted(action.ops, action.workdir or state.cwd, state.root), base)
                except PatchError as exc:
                    problems.append(f"replay: patch at seq {action.seq}: {exc}")
                    continue
                if not ops:  # an agent's own files the tree lacks (.codex/prompts/…), only
                    continue
                result = box.run(patch_command(ops), cwd=state.root)
                if result.exit_code != 0:
                    why = (result.error or result.output).strip()[:200]
                    try:  # a dirty start ends the task (StartDiffered); anything else is a replay problem
                        _explain(ops, base, state, item, failed)
                    except StartDiffered:
                        raise
                    except NotRebuilt as exc:
                        why = str(exc)
                    problems.append(f"replay: patch at seq {action.seq} did not apply: {why}")
            else:
                where = inside(action.workdir, state)
                if not (base / os.path.relpath(where, state.root)).is_dir():  # as the session's shell would fail
                    problems.append(f"replay: command at seq {action.seq}: no directory {where} in this tree")
                    failed.append((action.seq, action.command))
                    continue
                result = box.run(action.command, cwd=where)
                if result.error:
                    problems.append(f"replay: command at seq {action.seq}: {result.error}")
                if action.failed_again(result.exit_code, result.error):
                    failed.append((action.seq, action.command))
        expected = _end_contents(item.candidates, base / os.path.relpath(state.cwd, state.root))
        grades = {c.verifier_id: grade(box, c, state.cwd, expected) for c in _grading_order(item.candidates)}
        # which Python a failing grade ran, asked where it ran: a refuted start or a fails_after may be its doing
        failing = item.python and any(g.passed is False for g in grades.values())
        ran = _python_in(box, state.cwd) if failing else None
    return grades, expected, problems, ran


def inside(workdir: str | None, state: RebuiltTree) -> str:
    """The recorded workdir when it lies in the rebuilt repository, else the session's cwd."""
    return workdir if within(workdir, state.root) else state.cwd


def _grade_all(item: TaskInput, state: RebuiltTree, options: VerifyOptions, provided: Provided,
               expected) -> dict[str, Grade]:
    with _open(state, options, provided) as box:
        return {c.verifier_id: grade(box, c, state.cwd, expected) for c in _grading_order(item.candidates)}


def _grading_order(candidates: tuple[Candidate, ...]) -> list[Candidate]:
    """File checks read the tree before any grading command can touch it."""
    return sorted(candidates, key=lambda c: c.kind != "file_diff")


def _end_contents(candidates: tuple[Candidate, ...], base: Path) -> dict[str, str | None]:
    """The replayed end-of-task text of every file a diff or a test candidate's hidden test files name
    without recorded content."""
    wanted = {d.path for c in candidates if c.kind == "file_diff"
              for d in c.diffs if d.content is None and d.op != "delete"}
    wanted |= {t.path for c in candidates if c.kind == "test_command" for t in c.hidden_tests if t.content is None}
    return {path: read_inside(base, path) for path in wanted}


#: A command that runs Python (the session's interpreter may be why it fails here; an ``npm test`` is not).
_RUNS_PYTHON = re.compile(r"\b(?:python[\d.]*|pytest|py\.test|tox|nox|uv|uvx|poetry|pipenv|pdm|hatch)\b")


def _row(candidate: Candidate, before: Grade, after: Grade, note: str | None, provided: Provided,
         dependencies: str | None = None, python: str | None = None, diverged: bool = False) -> dict:
    """One candidate's verdict. A candidate failing after the replay for want of what the environment
    lacks (:func:`lacking`) is ``unscored``, not ``fails_after``, unless the task changed its
    dependencies or the replay diverged (a patch that did not apply may have left its own module out)."""
    if before.passed is None or after.passed is None:
        which = "start state" if before.passed is None else "replayed state"
        status, reason = "unscored", f"could not grade on the {which}: {(before if before.passed is None else after).excerpt[:200]}"
    elif before.passed:
        status, reason = "passes_at_start", "the candidate already passes on the start state"
    elif not after.passed:
        if python and _RUNS_PYTHON.search(candidate.command or ""):  # another interpreter than the session's
            note = f"the session's Python is not the replay's: {python}" + (f"; {note}" if note else "")
        lacks = None if dependencies or diverged else lacking(after)
        if lacks:  # a tool, package or service the sandbox lacks: the run says nothing of the task's code
            status, reason = "unscored", f"the environment lacks what it needs: {lacks}" + (f" ({note})" if note else "")
        else:
            if dependencies:  # first: the likeliest reason, whatever else the replay noted
                note = (f"the task changed the dependencies in {dependencies}: the sandbox has no network to install "
                        "them") + (f"; {note}" if note else "")
            if candidate.runs and candidate.runs[-1].failed:  # the replay agrees with the session
                note = "as in the session, whose last run of it failed too" + (f"; {note}" if note else "")
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
        "env_mode": provided.mode, "env_reason": provided.reason,
        **_by_test(candidate, before, after),
    }


def _by_test(candidate: Candidate, before: Grade, after: Grade) -> dict:
    """The per-test columns: each run's outcomes, FAIL_TO_PASS and PASS_TO_PASS, and what the
    verdict rests on (``tests`` when both runs reported their tests and at least one flipped)."""
    if candidate.kind == "file_diff":
        return {"graded_by": "files"}
    columns: dict[str, object] = {"test_runner": after.runner or before.runner, "before_tests": _outcomes(before.tests),
               "after_tests": _outcomes(after.tests), "graded_by": "exit_code"}
    if before.tests is not None and after.tests is not None:
        flipped = fail_to_pass(before.tests, after.tests)
        columns |= {"tests_fail_to_pass": list(flipped),
                    "tests_pass_to_pass": list(pass_to_pass(before.tests, after.tests))}
        if flipped:
            columns["graded_by"] = "tests"
    return columns


def _outcomes(report: TestReport | None) -> list[dict] | None:
    if report is None:
        return None
    return [{"test_id": o.test_id, "status": o.status, "duration_s": o.duration_s} for o in report.by_id().values()]


def _all(item: TaskInput, status: str, reason: str, rebuilt: bool, provided: Provided | None = None) -> TaskOutcome:
    rows = [{"verifier_id": c.verifier_id, "task_id": c.task_id, "seg_gen": c.seg_gen, "status": status,
             "status_reason": reason, "env_mode": provided.mode if provided else None,
             "env_reason": provided.reason if provided else None} for c in item.candidates]
    return TaskOutcome(item.task.task_id, rebuilt, reason, rows)
