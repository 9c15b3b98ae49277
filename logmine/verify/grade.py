"""Grade one verifier candidate on a sandboxed workspace.

- ``test_command`` / ``check_command``: the command, run fresh in the candidate's workdir, must exit
  0. A test candidate's hidden test files are written in from their recorded content first, so
  whatever the agent did to them does not count. Where logmine knows the runner, the command also
  reports each test (:func:`logmine.testresults.run_tests`): the grade carries those outcomes, from which the verification
  derives FAIL_TO_PASS and PASS_TO_PASS.
- ``file_diff`` ``exact``: every file has its expected end-of-task content (a deleted file is absent).
- ``file_diff`` ``hunks``: every line the task added is present, every line it removed is absent
  (beyond the copies the end-of-task text keeps elsewhere in the file, when that text is known).

A grade is ``passed`` True/False, or None when it could not be scored (sandbox error, timeout):
an infrastructure failure is never a fail.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from logmine.redact import redact_text
from logmine.segment.records import Candidate
from logmine.testresults import TestReport, run_tests
from logmine.workspace import read_inside, within

EXCERPT = 600
# a run's line saying the environment lacked something no tree holds: a service that refused the
# connection (a database the tests' setup reaches), a workspace package that was never built, a
# browser Playwright or Cypress downloads to the user's cache, a Prisma client never generated (none
# of them part of an install offline)
_UNAVAILABLE = re.compile(r"(?m)^.*(?:\bECONNREFUSED\b|Connection refused|could not connect to server|"
                          r"Can't connect to (?:local )?MySQL server|Failed to resolve entry for package|"
                          r"ERR_PNPM_VERIFY_DEPS_BEFORE_RUN|"  # pnpm: node_modules not as the lock says
                          r"browserType\.launch: Executable doesn't exist|Host system is missing dependencies|"
                          r"the Cypress binary is missing|Cypress failed to start|"
                          # Prisma's client never generated (`prisma generate` downloads its engines)
                          r"Cannot find module '\.prisma/client|@prisma/client did not initialize yet|binaries\.prisma\.sh).*$")


@dataclass(frozen=True, slots=True)
class Grade:
    passed: bool | None
    exit_code: int | None = None
    seconds: float = 0.0
    excerpt: str = ""
    runner: str | None = None  # the test runner that reported each test (None: graded by exit code only)
    tests: TestReport | None = None
    unavailable: str | None = None  # a line of the whole output naming a service or build the environment lacked


def grade(sandbox, candidate: Candidate, cwd: str, expected: dict[str, str | None]) -> Grade:
    """``cwd``: the session's original cwd (inside the sandbox); ``expected``: replayed end-of-task
    file contents by path relative to ``cwd`` (None: deleted or unreadable), used by exact file diffs
    and for hidden test files whose content the log does not hold."""
    if candidate.kind == "file_diff":
        return _file_diff(Path(sandbox.workspace), sandbox.mount_at, candidate, cwd, expected)
    # a test file whose text the log does not hold (it existed before the session) gets its
    # replayed end-of-task text, so the start state is graded with the task's tests too
    hidden = {t.path: t.content if t.content is not None else expected.get(t.path) for t in candidate.hidden_tests}
    hidden = {path: text for path, text in hidden.items() if text is not None}
    if hidden:
        rel = os.path.relpath(cwd, sandbox.mount_at)
        sandbox.install_files({os.path.normpath(os.path.join(rel, path)): text for path, text in hidden.items()})
    workdir = candidate.workdir if candidate.workdir and within(candidate.workdir, sandbox.mount_at) else cwd
    if not (Path(sandbox.workspace) / os.path.relpath(workdir, sandbox.mount_at)).is_dir():
        # the session's shell started there; in this tree it does not exist (yet): the command fails
        return Grade(False, 1, 0.0, f"cd: {workdir}: no such directory in this tree")
    run = run_tests(sandbox, candidate.command or "", workdir)
    result = run.result
    # redact the whole output, then cut: a cut first could leave half a secret no rule recognises
    excerpt = redact_text(result.output[-EXCERPT * 8:])[-EXCERPT:]
    if result.unscored:
        reason = result.error or f"grader timed out after {result.duration_s:.0f} s"
        return Grade(None, result.exit_code, result.duration_s, f"{reason}\n{excerpt}".strip())
    unavailable = _UNAVAILABLE.search(result.output) if result.exit_code != 0 else None
    return Grade(result.exit_code == 0, result.exit_code, result.duration_s, excerpt, run.runner, run.report,
                 redact_text(unavailable.group(0).strip()[:200]) if unavailable else None)


def _file_diff(workspace: Path, mount_at: str, candidate: Candidate, cwd: str,
               expected: dict[str, str | None]) -> Grade:
    started = time.monotonic()
    base = workspace / os.path.relpath(cwd, mount_at)
    problems = []
    for change in candidate.diffs:
        path = change.path
        text = read_inside(base, path)
        if candidate.mode == "exact":
            want = change.content if change.content is not None or change.op == "delete" else expected.get(path)
            if text != want:
                problems.append(f"{path}: " + ("missing" if text is None else "absent expected" if want is None
                                               else "content differs"))
        elif change.op != "delete":
            lines = Counter((text or "").splitlines())
            missing = Counter(change.added) - lines
            # a removed line may rightly stay elsewhere in the file: only copies beyond the end-of-task
            # text's (when known) count as still present
            end = change.content if change.content is not None else expected.get(path)
            kept = Counter(end.splitlines()) if end is not None else Counter()
            present = [line for line in dict.fromkeys(change.removed)
                       if lines[line] > kept[line] and line not in change.added]
            if missing:
                problems.append(f"{path}: {sum(missing.values())} added line(s) missing")
            if present:
                problems.append(f"{path}: {len(present)} removed line(s) still present")
    return Grade(not problems, None, time.monotonic() - started, "; ".join(problems)[:EXCERPT])

