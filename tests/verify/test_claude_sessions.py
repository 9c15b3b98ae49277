"""Claude Code sessions written by the real CLI become a validated task, an ActObs SFT row and a TMax
bundle that reproduces 0 → 1, as Codex sessions do.

The fixtures (``tests/fixtures/claude-generated``, README there): in the fixadd scenario a scripted
model runs ``python3 -m unittest -q test_calc`` (exit 1), reads calc.py, fixes ``add`` with ``Edit``
and runs the tests again (exit 0); the session is then resumed to add ``sub`` (``Edit``, ``Write``).
2.1.332 records the commit the session started from (abbreviated, in its ``session_context``); the
test makes that repository again (the scenario's files, committed with the driver's fixed identity
and date, so the hash is the recorded one) and maps the recorded cwd to it. 2.0.50 records no
commit: its tasks start from the newest commit made before the session began, where there is one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, query
from export.test_tmax import _reward
from export.tiny_tokenizer import save_tiny_tokenizer

from logmine.export.atif import AtifExportConfig, export_atif
from logmine.export.sft import SftExportConfig, export_sft
from logmine.export.tmax import TmaxExportConfig, export_tmax
from logmine.ingest.run import IngestConfig, ingest
from logmine.sandbox import open_sandbox
from logmine.segment import SegmentConfig, segment

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

ROOT = FIXTURES / "claude-generated"
RECORDED_CWD = "/home/dev/projects/fixadd"
SESSION_2_1, SESSION_2_0 = "85040c61-fead-4d01-98e7-4f7abc959db0", "6b2b77dd-9843-49b2-957c-7e8e2b4c6c88"
FIX_PROMPT = "The add function in calc.py is broken; fix it and make the tests pass"
REPO_DATE = "1796526407 +0000"  # tests/e2e/claude_driver.REPO_DATE: the date of the scenario's commit
TESTS = "python3 -m unittest -q test_calc"
FIX_PATCH = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
             "*** End Patch")


def scenario_repo(path: Path, date: str = REPO_DATE) -> str:
    """The fixadd scenario's repository as the driver made it (files, identity, date); its commit."""
    shutil.copytree(ROOT / "scenario-fixadd" / "repo", path)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(path), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q")
    git("symbolic-ref", "HEAD", "refs/heads/main")
    for key, value in (("user.email", "e2e@example.invalid"), ("user.name", "logmine e2e"),
                       ("commit.gpgsign", "false")):
        git("config", key, value)
    git("add", "-A")
    git("commit", "-q", "-m", "initial state")
    return git("rev-parse", "HEAD")


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    from logmine.verify import VerifyConfig, verify

    tmp = tmp_path_factory.mktemp("claude-sessions")
    repo = tmp / "fixadd"
    commit = scenario_repo(repo)
    store = tmp / "store"
    ingest(IngestConfig(paths=(ROOT,), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    repo_map = ((RECORDED_CWD, str(repo)),)
    summary = verify(VerifyConfig(store=store, jobs=1, env_mode="none", repo_map=repo_map))
    return store, summary, commit, repo_map


def _task(store: Path, session_id: str, index: int) -> str:
    (row,) = query(store, "SELECT task_id FROM tasks WHERE session_id = ? AND index = ?", [session_id, index])
    return row["task_id"]


def _verifiers(store: Path, task_id: str) -> dict[tuple[str, str | None], dict]:
    rows = query(store, "SELECT * FROM verifiers WHERE task_id = ?", [task_id])
    return {(r["kind"], r["mode"]): r for r in rows}


def test_the_recorded_commit_is_the_scenario_repository(verified):
    store, _, commit, _ = verified
    sessions = {r["session_id"]: r["git_commit"] for r in query(
        store, "SELECT session_id, git_commit FROM sessions WHERE session_id IN (?, ?)", [SESSION_2_1, SESSION_2_0])}
    assert sessions[SESSION_2_1] and commit.startswith(sessions[SESSION_2_1])  # abbreviated, as git log prints it
    assert sessions[SESSION_2_0] is None


def test_the_fix_add_task_is_validated_and_graded_by_tests(verified):
    store, summary, _, _ = verified
    task_id = _task(store, SESSION_2_1, 0)
    assert query(store, "SELECT prompt FROM tasks WHERE task_id = ?", [task_id])[0]["prompt"] == FIX_PROMPT
    verifiers = _verifiers(store, task_id)
    test = verifiers[("test_command", None)]
    assert test["command"] == TESTS and test["fail_to_pass"]
    assert (test["status"], test["before_exit_code"], test["after_exit_code"]) == ("validated", 1, 0), test
    assert test["graded_by"] == "tests" and test["test_runner"] == "unittest"
    assert list(test["tests_fail_to_pass"]) == ["test_calc.TestAdd.test_add"] and not list(test["tests_pass_to_pass"])
    assert {verifiers[("file_diff", mode)]["status"] for mode in ("exact", "hunks")} == {"validated"}
    # the resumed turn starts from the commit plus the first turn's Edit, replayed as a patch
    resumed = _verifiers(store, _task(store, SESSION_2_1, 1))[("test_command", None)]
    assert resumed["status"] == "validated" and list(resumed["tests_fail_to_pass"]) == ["test_sub.TestSub.test_sub"]
    assert list(resumed["tests_pass_to_pass"]) == ["test_calc.TestAdd.test_add"]
    assert summary.tasks == 6


def test_a_2_0_session_without_a_commit_before_it_is_not_rebuilt(verified):
    """2.0 records no commit: verify takes the newest commit made before the session began. The
    scenario's commit is dated 5 s after this session's first line: there is none."""
    store, _, _, _ = verified
    rows = query(store, "SELECT v.status, v.status_reason FROM verifiers v JOIN tasks t USING (task_id) "
                        "WHERE t.session_id = ?", [SESSION_2_0])
    assert rows and {r["status"] for r in rows} == {"not_rebuilt"}, rows
    assert all(r["status_reason"].startswith("no commit recorded for the session, and the repository at ")
               for r in rows), rows


def test_a_2_0_session_starts_from_the_newest_commit_before_it(tmp_path):
    """The same repository committed a minute before the 2.0 session began: its fix-add task is
    validated from that commit, graded by tests."""
    from logmine.verify import VerifyConfig, verify

    commit = scenario_repo(tmp_path / "fixadd", date="1796526347 +0000")
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(ROOT / "claude-2.0.50",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    verify(VerifyConfig(store=store, jobs=1, env_mode="none", repo_map=((RECORDED_CWD, str(tmp_path / "fixadd")),)))
    test = _verifiers(store, _task(store, SESSION_2_0, 0))[("test_command", None)]
    assert (test["status"], test["graded_by"]) == ("validated", "tests"), test
    (note,) = query(store, "SELECT reason FROM verified WHERE task_id = ?", [test["task_id"]])
    assert note["reason"].startswith(f"no commit recorded: started from {commit[:12]}"), note


def _calls(messages: list[dict]) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in messages if m["role"] == "assistant" for c in m["tool_calls"] or ()]


def _example(out: Path, task_id: str) -> dict:
    rows = [r for p in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]
    return next(r for r in rows if r["task_id"] == task_id)


def test_sft_maps_edits_to_apply_patch_and_bash_with_actobs_weights(verified, tmp_path):
    store, _, _, _ = verified
    tokenizer = save_tiny_tokenizer(tmp_path / "tok")
    out = tmp_path / "sft"
    summary = export_sft(SftExportConfig(store=store, out=out, tokenizer=tokenizer, lam=0.5))
    assert summary.examples == summary.token_examples == 2  # the two validated tasks of the 2.1 session
    task_id = _task(store, SESSION_2_1, 0)
    row = _example(out, task_id)
    assert [t["function"]["name"] for t in json.loads(row["tools"])] == ["bash", "apply_patch"]
    assert _calls(row["messages"]) == [("bash", {"command": TESTS}), ("apply_patch", {"patch": FIX_PATCH}),
                                       ("bash", {"command": TESTS})]
    tool_results = [m["content"] for m in row["messages"] if m["role"] == "tool"]
    assert tool_results[0].endswith("FAILED (failures=1)\n[exit code: 1]") and tool_results[2].endswith("OK\n[exit code: 0]")
    assert row["messages"][-1]["content"].startswith("Fixed `add` in calc.py")
    tokens = [r for p in sorted((out / "tokens").glob("*.parquet")) for r in pq.read_table(p).to_pylist()
              if r["task_id"] == task_id]
    assert tokens
    weight = {"action": 1.0, "observation": 0.5, "prompt": 0.0, "scaffold": 0.0}
    for tok in tokens:
        assert tok["loss_weights"] == [weight[s] for s in tok["source"]]
        assert tok["n_action_tokens"] > 0 and tok["n_observation_tokens"] > 0
    # the resumed task's Write is an added file, its paths relative to the session's cwd
    resumed = _calls(_example(out, _task(store, SESSION_2_1, 1))["messages"])
    assert [name for name, _ in resumed] == ["apply_patch", "apply_patch", "bash"]
    assert resumed[1][1]["patch"].startswith("*** Begin Patch\n*** Add File: test_sub.py\n+import unittest\n")


def test_sft_raw_tools_keep_claude_codes_own_calls(verified, tmp_path):
    store, _, _, _ = verified
    export_sft(SftExportConfig(store=store, out=tmp_path / "raw", tools="raw"))
    row = _example(tmp_path / "raw", _task(store, SESSION_2_1, 0))
    calls = _calls(row["messages"])
    assert [name for name, _ in calls] == ["Bash", "Read", "Edit", "Bash"]
    assert calls[2][1] == {"replace_all": False, "file_path": f"{RECORDED_CWD}/calc.py",
                           "old_string": "return a - b", "new_string": "return a + b"}
    assert calls[0][1] == {"command": TESTS, "description": "Run the unit tests"}
    assert sorted(t["function"]["name"] for t in json.loads(row["tools"])) == ["Bash", "Edit", "Read"]


def test_tmax_bundle_reproduces_zero_then_one(verified, tmp_path):
    store, _, _, repo_map = verified
    out = tmp_path / "tmax"
    summary = export_tmax(TmaxExportConfig(store=store, out=out, repo_map=repo_map))
    assert summary.rows == summary.reproduced == 2 and not summary.rejects, summary
    bundle = out / "tasks" / _task(store, SESSION_2_1, 0)
    assert json.loads((bundle / "tests/tests.json").read_text())["fail_to_pass"] == ["test_calc.TestAdd.test_add"]
    with open_sandbox(bundle / "environment/seeds", mount_at="/workspace") as box:
        assert _reward(box, bundle, solve=False) == "0"
    with open_sandbox(bundle / "environment/seeds", mount_at="/workspace") as box:
        assert _reward(box, bundle, solve=True) == "1"


def test_atif_trajectories_name_claude_code(verified, tmp_path):
    store, _, _, _ = verified
    summary = export_atif(AtifExportConfig(store=store, out=tmp_path / "atif"))
    assert summary.trajectories == 6  # every task, validated or not
    doc = json.loads((tmp_path / "atif/trajectories" / f"{_task(store, SESSION_2_1, 0)}.json").read_text())
    assert doc["agent"]["name"] == "claude-code" and doc["agent"]["version"] == "2.1.332"
    names = [c["function_name"] for step in doc["steps"] for c in step.get("tool_calls") or ()]
    assert names == ["bash", "apply_patch", "bash"]
