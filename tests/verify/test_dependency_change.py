"""A task whose fix adds a dependency (``python-multipart`` to ``pyproject.toml``, as a real session
did, then ``uv run`` installed it) cannot pass in an offline sandbox: its test still fails after the
replay, and the reason says the task changed its dependencies instead of leaving a bare "still fails"."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import TESTS, calc_repo
from conftest import query
from session_builder import SessionBuilder, segmented

from logmine.export.funnel import categorize

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

ADD_DEPENDENCY = ("*** Begin Patch\n*** Update File: {repo}/requirements.txt\n@@\n-attrs\n+attrs\n+leftpad-not-installed\n"
                  "*** Update File: calc.py\n@@\n-def add(a, b):\n-    return a - b\n+import leftpad_not_installed\n+\n+\n"
                  "+def add(a, b):\n+    return a + b\n*** End Patch\n")


def test_a_fix_that_adds_a_dependency_says_so_when_it_still_fails(tmp_path, monkeypatch):
    from logmine.verify import VerifyConfig, verify

    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "calc"
    commit = calc_repo(repo, {"requirements.txt": "attrs\n"})
    fix = ADD_DEPENDENCY.replace("{repo}", str(repo))  # the manifest's absolute path, as agents write it
    session = (SessionBuilder(cwd=str(repo), commit=commit)
               .user("add is wrong").run(TESTS, 1).patch(fix).run(TESTS, 0).agent("Fixed."))
    store, _ = segmented(tmp_path, session)
    verify(VerifyConfig(store=store, jobs=1, env_mode="none"))
    (row,) = query(store, "SELECT status, status_reason FROM verifiers WHERE kind = 'test_command'")
    assert row["status"] == "fails_after", row
    assert "the task changed the dependencies in requirements.txt" in row["status_reason"], row
    assert categorize(row["status_reason"])[0] == "the task changed its dependencies"
