"""A bundle is checked before it ships: reward 0 on its seeds and 1 after its solution, or rejected with why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from logmine.environment.detect import Environment
from logmine.export.check import check_bundle

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

TEST_SH = """#!/bin/bash
mkdir -p "$LOGS_DIR"; cd "$WORKSPACE"
if {check}; then echo 1 > "$LOGS_DIR/reward.txt"; else echo 0 > "$LOGS_DIR/reward.txt"; fi
"""


def _bundle(tmp_path: Path, check: str, solve: str) -> Path:
    bundle = tmp_path / "t"
    (bundle / "environment" / "seeds").mkdir(parents=True)
    (bundle / "environment" / "seeds" / "answer.txt").write_text("no\n")
    (bundle / "tests").mkdir()
    (bundle / "tests" / "test.sh").write_text(TEST_SH.format(check=check))
    (bundle / "solution").mkdir()
    (bundle / "solution" / "solve.sh").write_text("#!/bin/bash\ncd \"$WORKSPACE\"\n" + solve + "\n")
    return bundle


def test_a_bundle_that_reproduces_passes(tmp_path):
    bundle = _bundle(tmp_path, "grep -q yes answer.txt", "echo yes > answer.txt")
    assert check_bundle(bundle, Environment(), None).problem is None


def test_a_solution_with_a_patch_that_did_not_apply_is_rejected(tmp_path):
    bundle = _bundle(tmp_path, "grep -q yes answer.txt",
                     "# patch 2 did not apply when the bundle was made: context not found\necho yes > answer.txt")
    assert check_bundle(bundle, Environment(), None).problem == (
        "solution incomplete: patch 2 did not apply when the bundle was made: context not found")


def test_a_task_that_read_a_left_out_env_file_is_rejected(tmp_path):
    bundle = _bundle(tmp_path, "grep -q yes answer.txt", ". ./.env && echo $ANSWER > answer.txt")
    checked = check_bundle(bundle, Environment(), None, left_out=[".env"],
                           commands=[". ./.env && echo $ANSWER > answer.txt"])
    assert checked.problem == ("does not reproduce: reward 0 after solution/solve.sh "
                               "(the task uses .env, left out of the seeds)")


def test_a_bundle_already_solved_on_its_seeds_is_rejected(tmp_path):
    bundle = _bundle(tmp_path, "grep -q no answer.txt", "true")
    assert check_bundle(bundle, Environment(), None).problem == (
        "does not reproduce: reward 1 on the seeds (expected 0)")


def test_a_solution_that_does_not_parse_is_rejected(tmp_path):
    bundle = _bundle(tmp_path, "grep -q yes answer.txt", "(echo yes > answer.txt\n(cd . && true")
    assert check_bundle(bundle, Environment(), None).problem.startswith("solution does not parse: ")
