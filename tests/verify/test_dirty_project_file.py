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


# what vitest 2 and jest 29 print when no test file matches the files they were told to run
VITEST_NONE = ("\n RUN  v2.1.9 /home/u/app\n\nfilter:  tripDayMapPanel.test.tsx, tripDayViewLayout.test.tsx\n"
               "include: **/*.{test,spec}.?(c|m)[jt]s?(x)\nexclude:  **/node_modules/**, **/dist/**\n\n"
               "No test files found, exiting with code 1\n")
JEST_NONE = ("No tests found, exiting with code 1\nRun with `--passWithNoTests` to exit with code 0\nIn /home/u/app\n"
             "  41 files checked.\n  testMatch: **/__tests__/**/*.[jt]s?(x) - 12 matches\n"
             "Pattern: src/api/hooks.test.ts - 0 matches\n")


@pytest.mark.parametrize(("output", "named"), [(VITEST_NONE, "tripDayMapPanel.test.tsx"),
                                               (JEST_NONE, "src/api/hooks.test.ts")])
def test_a_test_file_the_runner_no_longer_finds_is_named(output, named):
    """A run that found its test files in the session and none after the replay names the first one:
    the author's tree held it, uncommitted (a file the task made would be there after the replay)."""
    from logmine.verify.task import _NO_PROJECT_FILE

    found = _NO_PROJECT_FILE.search(output)
    assert found is not None and [g for g in found.groups() if g] == [named]
    assert _NO_PROJECT_FILE.search("No test files found, exiting with code 1\n") is None  # no filter: nothing named
