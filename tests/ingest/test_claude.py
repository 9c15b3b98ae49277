"""Claude Code session files are ingested as format ``claude``, each scripted thing where it belongs.

The fixtures (``tests/fixtures/claude-generated``) were written by the real CLI, 2.0.50 and 2.1.332,
driven by a scripted model: ingested into a real store, every scenario's prompts, tool calls (name,
command, exit code) and file edits are compared with ``scenario-<name>/scenario.json``, one by one.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from claude_support import ClaudeLines
from conftest import FIXTURES, query
from redact.leaks import find_leaks
from redact.planted import planted
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.ingest.claude import NO_FILE_OP
from logmine.ingest.discover import default_inputs
from logmine.ingest.records import Event
from logmine.ingest.run import IngestConfig, ingest
from logmine.patch import apply_patch

ROOT = FIXTURES / "claude-generated"
VERSIONS = sorted(json.loads((d / "manifest.json").read_text())["version"] for d in ROOT.glob("claude-*"))
CASES = [(v, name) for v in VERSIONS for name in json.loads((ROOT / f"claude-{v}/manifest.json").read_text())["scenarios"]]
ALIASES = {"Task": {"Task", "Agent"}}
FIXADD_SESSION_2_0 = ROOT / "claude-2.0.50/projects/-home-dev-projects-fixadd/6b2b77dd-9843-49b2-957c-7e8e2b4c6c88.jsonl"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, object]:
    store = tmp_path_factory.mktemp("claude") / "store"
    return store, ingest(IngestConfig(paths=(ROOT,), store=store, jobs=1))


@dataclass
class Case:
    version: str
    entry: dict  # the manifest's entry
    scenario: dict  # scenario.json with ${REPO} filled in
    skipped: set[str]  # tools the CLI did not offer

    @property
    def session_id(self) -> str:
        return self.entry["turns"][0]["session_id"]

    def steps(self, conversation: str = "main") -> list[dict]:
        """The scripted tool steps of the main conversation, or of the sub-agent, in order."""
        steps = []
        for turn in self.scenario["turns"]:
            for response in turn["steps"]:
                for step in response:
                    if conversation == "main" and "tool" in step and step["tool"] not in self.skipped:
                        steps.append(step)
                    for agent_response in step.get("agent", ()) if conversation == "agent" else ():
                        steps += [s for s in agent_response if "tool" in s]
        return steps


@pytest.fixture(params=CASES, ids=[f"{v}-{n}" for v, n in CASES])
def case(request) -> Case:
    version, name = request.param
    entry = json.loads((ROOT / f"claude-{version}/manifest.json").read_text())["scenarios"][name]
    scenario = json.loads((ROOT / f"scenario-{name}/scenario.json").read_text().replace("${REPO}", entry["repo"]))
    skipped = {c["tool"] for c in entry["calls"] if c.get("skipped")}
    return Case(version, entry, scenario, skipped)


def _events(store: Path, session_id: str) -> list[Event]:
    rows = query(store, "SELECT * FROM events WHERE session_id = ? ORDER BY source_path, seq", [session_id])
    return [Event.from_row(row) for row in rows]


def _calls(store: Path, session_id: str) -> list[dict]:
    return query(store, "SELECT * FROM tool_calls WHERE session_id = ? ORDER BY seq", [session_id])


def test_every_file_is_read_as_claude_without_quarantine(store):
    path, summary = store
    assert summary.formats == {"claude": sum(1 for p in ROOT.rglob("*.jsonl") if p.stat().st_size)}
    assert summary.changes["empty"] == 1 and summary.bad_files == [] and summary.quarantined == 0
    assert query(path, "SELECT count(*) AS n FROM quarantine")[0]["n"] == 0
    formats = query(path, "SELECT format, count(*) AS n FROM files GROUP BY ALL")
    assert {r["format"]: r["n"] for r in formats} == {"claude": summary.formats["claude"], None: 1}


def test_the_session_row(store, case):
    path, _ = store
    [session] = query(path, "SELECT * FROM sessions WHERE session_id = ?", [case.session_id])
    assert session["format"] == "claude" and session["cli_version"] == case.version
    assert session["cwd"] == case.entry["repo"] and session["git_branch"] == "main"
    assert session["model"] and session["parent_session_id"] is None
    assert Path(session["source_path"]).name == f"{case.session_id}.jsonl"


def test_the_prompts_in_order_and_a_resume_continues_the_session(store, case):
    path, _ = store
    assert {t["session_id"] for t in case.entry["turns"]} == {case.session_id}  # --resume: the same session
    prompts = [e for e in _events(path, case.session_id) if e.kind == "user_message" and not e.is_injected]
    assert [e.text for e in prompts] == [t["prompt"] for t in case.scenario["turns"]]
    assert len({e.turn_id for e in prompts}) == len(prompts)


def test_the_tool_calls_with_their_commands_and_exit_codes(store, case):
    path, _ = store
    calls = _calls(path, case.session_id)
    steps = case.steps()
    assert len(calls) == len(steps)
    for call, step in zip(calls, steps):
        assert call["tool_name"] in ALIASES.get(step["tool"], {step["tool"]})
        assert json.loads(call["arguments"]).items() >= {k: v for k, v in step["input"].items()}.items()
        if step["tool"] == "Bash":
            assert call["command"] == step["input"]["command"] and call["workdir"] == case.entry["repo"]
            assert call["exit_code"] == step.get("expect_exit", 0) and call["failed"] == (call["exit_code"] != 0)
            assert step["expect_output"] in call["output"]
        if step["tool"] in ("Edit", "Write"):
            assert call["exit_code"] == 0


def test_the_file_edits_replay_to_the_scripted_files(store, case, tmp_path):
    """The ``patch`` events, applied in order to the scenario's repository, leave the files that the
    scripted Edit (exact-string replacement) and Write calls leave."""
    path, _ = store
    expected, replayed = tmp_path / "expected", tmp_path / "replayed"
    for tree in (expected, replayed):
        shutil.copytree(ROOT / f"scenario-{case.scenario['name']}/repo", tree)
    for step in case.steps():
        if step["tool"] in ("Edit", "Write"):
            target = expected / Path(step["input"]["file_path"]).relative_to(case.entry["repo"])
        if step["tool"] == "Write":
            target.write_text(step["input"]["content"])
        elif step["tool"] == "Edit":
            text = target.read_text()
            assert text.count(step["input"]["old_string"]) == 1
            target.write_text(text.replace(step["input"]["old_string"], step["input"]["new_string"]))
    ops = [e.file_op for e in _events(path, case.session_id) if e.kind == "patch"]
    assert len(ops) == sum(s["tool"] in ("Edit", "Write") for s in case.steps())
    for op in ops:
        relative = op.path.removeprefix(case.entry["repo"] + "/")
        apply_patch([op.__class__(op.op, relative, hunks=op.hunks, content=op.content)], replayed)
    files = {p.relative_to(expected): p.read_text() for p in expected.rglob("*") if p.is_file()}
    assert {p.relative_to(replayed): p.read_text() for p in replayed.rglob("*") if p.is_file()} == files


def test_the_sub_agent_is_a_session_linked_to_its_parent(store, case):
    path, _ = store
    agents = case.steps("agent")
    subs = query(path, "SELECT * FROM sessions WHERE parent_session_id = ? AND source = 'subagent'",
                 [case.session_id])
    if not agents:
        assert subs == []
        return
    [sub] = subs
    assert sub["session_id"].startswith(f"{case.session_id}:agent-") and sub["cli_version"] == case.version
    [task] = [c for c in _calls(path, case.session_id) if c["tool_name"] in ("Task", "Agent")]
    [link] = query(path, "SELECT exec_session_id FROM events WHERE kind = 'tool_output' AND call_id = ? "
                         "AND session_id = ?", [task["call_id"], case.session_id])
    assert link["exec_session_id"] == sub["session_id"]
    calls = _calls(path, sub["session_id"])
    assert [(c["command"], c["exit_code"]) for c in calls] == [(s["input"]["command"], s["expect_exit"]) for s in agents]


def test_warm_up_agents_are_side_sessions_marked_as_such(store):
    path, _ = store
    warm = query(path, "SELECT s.*, (SELECT count(*) FROM events e WHERE e.session_id = s.session_id) AS n "
                       "FROM sessions s WHERE source = 'subagent:warmup'")
    assert len(warm) == 6 and {w["cli_version"] for w in warm} == {"2.0.50"}  # 2.1 writes none
    assert all(w["parent_session_id"] and w["n"] >= 1 for w in warm)


def test_an_unchanged_store_reads_nothing_again(store):
    path, _ = store
    again = ingest(IngestConfig(paths=(ROOT,), store=path, jobs=1))
    assert again.events == 0 and again.sessions == 0 and again.bytes_read == 0
    assert again.changes["unchanged"] == again.files_seen


def test_a_grown_file_resumes_where_it_stopped(tmp_path):
    """Cut between a Bash call and its result: the result read later still gets the call's exit code."""
    lines = FIXADD_SESSION_2_0.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"name": "Bash"' in line or b'"name":"Bash"' in line) + 1
    grown = tmp_path / "in" / FIXADD_SESSION_2_0.name
    grown.parent.mkdir()
    grown.write_bytes(b"".join(lines[:cut]))
    ingest(IngestConfig(paths=(grown.parent,), store=tmp_path / "grown"))
    grown.write_bytes(b"".join(lines))
    second = ingest(IngestConfig(paths=(grown.parent,), store=tmp_path / "grown"))
    assert second.changes["grown"] == 1
    ingest(IngestConfig(paths=(FIXADD_SESSION_2_0,), store=tmp_path / "whole"))
    columns = "seq, kind, record_type, turn_id, call_id, command, exit_code, status, patch_op, text"
    sql = f"SELECT {columns} FROM events ORDER BY seq"
    assert query(tmp_path / "grown", sql) == query(tmp_path / "whole", sql)


