"""A patch that does not apply after an earlier shell edit failed at replay is blamed on that edit only
when the edit could have written the file: it names the file or its folder, or runs a project script.
An install that failed (``pnpm: command not found``) does not explain a patch of a spec document: the
file is as the start had it, so the author's start differed."""

from __future__ import annotations

import pytest

from logmine.patch import parse_patch
from logmine.workspace.edits import FailedEdit, NotRebuilt, StartDiffered, explain, missing_script

PATCH = "*** Begin Patch\n*** Update File: specs/plan.md\n@@\n-draft\n+final\n*** End Patch\n"


@pytest.mark.parametrize(("command", "blamed"), [
    ("pnpm install", False),
    ("pnpm build:shared", False),
    ("rm -f .git/config.lock && pnpm install", False),
    ("sed -i 's/x/draft/' specs/plan.md", True),
    ("mkdir -p specs && cp template.md specs/", True),
    (".specify/scripts/bash/setup-plan.sh --json", True),
    ("./scripts/gen.sh", True),
    ("python3 tools/make_docs.py", True),
    ("pnpm run generate", True),
    ("npx prettier --write .", True),
])
def test_a_failed_edit_is_blamed_only_when_it_could_have_made_the_file(tmp_path, command, blamed):
    start, now = tmp_path / "start", tmp_path / "now"
    for tree in (start, now):
        (tree / "specs").mkdir(parents=True)
        (tree / "specs" / "plan.md").write_text("outline\n")  # the patch expects "draft"
    failed = [FailedEdit(12, "exit 127: bash: line 1: pnpm: command not found", command)]
    assert failed[0].may_have_made("specs/plan.md") is blamed
    with pytest.raises(NotRebuilt) as raised:
        explain(parse_patch(PATCH), now, start, failed_before=failed)
    if blamed:
        assert not isinstance(raised.value, StartDiffered)
        assert str(raised.value) == ("a patch of specs/plan.md does not apply after an earlier shell edit failed "
                                     "at replay (seq 12 (exit 127: bash: line 1: pnpm: command not found))")
    else:
        assert isinstance(raised.value, StartDiffered), raised.value


@pytest.mark.parametrize(("why", "script"), [
    ("exit 127: bash: line 1: .specify/scripts/bash/setup-plan.sh: No such file or directory",
     ".specify/scripts/bash/setup-plan.sh"),
    ("exit 127: bash: line 1: ./ship/.specify/scripts/bash/setup-plan.sh: No such file or directory",
     "./ship/.specify/scripts/bash/setup-plan.sh"),
    ("exit 127: bash: line 5: /tmp/tf_config_check: No such file or directory", None),  # not the project's
    ("exit 127: bash: line 1: pnpm: command not found", None),
    ("exit 1", None),
])
def test_a_project_script_the_session_ran_and_the_tree_lacks_shows_a_different_start(tmp_path, why, script):
    """spec-kit's ``.specify/`` was on the author's disk, never committed: its script fails at replay
    ("No such file or directory") and the patches of the files it made fail after it. That is a start
    tree known to differ, not a replay gap."""
    now = tmp_path / "now"
    (now / "specs").mkdir(parents=True)
    failed = [FailedEdit(7, why, ".specify/scripts/bash/setup-plan.sh --json")]
    assert failed[0].missing_script() == script
    with pytest.raises(NotRebuilt) as raised:
        explain(parse_patch(PATCH), now, now, failed_before=failed)
    if script:
        assert isinstance(raised.value, StartDiffered)
        assert str(raised.value) == (f"start tree differed from commit (first mismatch: {script}, a script the "
                                     "session ran that the repository does not hold)")
    else:
        assert not isinstance(raised.value, StartDiffered), raised.value


def test_a_missing_script_after_a_failed_command_that_could_not_have_made_it_still_shows_the_start():
    """ship's replay: `pnpm install` failed first (no network), then spec-kit's setup-plan.sh was not
    there. The install could not have made the script; another project script that failed before it
    could have (a script may write anything)."""
    install = FailedEdit(3, "exit 127: bash: line 1: pnpm: command not found", "pnpm install")
    script = FailedEdit(7, "exit 127: bash: line 1: .specify/scripts/bash/setup-plan.sh: No such file or directory",
                        ".specify/scripts/bash/setup-plan.sh --json")
    init = FailedEdit(2, "exit 1", "bash scripts/bootstrap.sh")
    assert missing_script([install, script]) == ".specify/scripts/bash/setup-plan.sh"
    assert missing_script([init, script]) is None  # the bootstrap may have made it: a replay gap
