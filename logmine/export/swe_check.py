"""Replay a task and validate its SWE-bench-style instance, both in the sandbox.

:func:`replay` runs a task's ``solution/solve.sh`` (:func:`~logmine.export.bundle.solve_sh`) on its
redacted seeds and copies the end state out, through the redaction gate: ``export swe`` diffs it
against the seeds for the instance's ``patch`` and ``test_patch``.

:func:`check_instance` validates an instance the way SWE-bench does, by test id
(:mod:`logmine.testresults`): on the start state with ``test_patch`` applied, every FAIL_TO_PASS test
fails, errors or is absent and every PASS_TO_PASS test passes (so the empty patch does not resolve
it); with ``patch`` applied too, every one of them passes. Each run is a fresh copy of the seeds,
mounted at ``/workspace`` with the environment the task was verified with (:func:`environment`), or in
a container of an image (``backend="podman"``). It returns None when the instance holds, else why
not: the export's reject reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from logmine.environment.build import EnvironmentUnavailable
from logmine.environment.detect import Environment
from logmine.environment.provide import Provided, provide, sandbox_options
from logmine.redact import Redactor
from logmine.redact.files import copy_tree
from logmine.sandbox import CommandResult, Limits, SandboxError, open_sandbox
from logmine.testresults import TestReport, grade
from logmine.testresults import run_tests as run_instrumented

WORKSPACE = "/workspace"
MODES = ("built", "host", "none")  # after the mode the task was verified with
_SOLVE = ".logmine-solve.sh"
_SHOWN = 3  # test ids named in a reason


@dataclass(frozen=True, slots=True)
class TestSpec:
    """How an instance's tests run: ``command`` (the repository's original path written ``$WORKSPACE``)
    from ``workdir`` (relative to the repository root), read by ``runner``'s parser, and the ids it
    must flip and keep."""

    __test__ = False  # not a pytest test class, despite its name

    command: str
    workdir: str
    runner: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Runtime:
    """Where the runs happen: a sandbox backend, the environment provided to it (None: the sandbox's
    own toolchain) and, for a container backend, the image used when the environment names none."""

    backend: str = "bwrap"
    provided: Provided | None = None
    image: str | None = None
    limits: Limits = Limits(wall_s=300.0)

    def open(self, tree: Path):
        extra = sandbox_options(self.provided) if self.provided else {}
        if self.backend != "bwrap" and "image" not in extra:
            extra["image"] = self.image
        return open_sandbox(tree, mount_at=WORKSPACE, backend=self.backend, limits=self.limits, **extra)


class CheckFailed(Exception):
    """A run could not be made (the sandbox failed, the command cannot be instrumented): its reason."""


class PatchDoesNotApply(CheckFailed):
    """The instance's patch or test_patch does not apply to its start state: the instance is wrong."""


def environment(env: Environment, seeds: Path, live: Path | None, verified: str | None = None,
                backend: str = "bwrap") -> Provided:
    """The task's environment for ``backend``: the way verify provided it first, then the others."""
    tried = []
    for mode in dict.fromkeys([verified, *MODES] if verified in MODES else MODES):
        try:
            return provide(mode, env, seeds, WORKSPACE, live, backend)
        except EnvironmentUnavailable as exc:
            tried.append(f"{mode}: {exc}")
    raise EnvironmentUnavailable("; ".join(tried))


def replay(seeds: Path, solve: str, runtime: Runtime, dest: Path, redactor: Redactor) -> CommandResult:
    """Run ``solve`` (a solve.sh) on a copy of ``seeds``; its end state goes to ``dest`` like the seeds
    went (credential files, links and caches left out, text redacted). Raises :class:`CheckFailed`
    when the sandbox failed."""
    try:
        with runtime.open(seeds) as box:
            box.install_files({_SOLVE: solve})
            done = box.run(f"WORKSPACE={WORKSPACE} bash {WORKSPACE}/{_SOLVE}; rm -f {WORKSPACE}/{_SOLVE}")
            if done.unscored:
                raise CheckFailed(f"the replay did not finish: {done.error or 'timed out'}")
            copy_tree(Path(box.workspace), dest, redactor, caches=False)
            return done
    except SandboxError as exc:
        raise CheckFailed(str(exc)) from exc