def test_a_planted_secret_is_redacted_in_the_store(tmp_path):
    secrets = planted()
    lines = [json.loads(line) for line in FIXADD_SESSION_2_0.read_text().splitlines()]
    for line, secret in zip((ln for ln in lines if ln.get("type") in ("user", "assistant")), secrets * 3):
        for block in line["message"]["content"] if isinstance(line["message"]["content"], list) else ():
            if block.get("type") == "tool_use" and block["name"] == "Bash":
                block["input"]["command"] += f" # {secret.text}"
            elif block.get("type") == "tool_result" and isinstance(block["content"], str):
                block["content"] += "\n" + secret.text
            elif block.get("type") == "text":
                block["text"] += " " + secret.text
        if isinstance(line["message"]["content"], str):
            line["message"]["content"] += " " + secret.text
    copy = tmp_path / "in" / FIXADD_SESSION_2_0.name
    copy.parent.mkdir()
    copy.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = ingest(IngestConfig(paths=(copy,), store=tmp_path / "store"))
    assert summary.formats == {"claude": 1} and sum(summary.redactions.values()) > 0
    assert find_leaks([tmp_path / "store"], {n for s in secrets for n in s.needles}) == []


def test_unknown_lines_are_quarantined_and_the_rest_kept(tmp_path):
    lines = FIXADD_SESSION_2_0.read_text().splitlines()
    odd = json.dumps({"type": "brand-new-kind", "sessionId": "6b2b77dd-9843-49b2-957c-7e8e2b4c6c88", "x": 1})
    copy = tmp_path / FIXADD_SESSION_2_0.name
    copy.write_text("\n".join([*lines[:5], odd, "{not json", *lines[5:]]) + "\n")
    ingest(IngestConfig(paths=(copy,), store=tmp_path / "store"))
    reasons = [r["reason"] for r in query(tmp_path / "store", "SELECT reason FROM quarantine ORDER BY line_no")]
    assert reasons[0] == "unexpected record shape: unknown Claude Code line type 'brand-new-kind'"
    assert reasons[1].startswith("invalid JSON") and len(reasons) == 2
    whole = ingest(IngestConfig(paths=(FIXADD_SESSION_2_0,), store=tmp_path / "whole"))
    kept = query(tmp_path / "store", "SELECT count(*) AS n FROM events")[0]["n"]
    assert kept == whole.events


