"""A session that begins with ``git status`` says what the author had not committed. A code file it
lists as modified makes a start from the commit one known to differ — even when every patch of the
task applies — unless the session's reads showed that file whole; documentation it lists is noted.
Real git repositories, sessions replayed in the real bubblewrap sandbox."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import CALC, FIX, TESTS, calc_repo
from conftest import query
from replay_support import verdicts, verify_sessions
from session_builder import SessionBuilder

from logmine.export.funnel import categorize

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

HELPER = "def helper():\n    return 1\n"
# the author's uncommitted change of helper.py: the task's patch of calc.py applies all the same
STATUS = "## main\n M helper.py\n M docs/notes.md\n?? scratch.txt\n"


def _fix(repo, commit, *reads) -> SessionBuilder:
    b = SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run("git status --short --branch", 0, STATUS)
    for command, output in reads:
        b = b.run(command, 0, output)
    return b.run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed.")


def test_a_code_file_git_status_listed_makes_a_start_known_to_differ(tmp_path):
    repo = tmp_path / "work" / "listed"
    commit = calc_repo(repo, {"helper.py": HELPER, "docs/notes.md": "# Notes\n"})
    b = _fix(repo, commit)
    store, summary = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert {r["status"] for r in rows.values()} == {"not_rebuilt"}, rows
    reason = rows[(0, "test_command", None)]["status_reason"]
    assert reason == ("start tree differed from commit (first mismatch: helper.py, which the session's `git status` "
                      "at seq 5 showed changed as it began)"), reason
    assert categorize(reason)[0] == "started from uncommitted changes"
    assert summary.rebuilt == 0


def test_a_listed_file_the_session_read_whole_is_the_authors_and_documentation_is_noted(tmp_path):
    """``cat helper.py`` showed the author's text: the start holds it, and the task validates; the
    listed notes.md stays as the commit has it, said in the reason."""
    repo = tmp_path / "work" / "shown"
    commit = calc_repo(repo, {"helper.py": HELPER, "docs/notes.md": "# Notes\n"})
    authors = "def helper():\n    return 2  # uncommitted\n"
    b = _fix(repo, commit, ("cat helper.py", authors), ("cat calc.py", CALC))
    store, _ = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(0, "test_command", None)]["status"] == "validated", rows
    reason = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 0")[0]["reason"]
    assert "written as the session's reads showed them: helper.py" in reason, reason
    assert ("1 documentation, agent or credential file(s) that `git status` showed changed as the session began are "
            "as the commit has them: docs/notes.md") in reason, reason


def test_a_file_the_session_changed_before_its_git_status_is_no_evidence(tmp_path):
    """The session fixed calc.py, then ran ``git status``: calc.py listed is the session's own change."""
    repo = tmp_path / "work" / "own"
    commit = calc_repo(repo)
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").patch(FIX)
         .run("git status --short", 0, " M calc.py\n").run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    assert verdicts(store, b)[(0, "file_diff", "exact")]["status"] == "validated", verdicts(store, b)


def test_a_git_status_after_a_test_run_is_no_evidence(tmp_path):
    """A test run may write tracked files (a SQLite database, a snapshot): what ``git status`` lists
    after one is no evidence of the author's start."""
    repo = tmp_path / "work" / "ran"
    commit = calc_repo(repo, {"helper.py": HELPER})
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run(TESTS, 1)
         .run("git status --short", 0, " M helper.py\n").patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    assert verdicts(store, b)[(0, "test_command", None)]["status"] == "validated", verdicts(store, b)


def test_a_commit_the_author_made_during_the_session_is_the_start_git_status_asks_for(tmp_path, monkeypatch):
    """The author committed the helper.py change the session's ``git status`` listed before the task
    began: that commit, on which the task's patch applies, is its start."""
    from replay_support import commit_at

    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-12-31T12:00:00Z")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-12-31T12:00:00Z")
    repo = tmp_path / "work" / "during"
    commit = calc_repo(repo, {"helper.py": HELPER, "docs/notes.md": "# Notes\n"})
    during = commit_at(repo, "2026-01-01T00:00:01Z", {"helper.py": "def helper():\n    return 2\n"}, monkeypatch)
    b = _fix(repo, commit)
    store, _ = verify_sessions(tmp_path, b)
    assert verdicts(store, b)[(0, "test_command", None)]["status"] == "validated", verdicts(store, b)
    reason = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 0")[0]["reason"]
    assert reason.startswith(f"started from later commit {during[:12]}") and "helper.py" in reason, reason


def test_a_planning_artifact_git_status_listed_is_noted_not_refused(tmp_path):
    """BMAD's ``_bmad-output/`` holds planning documents (``sprint-status.yaml``), which no test runs."""
    repo = tmp_path / "work" / "planning"
    commit = calc_repo(repo, {"_bmad-output/implementation-artifacts/sprint-status.yaml": "story-1: ready\n"})
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("Fix add")
         .run("git status --short", 0, " M _bmad-output/implementation-artifacts/sprint-status.yaml\n")
         .run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    assert verdicts(store, b)[(0, "test_command", None)]["status"] == "validated", verdicts(store, b)
    reason = query(store, "SELECT reason FROM verified")[0]["reason"]
    assert "are as the commit has them: _bmad-output/implementation-artifacts/sprint-status.yaml" in reason, reason