def check_instance(seeds: Path, patch: str, test_patch: str, spec: TestSpec, runtime: Runtime = Runtime()) -> str | None:
    """None when the instance validates on the start tree ``seeds``, else why not."""
    if not spec.fail_to_pass:
        return "does not validate: no FAIL_TO_PASS test"
    try:
        before = run_tests(seeds, [("test_patch", test_patch)], spec, runtime)
        outcomes = before.by_id() if before else {}
        fixed = [t for t in spec.fail_to_pass if t in outcomes and outcomes[t].status == "passed"]
        if fixed:
            return f"does not validate: FAIL_TO_PASS test passes without the patch: {_ids(fixed)}"
        broken = [t for t in spec.pass_to_pass if t not in outcomes or outcomes[t].status != "passed"]
        if broken:
            return f"does not validate: PASS_TO_PASS test does not pass without the patch: {_ids(broken)}"
        after = run_tests(seeds, [("test_patch", test_patch), ("patch", patch)], spec, runtime)
    except PatchDoesNotApply as exc:
        return f"does not validate: {exc}"
    except CheckFailed as exc:
        return f"instance check could not run: {exc}"
    if after is None:
        return "does not validate: the tests reported nothing with the patch applied"
    result = grade(after, spec.fail_to_pass, spec.pass_to_pass)
    if not result.passed:
        return f"does not validate: not resolved by the patch: {_ids(result.not_passing)} not passing"
    return None


def run_tests(seeds: Path, patches: list[tuple[str, str]], spec: TestSpec, runtime: Runtime) -> TestReport | None:
    """The report of one run of the tests on a copy of ``seeds`` with ``patches`` applied in order
    (None: it named no test). Raises :class:`PatchDoesNotApply`, or :class:`CheckFailed` (a sandbox
    failure, a command the runner's report flags cannot be added to)."""
    with tempfile.TemporaryDirectory(prefix="logmine-swecheck-") as tmp:
        work = Path(tmp) / "workspace"
        shutil.copytree(seeds, work, symlinks=True)
        for name, text in patches:
            apply_patch_text(work, text, name)
        where = os.path.normpath(f"{WORKSPACE}/{spec.workdir}")
        try:
            with runtime.open(work) as box:
                run = run_instrumented(box, spec.command, where,
                                       env={"WORKSPACE": WORKSPACE, "PYTHONDONTWRITEBYTECODE": "1"})
        except SandboxError as exc:
            raise CheckFailed(str(exc)) from exc
    if run.runner != spec.runner:
        raise CheckFailed(f"the test command cannot be instrumented for {spec.runner}: {spec.command[:200]}")
    if run.result.unscored:
        raise CheckFailed(f"the test run did not finish: {run.result.error or 'timed out'}")
    return run.report


def apply_patch_text(tree: Path, text: str, name: str = "patch") -> None:
    """Apply a ``git diff`` style patch to the directory ``tree`` with ``git apply`` (never a
    repository above it); raises :class:`PatchDoesNotApply` when it does not apply."""
    if not text:
        return
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}
    done = subprocess.run(["git", "apply", "--whitespace=nowarn", "-p1", "-"], cwd=tree, input=text.encode(),
                          capture_output=True, env=env)
    if done.returncode != 0:
        raise PatchDoesNotApply(f"{name} does not apply: {done.stderr.decode(errors='replace').strip()[:200]}")


def _ids(ids) -> str:
    ids = list(ids)
    more = f" (+{len(ids) - _SHOWN} more)" if len(ids) > _SHOWN else ""
    return ", ".join(ids[:_SHOWN]) + more
