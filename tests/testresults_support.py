"""Running an instrumented test command for real, in a temporary project, and reading what it reported."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from logmine.testresults import TestReport, instrument, parse


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what the outer pytest run set for itself."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    return {**env, **extra}


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run_instrumented(command: str, cwd: Path, report_dir: Path, *, env: dict[str, str] | None = None,
                     scripts: dict[str, str] | None = None) -> tuple[TestReport | None, int, str]:
    """Run ``command`` as :func:`instrument` rewrote it, in bash: (its report, its exit code, its output)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    done = instrument(command, str(report_dir), package_scripts=scripts)
    assert done is not None, f"not instrumented: {command}"
    ran = subprocess.run(["bash", "-c", done.command], cwd=cwd, capture_output=True, text=True, timeout=300,
                         env=env or clean_env())
    output = ran.stdout + ran.stderr
    report_file = Path(done.report_file) if done.report_file else None
    report_text = report_file.read_text() if report_file and report_file.exists() else None
    return parse(done.runner, output, report_text, root=str(cwd)), ran.returncode, output


def exit_code(command: str, cwd: Path, env: dict[str, str] | None = None) -> int:
    """The exit code of ``command`` as written, uninstrumented."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, timeout=300,
                          env=env or clean_env()).returncode


def statuses(report: TestReport | None) -> dict[str, str]:
    assert report is not None, "nothing could be read from the run"
    return {test_id: outcome.status for test_id, outcome in report.by_id().items()}
