"""Spec-kit's ``.specify/``, untracked while the author worked and committed a day later: the start
takes it from that commit, its script runs at replay as it did for the author, and the task is
rebuilt and validated; without a commit that holds it, the start is known to differ. Real git
repositories, sessions replayed in the real bubblewrap sandbox."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from calc_repo import FIX, TESTS, calc_repo
from conftest import query
from replay_support import verdicts, verify_sessions
from session_builder import SessionBuilder

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

# spec-kit's setup-plan.sh, cut down: the plan of the branch's feature, copied from the template
SETUP_PLAN = ('#!/usr/bin/env bash\nset -e\nbranch=$(git rev-parse --abbrev-ref HEAD)\nmkdir -p "specs/$branch"\n'
              'cp .specify/templates/plan-template.md "specs/$branch/plan.md"\n'
              'echo "{\\"IMPL_PLAN\\": \\"specs/$branch/plan.md\\"}"\n')
TEMPLATE = "# Implementation plan\n\n## Summary\n\n[FEATURE SUMMARY]\n"
PLAN_PATCH = ("*** Begin Patch\n*** Update File: specs/001-fix-add/plan.md\n@@\n ## Summary\n \n-[FEATURE SUMMARY]\n"
              "+Make add add.\n*** End Patch\n")
TOOLING = {".specify/scripts/bash/setup-plan.sh": SETUP_PLAN, ".specify/templates/plan-template.md": TEMPLATE}


def _commit_tooling(repo: Path, when: str) -> str:
    """The author commits the tooling a day after the session."""
    for rel, text in TOOLING.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / ".specify/scripts/bash/setup-plan.sh").chmod(0o755)
    env = {"GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when}
    for argv in (["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "add spec-kit"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env={**os.environ, **env})
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def _session(repo: Path, commit: str) -> SessionBuilder:
    return (SessionBuilder(cwd=str(repo), commit=commit, branch="001-fix-add")
            .user("Plan the fix").run(".specify/scripts/bash/setup-plan.sh --json", 0).patch(PLAN_PATCH)
            .agent("Planned.")
            .user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))


def test_untracked_spec_kit_comes_from_the_commit_that_later_held_it(tmp_path):
    repo = tmp_path / "work" / "kit"
    commit = calc_repo(repo)
    later = _commit_tooling(repo, "2026-01-02T09:00:00Z")
    b = _session(repo, commit)
    store, _ = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(1, "test_command", None)]["status"] == "validated", rows
    assert rows[(0, "file_diff", "exact")]["status"] == "validated", rows  # the plan, made by the script at replay
    reason = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 1")[0]["reason"]
    assert (f"2 file(s) of .specify/ (an agent's workflow tooling the session used, which {commit[:12]} lacks) taken "
            f"from commit {later[:12]} (2026-01-02)") in reason, reason


def test_tooling_the_commit_holds_in_part_gets_only_the_files_it_lacks(tmp_path):
    """The author committed spec-kit's templates but not its scripts (ship's `ship/.specify/`): the
    script comes from the later commit, the committed template stays as the session's commit has it."""
    repo = tmp_path / "work" / "part"
    own = "# Implementation plan\n\n## Summary\n\n[FEATURE SUMMARY]\n"
    commit = calc_repo(repo, {".specify/templates/plan-template.md": own})
    later = _commit_tooling(repo, "2026-01-02T09:00:00Z")
    b = _session(repo, commit)
    store, _ = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(1, "test_command", None)]["status"] == "validated", rows
    reason = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 1")[0]["reason"]
    assert f"1 file(s) of .specify/ (an agent's workflow tooling the session used, which {commit[:12]} lacks) taken " \
           f"from commit {later[:12]}" in reason, reason


def test_without_a_commit_that_holds_it_the_start_is_known_to_differ(tmp_path):
    repo = tmp_path / "work" / "nokit"
    commit = calc_repo(repo)
    b = _session(repo, commit)
    store, _ = verify_sessions(tmp_path, b)
    reasons = {r["status_reason"] for (index, *_), r in verdicts(store, b).items() if index == 1}
    assert reasons == {"start tree differed from commit (first mismatch: .specify/scripts/bash/setup-plan.sh, a "
                       "script the session ran that the repository does not hold)"}, reasons
