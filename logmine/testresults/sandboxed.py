"""Run a test command in a sandbox so that its runner also reports each test.

The command is rewritten with the runner's own reporting flags (:func:`.instrument`: the same tests
run, the exit code means what it meant); its report file is written under ``.logmine-reports/`` of the
sandbox's workspace, read from the host side and removed before :func:`run_tests` returns, so no later
command sees it. A report that cannot be trusted is None, and the caller grades by the exit code
alone: a runner logmine cannot instrument, a run that left no readable report, or a report read from
output the sandbox cut (tests would be missing from it). Verify grades its candidates with it and
``export swe`` validates its instances with it.

The sandbox is any object with ``workspace`` (its tree on the host), ``mount_at`` (where the tree is
inside) and ``run(command, cwd=..., env=...)`` returning a result with ``output``, ``truncated`` and
``unscored`` (:class:`logmine.sandbox.IsolatedSandbox`); this module imports no sandbox code.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .instrument import Instrumented, instrument
from .parse import parse
from .records import TestReport

REPORT_DIR = ".logmine-reports"


@dataclass(frozen=True, slots=True)
class TestRun:
    __test__ = False  # not a pytest test class, despite its name

    result: Any  # the sandbox's result of the run (logmine.sandbox.CommandResult)
    runner: str | None = None  # the runner logmine recognised (None: run as written)
    report: TestReport | None = None  # each test's outcome, when the run reported them readably


def run_tests(sandbox, command: str, workdir: str, env: dict[str, str] | None = None) -> TestRun:
    """Run ``command`` in ``workdir`` (an absolute path inside the sandbox) with ``env``, instrumented
    where its runner is known."""
    workspace, mount_at = Path(sandbox.workspace), sandbox.mount_at
    host_dir = workspace / os.path.relpath(workdir, mount_at)
    done = instrument(command, posixpath.join(mount_at, REPORT_DIR), package_scripts=_scripts(host_dir))
    if done is None:
        return TestRun(sandbox.run(command, cwd=workdir, env=env))
    reports = workspace / REPORT_DIR
    reports.mkdir(exist_ok=True)
    try:
        result = sandbox.run(done.command, cwd=workdir, env=env)
        report = None if result.unscored else _read(done, result, workspace, mount_at, workdir)
    finally:
        shutil.rmtree(reports, ignore_errors=True)
    return TestRun(result, done.runner, report)


def _read(done: Instrumented, result: Any, workspace: Path, mount_at: str, workdir: str) -> TestReport | None:
    text = None
    if done.report_file:
        path = workspace / os.path.relpath(done.report_file, mount_at)
        try:
            text = path.read_text(errors="replace") if path.is_file() else None
        except OSError:
            text = None
    if text is None and result.truncated:
        return None  # read from output the sandbox cut: tests would be missing
    report = parse(done.runner, result.output, text, root=workdir)
    return report if report is not None and report.outcomes else None


def _scripts(directory: Path) -> dict[str, str] | None:
    """``package.json``'s scripts in ``directory``, so that ``npm test`` is instrumented as what it runs."""
    try:
        scripts = json.loads((directory / "package.json").read_text()).get("scripts")
    except (OSError, ValueError, AttributeError):
        return None
    return {k: v for k, v in scripts.items() if isinstance(v, str)} if isinstance(scripts, dict) else None
