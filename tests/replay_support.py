"""What the replay tests of real session shapes share: the calc repository's next task (``sub``
with its test), verifying sessions into a store, reading their verdicts, and commits made at a
given time (a commit the author made during a session)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from calc_repo import TESTS
from conftest import query
from session_builder import SessionBuilder, segmented

__all__ = ["ADD_SUB", "SUB_TEST", "add_sub", "commit_at", "git_out", "verdicts", "verify_sessions"]

SUB_TEST = ("import unittest\n\nfrom calc import sub\n\n\nclass S(unittest.TestCase):\n"
            "    def test_sub(self):\n        self.assertEqual(sub(3, 1), 2)\n")
ADD_SUB = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n     return a + b\n+\n+\n+def sub(a, b):\n"
           "+    return a - b\n*** End Patch\n")


def add_sub(b: SessionBuilder, sub_test: str = SUB_TEST) -> SessionBuilder:
    """The next task: add ``sub`` to calc.py (ADD_SUB) and a test of it, which the session saw pass."""
    return (b.user("Add sub with a test").patch(ADD_SUB)
            .patch("*** Begin Patch\n*** Add File: test_sub.py\n" + "".join(f"+{line}\n" for line in sub_test.splitlines())
                   + "*** End Patch\n")
            .run(f"{TESTS} test_sub", 0).agent("Done."))


def verify_sessions(tmp_path: Path, *builders: SessionBuilder):
    from logmine.verify import VerifyConfig, verify

    store, _ = segmented(tmp_path, *builders)
    return store, verify(VerifyConfig(store=store, jobs=2))


def verdicts(store: Path, session: SessionBuilder) -> dict[tuple[int, str, str | None], dict]:
    rows = query(store, "SELECT t.index, v.kind, v.mode, v.status, v.status_reason FROM verifiers v "
                        "JOIN tasks t USING (task_id) WHERE t.session_id = ?", [session.session_id])
    return {(r["index"], r["kind"], r["mode"]): r for r in rows}


def commit_at(repo: Path, when: str, files: dict[str, str], monkeypatch) -> str:
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    for rel, text in files.items():
        (repo / rel).write_text(text)
    git_out(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", f"at {when}")
    return git_out(repo, "rev-parse", "HEAD")


def git_out(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()