def test_an_edit_without_recorded_hunks_keeps_its_arguments(tmp_path):
    lines = [json.loads(line) for line in FIXADD_SESSION_2_0.read_text().splitlines()]
    for line in lines:
        if isinstance(line.get("toolUseResult"), dict):
            line["toolUseResult"].pop("structuredPatch", None)
    copy = tmp_path / FIXADD_SESSION_2_0.name
    copy.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(IngestConfig(paths=(copy,), store=tmp_path / "store"))
    edits = query(tmp_path / "store", "SELECT * FROM tool_calls WHERE tool_name = 'Edit'")
    assert len(edits) == 2 and all(json.loads(e["arguments"])["old_string"] for e in edits)
    statuses = query(tmp_path / "store", "SELECT status FROM events WHERE kind = 'tool_output' AND call_id IN "
                                         "(SELECT call_id FROM tool_calls WHERE tool_name = 'Edit')")
    assert [s["status"] for s in statuses] == [NO_FILE_OP] * 2
    assert query(tmp_path / "store", "SELECT count(*) AS n FROM events WHERE kind = 'patch'")[0]["n"] == 1  # the Write


def test_source_picks_the_tool_and_the_defaults_include_claude_projects(tmp_path, monkeypatch):
    codex = FIXTURES / "codex-generated/codex-0.171.0"
    only = ingest(IngestConfig(paths=(ROOT, codex), store=tmp_path / "codex", source="codex"))
    assert set(only.formats) == {"g2"}
    only = ingest(IngestConfig(paths=(ROOT, codex), store=tmp_path / "claude", source="claude"))
    assert set(only.formats) == {"claude"}
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(ROOT / "claude-2.1.332"))
    assert default_inputs() == [ROOT / "claude-2.1.332/projects"]
    assert default_inputs(source="codex") == []


