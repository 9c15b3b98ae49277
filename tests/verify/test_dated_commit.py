"""A session that recorded no commit (older Codex CLIs, Claude Code before 2.1, a repository made
after the CLI started) starts from the newest commit made before the session began, on the branch it
recorded when the clone has that branch; its patches check that commit as they check a recorded one.
Real git repositories, sessions replayed in the real bubblewrap sandbox."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from calc_repo import FIX, TESTS, calc_repo
from conftest import query
from session_builder import SessionBuilder, segmented

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

BEFORE, AFTER = "2025-12-31T12:00:00Z", "2026-01-02T00:00:00Z"  # the sessions begin 2026-01-01T00:00:00Z


def _dated(monkeypatch, when: str) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", message], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def _verified(tmp_path: Path, builder: SessionBuilder) -> list[dict]:
    from logmine.verify import VerifyConfig, verify

    store, _ = segmented(tmp_path, builder)
    verify(VerifyConfig(store=store, jobs=2))
    return query(store, "SELECT v.kind, v.status, v.status_reason, r.reason AS note FROM verifiers v "
                        "JOIN verified r USING (task_id) ORDER BY v.kind")


def test_a_session_without_a_commit_starts_from_the_newest_commit_before_it(tmp_path, monkeypatch):
    """A commit made after the session (it rewrote the test) is never the start."""
    repo = tmp_path / "work" / "proj"
    _dated(monkeypatch, BEFORE)
    start = calc_repo(repo)
    _dated(monkeypatch, AFTER)
    _commit(repo, {"calc.py": "def add(a, b):\n    return a + b\n", "test_calc.py": "import unittest\n"}, "later")
    rows = _verified(tmp_path, SessionBuilder(cwd=str(repo), commit=None)
                     .user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    assert rows and {r["status"] for r in rows} == {"validated"}, rows
    assert rows[0]["note"].startswith(f"no commit recorded: started from {start[:12]}, the newest commit made "
                                      "before the session began"), rows[0]["note"]


def test_the_recorded_branch_is_preferred_to_newer_commits_on_others(tmp_path, monkeypatch):
    """Claude Code records the branch but no commit: a newer commit on another branch (already fixed)
    is not the start."""
    repo = tmp_path / "work" / "branches"
    _dated(monkeypatch, "2025-12-30T00:00:00Z")
    start = calc_repo(repo)
    subprocess.run(["git", "-C", str(repo), "checkout", "-qb", "other"], check=True)
    _dated(monkeypatch, BEFORE)
    _commit(repo, {"calc.py": "def add(a, b):\n    return a + b\n"}, "fixed elsewhere")
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-"], check=True)
    builder = SessionBuilder(cwd=str(repo), commit=None).user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0)
    builder.lines[0]["payload"]["git"] = {"branch": subprocess.run(
        ["git", "-C", str(repo), "branch", "--show-current"], capture_output=True, text=True).stdout.strip()}
    rows = _verified(tmp_path, builder.agent("Fixed."))
    assert {r["status"] for r in rows} == {"validated"}, rows
    assert f"started from {start[:12]}" in rows[0]["note"], rows[0]["note"]


def test_a_dated_commit_the_patches_do_not_fit_is_a_dirty_start(tmp_path, monkeypatch):
    repo = tmp_path / "work" / "dirty"
    _dated(monkeypatch, BEFORE)
    calc_repo(repo)
    dirty_fix = FIX.replace("-    return a - b", "-    return a - b  # wip")
    rows = _verified(tmp_path, SessionBuilder(cwd=str(repo), commit=None)
                     .user("Fix add").run(TESTS, 1).patch(dirty_fix).run(TESTS, 0).agent("Fixed."))
    assert {r["status"] for r in rows} == {"not_rebuilt"}, rows
    assert {r["status_reason"] for r in rows} == {"start tree differed from commit (first mismatch: calc.py)"}


def test_a_repository_with_no_commit_before_the_session_is_not_rebuilt(tmp_path, monkeypatch):
    repo = tmp_path / "work" / "young"
    _dated(monkeypatch, AFTER)
    calc_repo(repo)
    rows = _verified(tmp_path, SessionBuilder(cwd=str(repo), commit=None)
                     .user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    assert {r["status"] for r in rows} == {"not_rebuilt"}, rows
    assert all(r["status_reason"].startswith("no commit recorded for the session, and the repository at ")
               and "has none made before it began (2026-01-01" in r["status_reason"] for r in rows), rows
