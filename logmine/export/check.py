"""Check a task bundle before it is shipped: reward 0 on its seeds, 1 after its ``solution/solve.sh``.

Both runs happen in the bubblewrap sandbox, each on a fresh copy of ``environment/seeds`` mounted at
``/workspace``, with the bundle's environment: the prefix built from the same recipe as its
Dockerfile, else (offline) what host mode binds from the live repository, else the sandbox's own
toolchain. ``tests/`` and ``solution/`` are put in the workspace under ``.logmine-bundle/`` (Harbor
puts them at ``/tests`` and ``/solution``; the scripts take ``TESTS_DIR``/``LOGS_DIR``).

:func:`check_bundle` returns None when the bundle reproduces, else why not (the export's reject
reason). A solution that says a patch did not apply when the bundle was made is rejected without
running, and a failure after the solution names the credential files the export left out that the
task's commands use (a ``.env`` the task read).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from logmine.environment.build import EnvironmentUnavailable
from logmine.environment.detect import Environment
from logmine.environment.provide import Provided, provide, sandbox_options
from logmine.export.bundle import install_tree, syntax_error
from logmine.sandbox import Limits, SandboxError, open_sandbox

WORKSPACE = "/workspace"
_STAGE = ".logmine-bundle"
_NOT_APPLIED = re.compile(r"^# (patch \d+ did not apply when the bundle was made.*)$", re.M)


@dataclass(frozen=True, slots=True)
class BundleCheck:
    """The outcome of a bundle check: None ``problem`` when it reproduced."""

    problem: str | None
    env_mode: str | None = None
    env_reason: str | None = None


def check_bundle(bundle: Path, env: Environment, live: Path | None, *, left_out: list[str] = (),
                 commands: list[str] = (), limits: Limits = Limits(wall_s=300.0)) -> BundleCheck:
    """Run the bundle's tests on its seeds and after its solution, with its environment."""
    solve = (bundle / "solution" / "solve.sh").read_text()
    broken = _NOT_APPLIED.search(solve)
    if broken:
        return BundleCheck(f"solution incomplete: {broken.group(1)[:200]}")
    syntax = syntax_error(solve)
    if syntax:  # bash would run its lines up to the error, then stop: a half-applied solution
        return BundleCheck(f"solution does not parse: {syntax[:200]}")
    provided, tried = None, []
    with tempfile.TemporaryDirectory(prefix="logmine-bundleenv-") as tmp:
        tree = install_tree(bundle, Path(tmp))  # the seeds, or the end-of-task manifests over them
        for mode in ("built", "host", "none"):
            try:
                provided = provide(mode, env, tree, WORKSPACE, live, "bwrap")
                break
            except EnvironmentUnavailable as exc:
                tried.append(f"{mode}: {exc}")
    reason = "; ".join([provided.reason, *(f"tried {t}" for t in tried)])
    try:
        start = _reward(bundle, provided, solve=False, limits=limits)
        after = _reward(bundle, provided, solve=True, limits=limits)
    except SandboxError as exc:
        return BundleCheck(f"bundle check could not run: {exc}", provided.mode, reason)
    if start != "0":
        return BundleCheck(f"does not reproduce: reward {start or 'missing'} on the seeds (expected 0)",
                           provided.mode, reason)
    if after != "1":
        used = sorted(p for p in left_out if any(Path(p).name in c for c in commands))
        why = f" (the task uses {', '.join(used)}, left out of the seeds)" if used else ""
        return BundleCheck(f"does not reproduce: reward {after or 'missing'} after solution/solve.sh{why}",
                           provided.mode, reason)
    return BundleCheck(None, provided.mode, reason)


def _reward(bundle: Path, provided: Provided, *, solve: bool, limits: Limits) -> str:
    with tempfile.TemporaryDirectory(prefix="logmine-bundlecheck-") as tmp:
        work = Path(tmp) / "workspace"
        shutil.copytree(bundle / "environment" / "seeds", work, symlinks=True)
        shutil.copytree(bundle / "tests", work / _STAGE / "tests")
        shutil.copytree(bundle / "solution", work / _STAGE / "solution")
        extra = sandbox_options(provided)
        stage = f"{WORKSPACE}/{_STAGE}"
        env = f"WORKSPACE={WORKSPACE} TESTS_DIR={stage}/tests LOGS_DIR={stage}/logs"
        with open_sandbox(work, mount_at=WORKSPACE, limits=limits, **extra) as box:
            if solve:
                box.run(f"{env} bash {stage}/solution/solve.sh")
            box.run(f"{env} bash {stage}/tests/test.sh")
            reward = Path(box.workspace) / _STAGE / "logs" / "reward.txt"
            return reward.read_text().strip() if reward.is_file() else ""