def test_stats_shows_format_claude(store):
    path, _ = store
    result = CliRunner().invoke(app, ["stats", "--store", str(path), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["by_version"]
    assert {(r["format"], r["cli_version"]) for r in rows} == {("claude", v) for v in VERSIONS}
    assert sum(r["user_messages"] for r in rows) == sum(len(c) for c in _prompts_per_case()) + 1  # + 2.1's agent


def _prompts_per_case() -> list[list[str]]:
    return [json.loads((ROOT / f"scenario-{name}/scenario.json").read_text())["turns"] for _, name in CASES]


def test_a_custom_slash_command_is_the_users_request(tmp_path):
    """Headless runs (`claude -p "/implement specs/x.md"`) start with the command line, then its
    expansion from .claude/commands/ as an isMeta text block: the expansion is the request (both were
    taken for injected context, and such a session had no task). An `ai-title` line is bookkeeping."""
    from logmine.segment import SegmentConfig, segment

    s = ClaudeLines()
    s._add("user", {"role": "user", "content": "<command-message>implement</command-message>\n"
                    "<command-name>/implement</command-name>\n<command-args>specs/dark-mode.md</command-args>"})
    s._add("user", {"role": "user", "content": [{"type": "text", "text": "# Implement\n\nImplement the plan in "
                                                                          "specs/dark-mode.md."}]}, isMeta=True)
    s._book("ai-title", title="Dark mode")
    s.bash("npm test", stdout="ok").say("Implemented.")
    s.save(tmp_path / "projects")
    store = tmp_path / "store"
    summary = ingest(IngestConfig(paths=(tmp_path / "projects",), store=store, jobs=1))
    assert summary.quarantined == 0
    prompts = query(store, "SELECT text, is_injected, injected_kind FROM events WHERE kind = 'user_message' ORDER BY seq")
    assert [(p["is_injected"], p["injected_kind"]) for p in prompts] == [(True, "slash_command"), (False, None)]
    segment(SegmentConfig(store=store))
    (task,) = query(store, "SELECT prompt FROM tasks")
    assert task["prompt"].startswith("# Implement")
