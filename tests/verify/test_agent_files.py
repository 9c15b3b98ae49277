"""An agent's own files are never the project's: a session that patched ``.codex/prompts/…`` (a file
its author's repository ignored) replays without them, earlier work and the task's own alike."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import FIX, TESTS, calc_repo
from conftest import query
from session_builder import SessionBuilder, segmented

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

PROMPT = "*** Begin Patch\n*** Update File: .codex/prompts/speckit.tasks.md\n@@\n-old step\n+new step\n*** End Patch\n"


def test_patches_of_agent_files_the_clone_lacks_are_left_out_of_the_replay(tmp_path):
    from logmine.verify import VerifyConfig, verify

    repo = tmp_path / "work" / "proj"
    commit = calc_repo(repo)
    own = FIX.replace("*** End Patch\n", PROMPT.split("\n", 1)[1])  # the fix also touches the agent's prompt
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("Tune the tasks prompt").patch(PROMPT).agent("Done.")
         .user("Fix add").run(TESTS, 1).patch(own).run(TESTS, 0).agent("Fixed."))
    store, _ = segmented(tmp_path, b)
    verify(VerifyConfig(store=store, jobs=1))
    rows = query(store, "SELECT t.index, v.kind, v.status, v.status_reason FROM verifiers v JOIN tasks t USING (task_id) "
                        "WHERE t.index = 1 AND v.kind = 'test_command'")
    assert [r["status"] for r in rows] == ["validated"], rows
    assert "patch" not in (rows[0]["status_reason"] or ""), rows  # nothing failed to apply
