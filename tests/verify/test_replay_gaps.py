"""Sessions whose earlier work the replay cannot redo as the author did: a Windows session's
PowerShell (translated to bash), and a dependency added by a package manager that needs the network
the sandbox has not (the start then comes from a commit the author made before the task began).
Real git repositories, sessions replayed in the real bubblewrap sandbox."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import FIX, TESTS, calc_repo
from conftest import query
from replay_support import ADD_SUB, SUB_TEST, add_sub, commit_at, verdicts, verify_sessions
from session_builder import SessionBuilder, segmented

from logmine.verify import VerifyConfig, verify

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")


def test_a_windows_session_replays_its_powershell_edits(tmp_path):
    """Codex CLI on Windows records ``C:\\Users\\b\\proj`` and writes files with PowerShell: a
    here-string piped to ``Set-Content``, ``New-Item -ItemType Directory``. Mapped with a Windows
    ``--repo-map``, the session replays on POSIX: the written test file is part of the next task's
    start, and a command that is PowerShell only fails as an edit that did not replay."""
    repo = tmp_path / "proj"
    commit = calc_repo(repo)
    write_test = "@'\n" + SUB_TEST + "'@ | Set-Content -Path tests\\test_sub.py -Encoding utf8"
    more = ("*** Begin Patch\n*** Update File: tests/test_sub.py\n@@\n         self.assertEqual(sub(3, 1), 2)\n"
            "+        self.assertEqual(sub(1, 3), -2)\n*** End Patch\n")
    b = (SessionBuilder(cwd="C:\\Users\\b\\proj", commit=commit)
         .user("Fix add").ghost("f" * 40, untracked=(".codex\\auth.json",)).run(TESTS, 1).patch(FIX).run(TESTS, 0)
         .agent("Fixed.")
         .user("Add sub with a test").run("New-Item -ItemType Directory -Force -Path tests")
         .run(write_test).run("Get-Content tests\\test_sub.py | Select-String sub").patch(ADD_SUB)
         .run("python3 -B -m unittest -q tests\\test_sub.py", 0).agent("Done.")
         .user("Test a negative difference").patch(more)
         .run("$p = Get-Content calc.py; $p | Set-Content calc.py").run("python3 -B -m unittest -q tests\\test_sub.py", 0)
         .agent("Done."))
    store, _ = segmented(tmp_path, b)
    summary = verify(VerifyConfig(store=store, jobs=2, repo_map=(("C:\\Users\\b\\proj", str(repo)),)))
    rows = verdicts(store, b)
    assert rows[(0, "test_command", None)]["status"] == "validated", rows
    assert rows[(1, "test_command", None)]["status"] == "validated", {k: (r["status"], r["status_reason"]) for k, r in rows.items()}  # the here-string wrote the test
    assert rows[(2, "file_diff", "exact")]["status"] == "validated", {k: (r["status"], r["status_reason"]) for k, r in rows.items() if k[0] == 2}  # its start holds tests/test_sub.py
    assert summary.rebuilt == 3
    notes = [r["reason"] or "" for r in query(store, "SELECT reason FROM verified")]
    assert not any("untracked at the session's start" in n for n in notes), notes  # .codex\\auth.json is the agent's


def test_an_earlier_install_that_needs_the_network_gives_way_to_a_commit_made_before_the_next_task(
        tmp_path, monkeypatch):
    """Task 0 added a dev dependency with its package manager (the sandbox has no network: it fails
    at replay, and the start's manifest lacks it), then fixed add; the author committed both before
    task 1 began. Task 1 starts from that commit, not from the session's commit plus a replay that
    left the dependency out."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-12-31T12:00:00Z")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-12-31T12:00:00Z")
    repo = tmp_path / "work" / "deps"
    commit = calc_repo(repo, {"package.json": '{"name": "calc"}\n'})
    during = commit_at(repo, "2026-01-01T00:00:12Z", {"calc.py": "def add(a, b):\n    return a + b\n",
                                                       "package.json": '{"name": "calc", "devDependencies": '
                                                                       '{"left-pad": "^1.3.0"}}\n'}, monkeypatch)
    b = add_sub(SessionBuilder(cwd=str(repo), commit=commit)
                 .user("Fix add").run(TESTS, 1).run("bun add -d left-pad").patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    assert verdicts(store, b)[(1, "test_command", None)]["status"] == "validated"
    note = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 1")[0]["reason"]
    assert note.startswith(f"started from later commit {during[:12]}"), note
    assert "an earlier install did not run offline: seq" in note, note
