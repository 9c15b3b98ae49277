"""End to end: the real Claude Code CLI (npm) -> session files, checked against the script.

A scripted Messages API (``mock_messages``, driven by ``claude_driver``) makes the real CLI run the
``claude_fixadd`` scenario: a failing unittest (Bash, exit 1) fixed by Read and Edit and rerun
(exit 0), then, resumed with ``--resume``, a second turn adding a function and a test file.  The
session file the CLI wrote must hold every prompt, call, result and text the script made it do,
with the ``tool_use`` ids the mock issued.

The CLI binaries are looked up at ``<repo>/.ci/claude/<version>/node_modules/.bin/claude``
(``.ci/install-claude.sh`` installs them) or under ``$LOGMINE_CLAUDE_PREFIX/<version>/...``; a
missing binary skips the test.  Run with ``pytest -m e2e tests/e2e/test_claude_cli.py``.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from claude_support import (
    chain,
    check_texts,
    check_tool_calls,
    last_message,
    main_and_agents,
    prompt_lines,
    read_project,
    scripted,
    tool_results,
    tool_uses,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import claude_driver as drv  # noqa: E402

pytestmark = pytest.mark.e2e

SCENARIO = "claude_fixadd"


@dataclass
class Live:
    version: str
    run: drv.ClaudeRun
    main: list[dict]  # the session file's lines

    def fail(self, what: str) -> None:
        pytest.fail(f"claude {self.version}: {what}\n{self.run.log()}", pytrace=False)


@pytest.fixture(scope="module", params=drv.VERSIONS, ids=lambda v: f"claude-{v}")
def live(request, tmp_path_factory) -> Live:
    version = request.param
    binary = drv.claude_bin_for(version)
    if not binary.exists():
        pytest.skip(f"Claude Code {version} not installed at {binary} "
                    f"(run .ci/install-claude.sh or set LOGMINE_CLAUDE_PREFIX)")
    for tool in ("node", "git", "python3"):
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` not on PATH; needed to run the Claude Code scenario")
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, env=drv.clean_env(tmp_path_factory.mktemp("home"), ""))
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"Claude Code {version} at {binary} does not start: {e}")
    if version not in out.stdout:
        pytest.skip(f"Claude Code at {binary} does not report {version}: rc={out.returncode} "
                    f"stdout={out.stdout!r} stderr={out.stderr[-500:]!r}")
    scenario, files, _ = drv.load_scenario(SCENARIO)
    run = drv.run_scenario(binary, scenario, files, tmp_path_factory.mktemp(f"claude-{version}"),
                           turn_timeout_s=240)
    live = Live(version, run, [])
    if not run.ok:
        live.fail("the CLI did not complete the scenario")
    if not run.session_files:
        live.fail("the CLI wrote no session file")
    project = run.projects_dir / drv.escape_path(str(run.repo))
    main, _ = main_and_agents(read_project(project), run.session_ids[0])
    live.main = [ln for ln in main if not ln.get("isSidechain")]
    return live


def test_every_request_was_scripted(live: Live):
    steps = [len(t["steps"]) for t in live.run.scenario["turns"]]
    main = [r for r in live.run.requests if str(r.get("script", "")).startswith("main")]
    assert [sum(1 for r in main if r["turn"] == k) for k in range(len(steps))] == steps, live.run.log()
    assert all(r["index"] < steps[r["turn"]] for r in main), "a request fell through to the closing text"
    assert live.run.version == live.version
    calc = (live.run.repo / "calc.py").read_text()
    assert "return a + b" in calc and "def sub(a, b)" in calc, calc
    assert (live.run.repo / "test_sub.py").exists()


def test_the_session_holds_the_prompts_and_resume_continues_it(live: Live):
    prompts = [t["prompt"] for t in live.run.scenario["turns"]]
    found = prompt_lines(live.main, prompts)
    assert all(found), f"prompts missing from the session file: {prompts}"
    assert found[0]["parentUuid"] is None
    assert {ln["sessionId"] for ln in found} == set(live.run.session_ids) == {live.run.session_ids[0]}


def test_the_bash_edit_and_write_calls_and_their_results(live: Live):
    steps = scripted(live.run.scenario)["main"]
    assert check_tool_calls(live.main, steps, set()) == []
    assert check_texts(live.main, steps) == []
    uses = tool_uses(live.main)
    assert [u["id"] for _, u in uses] == [c["id"] for c in live.run.calls()], "tool_use ids differ from the mock's"
    first = uses[0][1]
    assert first["name"] == "Bash" and first["input"]["command"] == "python3 -m unittest -q test_calc"
    line, result = tool_results(live.main)[first["id"]]
    assert result["is_error"] is True and result["content"].startswith("Exit code 1")
    assert "FAILED (failures=1)" in result["content"]
    edit = next(u for _, u in uses if u["name"] == "Edit")
    assert edit["input"]["old_string"] == "return a - b" and edit["input"]["new_string"] == "return a + b"
    line, result = tool_results(live.main)[uses[3][1]["id"]]  # the rerun: exit 0, output kept apart
    assert not result.get("is_error") and result["content"].endswith("OK")
    assert "OK" in line["toolUseResult"]["stdout"] + line["toolUseResult"]["stderr"]


def test_the_parent_chain_runs_from_the_first_prompt_to_the_last_answer(live: Live):
    path = chain(live.main, last_message(live.main))
    assert path[0] is prompt_lines(live.main, [live.run.scenario["turns"][0]["prompt"]])[0]
    on_path = {id(ln) for ln in path}
    results = tool_results(live.main)
    for line, use in tool_uses(live.main):
        assert id(line) in on_path and id(results[use["id"]][0]) in on_path, use
