"""The committed Claude Code fixtures (tests/fixtures/claude-generated) hold what was scripted.

Each ``claude-<version>/`` was written by the real CLI of that version, driven by a scripted model
(``tests/e2e/claude_driver.py``).  Read here with plain ``json``, one scripted thing at a time: every
prompt, command, exit status, output, edit, write and text of ``scenario-<name>/scenario.json`` is
in the session files, the ``uuid``/``parentUuid`` chain links them in order, and the sub-agent's
lines are a sidechain of the session.  So the fixtures are known-good input for a Claude Code reader.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from claude_support import (
    blocks,
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

ROOT = Path(__file__).parent / "fixtures" / "claude-generated"
VERSION_DIRS = sorted(p for p in ROOT.glob("claude-*") if p.is_dir())
CASES = [(d.name, name) for d in VERSION_DIRS
         for name in json.loads((d / "manifest.json").read_text())["scenarios"]]


@dataclass
class Case:
    version: str
    entry: dict                     # the manifest's entry for the scenario
    scenario: dict                  # scenario.json, ${REPO} filled with the fixture's repo path
    files: dict[str, list[dict]]    # the project folder's files
    main: list[dict]                # the session's own lines, sidechain lines left out
    skipped: dict[str, set[str]]    # script -> tools the CLI did not offer

    @property
    def session_id(self) -> str:
        return self.entry["turns"][0]["session_id"]


@pytest.fixture(params=CASES, ids=[f"{v}-{n}" for v, n in CASES])
def case(request) -> Case:
    vdir, name = request.param
    manifest = json.loads((ROOT / vdir / "manifest.json").read_text())
    entry = manifest["scenarios"][name]
    text = (ROOT / f"scenario-{name}" / "scenario.json").read_text()
    scenario = json.loads(text.replace("${REPO}", entry["repo"]))
    folder = {Path(f).parts[1] for f in entry["files"]}
    assert len(folder) == 1, entry["files"]
    files = read_project(ROOT / vdir / "projects" / folder.pop())
    main, _ = main_and_agents(files, entry["turns"][0]["session_id"])
    skipped: dict[str, set[str]] = {}
    for c in entry["calls"]:
        if c.get("skipped"):
            skipped.setdefault(c["script"].split(":")[0] if c["script"].startswith("main") else c["script"],
                               set()).add(c["tool"])
    return Case(manifest["version"], entry, scenario, files,
                [ln for ln in main if not ln.get("isSidechain")], skipped)


def test_there_are_two_versions_about_a_year_apart():
    versions = [d.name.removeprefix("claude-") for d in VERSION_DIRS]
    assert len(versions) >= 2, versions
    assert {n for _, n in CASES} >= {"fixadd", "subagent"}


def test_the_manifest_lists_every_file_and_the_files_are_of_their_version(case: Case):
    vdir = ROOT / f"claude-{case.version}"
    on_disk = {p.relative_to(vdir).as_posix() for p in vdir.rglob("*.jsonl")
               if Path(case.entry["files"][0]).parts[1] in p.parts}
    assert on_disk == set(case.entry["files"])
    for lines in case.files.values():
        assert {ln["version"] for ln in lines if "version" in ln} <= {case.version}
        assert {ln["cwd"] for ln in lines if "cwd" in ln} <= {case.entry["repo"]}
    assert all(t["returncode"] == 0 for t in case.entry["turns"])


def test_every_prompt_is_a_user_line_of_the_session(case: Case):
    prompts = [t["prompt"] for t in case.scenario["turns"]]
    found = prompt_lines(case.main, prompts)
    assert all(found), f"prompts missing: {[p for p, f in zip(prompts, found) if f is None]}"
    for turn, line in zip(case.entry["turns"], found):
        assert line["sessionId"] == turn["session_id"]
        assert isinstance(line["message"]["content"], str)  # a typed prompt is a plain string
    assert found[0]["parentUuid"] is None  # the first prompt is the root
    for k in range(1, len(found)):  # a resumed turn continues from the last answer of the turn before
        parent = next(ln for ln in case.main if ln.get("uuid") == found[k]["parentUuid"])
        before = [ln for ln in case.main[:case.main.index(found[k])] if ln.get("type") == "assistant"]
        assert parent is before[-1], (found[k], parent)


def test_every_scripted_tool_call_and_result_of_the_session(case: Case):
    problems = check_tool_calls(case.main, scripted(case.scenario)["main"], case.skipped.get("main", set()))
    assert problems == []


def test_every_scripted_text_and_thought(case: Case):
    assert check_texts(case.main, scripted(case.scenario)["main"]) == []


def test_the_parent_chain_links_every_prompt_call_and_result_in_order(case: Case):
    for lines in case.files.values():
        uuids = [ln["uuid"] for ln in lines if ln.get("uuid")]
        assert len(uuids) == len(set(uuids)), "uuids repeat within a file"
    path = chain(case.main, last_message(case.main))
    assert path[0]["parentUuid"] is None and path[0] is prompt_lines(case.main, [case.scenario["turns"][0]["prompt"]])[0]
    on_path = {id(ln) for ln in path}
    wanted = prompt_lines(case.main, [t["prompt"] for t in case.scenario["turns"]])
    results = tool_results(case.main)
    for line, use in tool_uses(case.main):
        wanted += [line, results[use["id"]][0]]
    assert all(id(ln) in on_path for ln in wanted), "a prompt, call or result is off the chain"
    positions = [path.index(ln) for ln in wanted[:len(case.scenario["turns"])]]
    assert positions == sorted(positions)


def _agent_files(case: Case) -> dict[str, list[dict]]:
    """agentId -> the lines of its file, for each Task/Agent call of the session."""
    results = tool_results(case.main)
    out = {}
    for _, use in tool_uses(case.main):
        if use["name"] in ("Task", "Agent"):
            agent_id = results[use["id"]][0]["toolUseResult"]["agentId"]
            rel = next(r for r in case.files if Path(r).name == f"agent-{agent_id}.jsonl")
            out[agent_id] = case.files[rel]
    return out


def test_the_sub_agent_is_a_sidechain_with_its_scripted_calls(case: Case):
    steps = scripted(case.scenario)
    agents = _agent_files(case)
    assert len(agents) == len(steps) - 1
    for n, (agent_id, lines) in enumerate(agents.items()):
        messages = [ln for ln in lines if ln.get("type") in ("user", "assistant")]
        assert messages and all(ln["isSidechain"] is True for ln in messages)
        assert {ln["sessionId"] for ln in lines} == {case.session_id}
        assert {ln.get("agentId") for ln in messages} == {agent_id}
        path = chain(lines, last_message(lines, sidechain=True))
        assert path[0]["parentUuid"] is None
        if path[0]["type"] == "user":  # 2.1 writes the sub-agent's prompt; 2.0 starts at its first answer
            task = next(st for st in steps["main"] if "agent" in st)
            assert blocks(path[0])[0]["text"] == task["input"]["prompt"]
        assert all(ln in path for ln in messages), "a sidechain message is off the chain"
        assert check_tool_calls(lines, steps[f"agent:{n}"], case.skipped.get(f"agent:{n}", set())) == []
        assert check_texts(lines, steps[f"agent:{n}"]) == []


LEAK = re.compile(r"/tmp/(?!claude-1000/)|/work/|/root/|sk-ant-")


def test_no_machine_path_or_credential(case: Case):
    vdir = ROOT / f"claude-{case.version}"
    for rel in case.entry["files"]:
        text = (vdir / rel).read_text()
        m = LEAK.search(text)
        assert m is None, f"{rel}: {text[max(0, m.start() - 80):m.end() + 80]!r}"
