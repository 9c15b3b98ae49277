"""A test command that passed in the session and, after the replay, finds no project file to start
from (cargo's ``could not find `Cargo.toml```, make's ``No rule to make target``) shows that the author's
tree held that file uncommitted: the task started from a tree that differed from its commit, never
"the task never made it pass"."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import FIX, calc_repo
from session_builder import fixed_and_verified

from logmine.export.funnel import categorize

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")


@pytest.mark.parametrize(("runner", "missing"), [("make test", "Makefile"), ("npm test", "package.json")])
def test_a_test_runner_the_commit_lacks_shows_a_start_that_differed(tmp_path, monkeypatch, runner, missing):
    """The author ran ``make test`` (``npm test``) from a Makefile (package.json) never committed."""
    if shutil.which(runner.split()[0]) is None:
        pytest.skip(f"{runner.split()[0]} is not installed")
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "calc"
    commit = calc_repo(repo)
    _, row = fixed_and_verified(tmp_path, repo, commit, runner, FIX, "none")
    assert row["status"] == "not_rebuilt", row
    assert row["status_reason"].startswith(f"start tree differed from commit (first mismatch: {missing}, "
                                           f"which `{runner}` found in the session"), row
    assert categorize(row["status_reason"])[0] == "started from uncommitted changes"
