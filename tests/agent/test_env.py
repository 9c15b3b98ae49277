"""The task environment: a persistent shell in bubblewrap, grading at submission, unscored ≠ 0."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from logmine.agent.env import EnvConfig, TaskEnv
from logmine.agent.tools import ToolCall
from logmine.protocol import SUBMIT

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

TEST_SH = """#!/bin/bash
mkdir -p "$LOGS_DIR"
cd "$WORKSPACE"
if [ "$(cat answer.txt 2>/dev/null)" = 42 ]; then echo 1 > "$LOGS_DIR/reward.txt"
else echo 0 > "$LOGS_DIR/reward.txt"; fi
"""


def bash(command: str) -> ToolCall:
    return ToolCall("bash", {"command": command})


@pytest.fixture
def bundle(tmp_path) -> Path:
    root = tmp_path / "task"
    (root / "environment/seeds").mkdir(parents=True)
    (root / "environment/seeds/README").write_text("start\n")
    (root / "tests/hidden").mkdir(parents=True)
    (root / "tests/test.sh").write_text(TEST_SH)
    (root / "tests/hidden/secret_test.py").write_text("EXPECTED = 42\n")
    return root


def test_shell_persists_cwd_and_exports_and_reports_exit_codes(bundle):
    with TaskEnv.open(bundle, EnvConfig()) as env:
        assert env.execute(bash("cat README")).observation == "start\n[exit code: 0]"
        assert env.execute(bash("mkdir d && cd d && export X=7")).observation == "[exit code: 0]"
        assert env.execute(bash("pwd; echo $X")).observation == "/workspace/d\n7\n[exit code: 0]"
        assert env.execute(bash("false")).observation == "[exit code: 1]"


def test_submission_grades_with_the_hidden_tests(bundle):
    with TaskEnv.open(bundle, EnvConfig()) as env:
        env.execute(bash("echo 42 > answer.txt"))
        step = env.execute(bash(f"echo {SUBMIT}"))
    assert step.done and step.reward == 1.0 and step.unscored is None
    with TaskEnv.open(bundle, EnvConfig()) as env:
        step = env.execute(bash(f"echo 41 > answer.txt; echo {SUBMIT}"))
    assert step.done and step.reward == 0.0 and step.unscored is None


def test_hidden_tests_are_not_visible_before_submission(bundle):
    with TaskEnv.open(bundle, EnvConfig()) as env:
        step = env.execute(bash(f"find / -name 'secret_test.py' -not -path '/proc/*' 2>/dev/null; "
                                f"grep -rl 'EXPECTED = 42' /workspace /tmp 2>/dev/null; ls -a /workspace; ls {bundle}"))
        assert "secret_test.py" not in step.observation and "EXPECTED" not in step.observation
        assert "test.sh" not in step.observation


def test_a_reward_file_planted_by_the_agent_does_not_count(bundle):
    with TaskEnv.open(bundle, EnvConfig()) as env:
        step = env.execute(bash("for d in .logmine-grade-x logs; do mkdir -p $d; echo 1 > $d/reward.txt; done; "
                                f"(sleep 1; echo 1 > /workspace/answer.txt) & echo {SUBMIT}"))
    assert step.reward == 0.0  # the background writer was ended before the tests ran


def test_timeout_restarts_the_shell_and_the_workspace_stays(bundle):
    with TaskEnv.open(bundle, EnvConfig(command_timeout_s=1.0)) as env:
        env.execute(bash("echo kept > f.txt"))
        step = env.execute(bash("sleep 30"))
        assert "timed out after 1 s" in step.observation and not step.done
        assert env.execute(bash("cat f.txt")).observation == "kept\n[exit code: 0]"
        env.execute(bash("exit 3"))
        assert env.execute(bash("pwd")).observation == "/workspace\n[exit code: 0]"


def test_unknown_tool_is_an_observation_not_a_crash(bundle):
    with TaskEnv.open(bundle, EnvConfig()) as env:
        step = env.execute(ToolCall("python", {"code": "1"}))
    assert step.observation == "Unknown tool or arguments: python(code). Use `bash` (command)." and not step.done


def test_a_grader_that_cannot_finish_is_unscored_or_zero_as_configured(bundle):
    (bundle / "tests/test.sh").write_text("sleep 30\n")
    with TaskEnv.open(bundle, EnvConfig(test_timeout_s=1.0, test_timeout_reward=None)) as env:
        step = env.execute(bash(f"echo {SUBMIT}"))
    assert step.done and step.reward is None and step.unscored == "grader: timed out"
    with TaskEnv.open(bundle, EnvConfig(test_timeout_s=1.0)) as env:
        step = env.execute(bash(f"echo {SUBMIT}"))
    assert step.done and step.reward == 0.0 and step.unscored is None


def test_apply_patch_tool_when_enabled(bundle):
    patch = "*** Begin Patch\n*** Add File: answer.txt\n+42\n*** End Patch"
    with TaskEnv.open(bundle, EnvConfig(apply_patch=True)) as env:
        assert env.execute(ToolCall("apply_patch", {"patch": patch})).observation.endswith("[exit code: 0]")
        assert env.execute(bash(f"echo {SUBMIT}")).reward == 1.0


def test_permissions_taken_from_the_workspace_do_not_block_grading(bundle):
    with TaskEnv.open(bundle, EnvConfig()) as env:
        env.execute(bash("echo 42 > answer.txt; mkdir -p d/e"))
        step = env.execute(bash(f"chmod 000 d/e d; chmod 500 /workspace; echo {SUBMIT}"))
    assert step.done and step.unscored is None and step.reward == 1.0
