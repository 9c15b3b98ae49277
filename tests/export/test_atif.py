"""export atif end to end: steps against the events, token totals against the logs, redaction, the JSON
Schema, Harbor's own pydantic model (when installed), and the command line."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, query
from session_builder import SessionBuilder
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.export import atif
from logmine.export.atif import AtifExportConfig, AtifExportError, NothingToExport, check_trajectory, export_atif
from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "atif-trajectory.schema.json").read_text())
HARBOR = Path(os.environ.get("LOGMINE_HARBOR", ROOT / ".ci/harbor-venv/bin/harbor"))
HARBOR_PYTHON = HARBOR.parent / "python"
# real sessions: Codex CLI 0.63 (token_count events) and 0.171 (token_usage_record lines)
REAL = (FIXTURES / "codex-public" / "EdofEngland__code_butler__rollout-2025-11-24T13-38-49-019ab760-3d78-7fd0-9ea1-"
        "4c39e889b87b.jsonl",
        FIXTURES / "codex-generated" / "codex-0.171.0" / "rollout-2026-11-29T09-05-18-01a2268d-3796-7fb2-a86f-"
        "e93c26513a02.jsonl")
SECRET = "ghp_" + "R7a9Kq2LmX4pT8vN1cB6dF3hJ5sW0yZ2eG4u"
TESTS = "python3 -m unittest -q"
FIX = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"
runner = CliRunner()


def _usage(builder: SessionBuilder, input_tokens: int, cached: int, output: int, reasoning: int) -> SessionBuilder:
    """A token_count event with the session's running totals so far."""
    total = {"input_tokens": input_tokens, "cached_input_tokens": cached, "output_tokens": output,
             "reasoning_output_tokens": reasoning, "total_tokens": input_tokens + output}
    return builder._add("event_msg", {"type": "token_count", "info": {"total_token_usage": total,
                                                                       "last_token_usage": total}})


def _planted() -> SessionBuilder:
    """Two tasks; the first plants a secret in a command and its output, thinks aloud, is told to continue."""
    builder = SessionBuilder(cwd="/work/proj").user("Fix add so the tests pass")
    builder._add("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Run the tests."}],
                                   "encrypted_content": "gAAAAB-never-exported"})
    builder.run(TESTS, 1, "FAILED (failures=1)\n")
    _usage(builder, 100, 40, 10, 5).agent("The tests fail; shall I fix add?").user("continue")
    builder.patch(FIX).run(f"curl -H 'Authorization: token {SECRET}' https://api.github.com/user", 0,
                           f"token {SECRET} accepted\n").agent("Fixed add.")
    _usage(builder, 300, 120, 30, 12)
    builder.user("Explain what calc does").agent("It adds numbers.")
    return _usage(builder, 450, 200, 45, 12)


def _sessions(tmp: Path) -> Path:
    sessions = tmp / "sessions"
    sessions.mkdir(parents=True)
    for path in REAL:
        shutil.copy(path, sessions)
    _planted().write(sessions)
    return sessions


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("atif")
    store = tmp / "store"
    ingest(IngestConfig(paths=(_sessions(tmp),), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    return store


@pytest.fixture(scope="module")
def exported(store, tmp_path_factory) -> tuple[atif.AtifExportSummary, Path, dict[str, dict]]:
    out = tmp_path_factory.mktemp("atif-out") / "out"
    summary = export_atif(AtifExportConfig(store=store, out=out))
    docs = {p.stem: json.loads(p.read_text()) for p in sorted((out / "trajectories").glob("*.json"))}
    return summary, out, docs


def _tasks(store: Path, like: str = "%") -> list[dict]:
    return query(store, "SELECT t.*, s.session_id AS sid FROM tasks t JOIN sessions s USING (source_path) "
                        "WHERE t.source_path LIKE ? ORDER BY t.source_path, t.index", [like])


def _events(store: Path, task: dict, kind: str) -> list[dict]:
    return query(store, "SELECT * FROM events WHERE source_path = ? AND seq BETWEEN ? AND ? AND kind = ? "
                        "AND record_type LIKE 'response_item/%' ORDER BY seq",
                 [task["source_path"], task["first_seq"], task["last_seq"], kind])


def test_one_trajectory_per_task_and_a_card(store, exported):
    summary, out, docs = exported
    tasks = _tasks(store)
    assert set(docs) == {t["task_id"] for t in tasks} and summary.trajectories == summary.tasks == len(tasks)
    assert summary.steps == sum(len(d["steps"]) for d in docs.values()) and not summary.dropped
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "trajectories"]
    card = (out / "README.md").read_text()
    for line in (f"| trajectories (`trajectories/`) | {len(tasks)} |", "| 0.171.0 |", "| gpt-5.1-codex-max |",
                 "## Redaction", "Trajectory.model_validate_json"):
        assert line in card, line


def test_steps_follow_the_planted_session(store, exported):
    _, _, docs = exported
    first, second = _tasks(store, "%rollout-2026-01-01%")
    doc = docs[first["task_id"]]
    assert [(s["step_id"], s["source"]) for s in doc["steps"]] == [
        (1, "user"), (2, "agent"), (3, "agent"), (4, "user"), (5, "agent"), (6, "agent"), (7, "agent")]
    user, tests, ask, again, patch, curl, done = doc["steps"]
    assert user["message"] == "Fix add so the tests pass" and again["message"] == "continue"
    assert tests["reasoning_content"] == "Run the tests." and tests["message"] == ""
    assert tests["tool_calls"] == [{"tool_call_id": "call_0", "function_name": "bash", "arguments": {"command": TESTS}}]
    assert tests["observation"] == {"results": [{"source_call_id": "call_0",
                                                 "content": "FAILED (failures=1)\n[exit code: 1]"}]}
    assert ask == {"step_id": 3, "source": "agent", "message": "The tests fail; shall I fix add?"}
    assert patch["tool_calls"][0]["function_name"] == "apply_patch"
    assert patch["tool_calls"][0]["arguments"]["patch"] == FIX.rstrip("\n")
    assert curl["tool_calls"][0]["tool_call_id"] == curl["observation"]["results"][0]["source_call_id"] == "call_2"
    assert done["message"] == "Fixed add." and "observation" not in done
    assert "gAAAAB" not in json.dumps(doc)  # encrypted reasoning is never read
    later = docs[second["task_id"]]
    assert [s["message"] for s in later["steps"]] == ["Explain what calc does", "It adds numbers."]
    assert doc["session_id"] == later["session_id"] == first["sid"] and doc["trajectory_id"] == first["task_id"]
    # each task counts the tokens of its own model calls: the running totals' differences
    assert doc["final_metrics"] == {"total_steps": 7, "total_prompt_tokens": 300, "total_completion_tokens": 30,
                                    "total_cached_tokens": 120, "extra": {"reasoning_output_tokens": 12}}
    assert later["final_metrics"] == {"total_steps": 2, "total_prompt_tokens": 150, "total_completion_tokens": 15,
                                      "total_cached_tokens": 80, "extra": {"reasoning_output_tokens": 0}}
    assert doc["agent"]["name"] == "codex" and doc["agent"]["version"] == "0.63.0"
    assert doc["agent"]["model_name"] == "gpt-5-codex"
    assert [t["function"]["name"] for t in doc["agent"]["tool_definitions"]] == ["bash", "apply_patch"]


def _last_total(path: Path) -> int:
    """The input tokens of a session file's last running total, read from the file itself."""
    last = 0
    for line in path.read_text().splitlines():
        payload = json.loads(line).get("payload") or {}
        info = payload.get("info") if payload.get("type") == "token_count" else None
        total = (info or {}).get("total_token_usage") or payload.get("thread_token_usage")
        last = total["input_tokens"] if total else last
    return last


@pytest.mark.parametrize("fixture", REAL, ids=["codex-0.63", "codex-0.171"])
def test_real_sessions_steps_match_their_events(store, exported, fixture):
    _, _, docs = exported
    tasks = _tasks(store, f"%{fixture.name}")
    assert tasks
    for task in tasks:
        doc = docs[task["task_id"]]
        steps = doc["steps"]
        assert steps[0] == {"step_id": 1, "source": "user", "message": task["prompt"]}
        assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
        commands = [e["command"] for e in _events(store, task, "tool_call") if e["command"]]
        outputs = {e["text"] or "" for e in _events(store, task, "tool_output")}
        agent_texts = {e["text"] for e in _events(store, task, "assistant_message")}
        calls = [c for s in steps for c in s.get("tool_calls", ())]
        assert calls and [c["tool_call_id"] for c in calls] == [f"call_{i}" for i in range(len(calls))]
        for step in steps[1:]:
            assert step["source"] in ("agent", "user")
            if step["source"] == "agent" and step["message"]:
                assert all(part in agent_texts for part in step["message"].split("\n\n")), step["message"]
            for call in step.get("tool_calls", ()):
                if call["function_name"] == "bash":
                    assert any(call["arguments"]["command"].endswith(c) for c in commands), call
            results = step.get("observation", {}).get("results", [])
            assert [r["source_call_id"] for r in results] == [c["tool_call_id"] for c in step.get("tool_calls", ())]
            for result in results:  # the output, then "[exit code: N]" on a line of its own
                body = re.sub(r"\[exit code: -?\d+\]$", "", result["content"])
                assert body in outputs or body.removesuffix("\n") in outputs, result["content"][:200]
        assert doc["agent"]["version"] == query(store, "SELECT cli_version FROM sessions WHERE source_path = ?",
                                                [task["source_path"]])[0]["cli_version"]
    # the tasks' token counts add up to the session's last running total
    assert sum(docs[t["task_id"]]["final_metrics"]["total_prompt_tokens"] for t in tasks) == _last_total(fixture) > 0


def test_provenance_names_the_task_and_its_verifiers(store, exported):
    _, _, docs = exported
    for task in _tasks(store):
        own = docs[task["task_id"]]["extra"]["logmine"]
        statuses = query(store, "SELECT kind, status FROM verifiers WHERE task_id = ? AND seg_gen = ? "
                                "ORDER BY verifier_id", [task["task_id"], task["seg_gen"]])
        assert own["task_id"] == task["task_id"] and own["session_id"] == task["sid"]
        assert own["task_index"] == task["index"] and own["verifiers"] == statuses
        assert own["verifier"] == ("open" if statuses else "none")  # nothing verified in this store
    assert atif.verifier_state(["fails_after", "validated"]) == "validated"
    assert atif.verifier_state(["fails_after", "passes_at_start"]) == "refuted"
    assert atif.verifier_state(["fails_after", "unscored"]) == "open"


def test_a_planted_secret_is_not_exported(exported):
    _, out, _ = exported
    texts = [p.read_text() for p in out.rglob("*") if p.is_file()]
    assert texts and not any(SECRET in text or SECRET[4:] in text for text in texts)
    curl = next(s for text in texts if "api.github.com" in text
                for s in json.loads(text)["steps"] if "api.github.com" in json.dumps(s))
    command = curl["tool_calls"][0]["arguments"]["command"]
    token = re.search(r"token (\S+)'", command).group(1)  # a pseudonym of the same shape, in both places
    assert re.fullmatch(r"ghp_[A-Za-z0-9]{36}", token) and token != SECRET
    assert curl["observation"]["results"][0]["content"] == f"token {token} accepted\n[exit code: 0]"


def test_the_export_gate_redacts_what_the_store_missed(store, tmp_path, monkeypatch):
    """A secret the store holds in the clear (ingested before a rule existed) is redacted on the way out."""
    build = atif.build_trajectory

    def leaky(task, events, exits, options):
        result = build(task, events, exits, options)
        if isinstance(result, atif.Drop):
            return result
        leaked = [{**m, "content": m["content"] + f" {SECRET}"} if m["role"] == "tool" else m for m in result.messages]
        return dataclasses.replace(result, messages=tuple(leaked))

    monkeypatch.setattr(atif, "build_trajectory", leaky)
    summary = export_atif(AtifExportConfig(store=store, out=tmp_path / "out"))
    assert summary.trajectories == summary.tasks and summary.redactions["github_token"] > 0
    assert not any(SECRET[4:] in p.read_text() for p in (tmp_path / "out" / "trajectories").iterdir())


def test_every_file_validates_against_the_json_schema(exported):
    _, out, docs = exported
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for doc in docs.values():
        validator.validate(doc)
        assert check_trajectory(validator, doc) is None
    # a task that called tools (task ids follow the planted session's random id: any order)
    doc = next(d for d in docs.values() if any(s.get("observation") for s in d["steps"]))
    user_with_calls = {**doc, "steps": [{**doc["steps"][0], "tool_calls": []}, *doc["steps"][1:]]}
    assert not validator.is_valid(user_with_calls)  # only agent steps call tools
    assert not validator.is_valid({**doc, "unknown": 1}) and not validator.is_valid({**doc, "steps": []})
    assert check_trajectory(validator, {**doc, "steps": doc["steps"][1:]}).startswith("steps/0: step_id 2")
    calling = next(i for i, s in enumerate(doc["steps"]) if s.get("observation"))
    dangling = json.loads(json.dumps(doc))
    dangling["steps"][calling]["observation"]["results"][0]["source_call_id"] = "call_none"
    assert "answers 'call_none'" in check_trajectory(validator, dangling)


_HARBOR_CHECK = """
import json, sys
from pathlib import Path
from harbor.models.trajectories import Trajectory
files = sorted(Path(sys.argv[1]).glob("*.json"))
changed = [p.name for p in files
           if Trajectory.model_validate_json(p.read_text()).to_json_dict() != json.loads(p.read_text())]
broken = json.loads(files[0].read_text())
broken["steps"] = broken["steps"][1:]
try:
    Trajectory.model_validate(broken)
    rejects = False
except ValueError:
    rejects = True
print(json.dumps({"validated": len(files), "changed": changed, "rejects_broken": rejects}))
"""


@pytest.mark.skipif(not HARBOR_PYTHON.exists(),
                    reason="harbor is not installed (bash .ci/install-tools.sh, or set LOGMINE_HARBOR)")
def test_harbors_model_validates_every_file(exported):
    _, out, docs = exported
    done = subprocess.run([str(HARBOR_PYTHON), "-c", _HARBOR_CHECK, str(out / "trajectories")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report == {"validated": len(docs), "changed": [], "rejects_broken": True}


def test_raw_tools_and_no_reasoning(store, tmp_path):
    summary = export_atif(AtifExportConfig(store=store, out=tmp_path / "out", tools="raw", reasoning="drop"))
    docs = [json.loads(p.read_text()) for p in (tmp_path / "out" / "trajectories").iterdir()]
    assert len(docs) == summary.trajectories > 0
    names = {c["function_name"] for d in docs for s in d["steps"] for c in s.get("tool_calls", ())}
    assert {"shell_command", "apply_patch"} <= names and "bash" not in names
    assert not any("reasoning_content" in s for d in docs for s in d["steps"])
    assert all(d["extra"]["logmine"]["tools"] == "raw" for d in docs)


def test_errors(store, tmp_path):
    with pytest.raises(AtifExportError, match="no logmine store at"):
        export_atif(AtifExportConfig(store=tmp_path / "none", out=tmp_path / "o"))
    with pytest.raises(AtifExportError, match="tools must be one of canonical, raw, got 'mcp'"):
        export_atif(AtifExportConfig(store=store, out=tmp_path / "o", tools="mcp"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(AtifExportError, match="is not empty"):
        export_atif(AtifExportConfig(store=store, out=tmp_path / "full"))
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    export_atif(AtifExportConfig(store=store, out=tmp_path / "full", overwrite=True))
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["README.md", "trajectories"]
    SessionBuilder().user("Hello").agent("Hi.").write(tmp_path / "plain")
    ingest(IngestConfig(paths=(tmp_path / "plain",), store=tmp_path / "unsegmented", jobs=1))
    with pytest.raises(NothingToExport, match="no tasks in"):
        export_atif(AtifExportConfig(store=tmp_path / "unsegmented", out=tmp_path / "o2"))
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


def test_the_command(store, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where a traceback file would go
    result = runner.invoke(app, ["export", "atif", "--store", str(store), "--out", str(tmp_path / "a"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["trajectories"] == report["tasks"] == len(_tasks(store)) and report["not_exported"] == []
    result = runner.invoke(app, ["export", "atif", "--store", str(store), "--out", str(tmp_path / "b"), "-q"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (f"logmine export atif: {report['trajectories']} trajectories "
                                             f"({report['steps']} steps) from {report['tasks']} tasks → {tmp_path / 'b'}")
    for args, message in (
            (["--store", str(tmp_path / "none"), "--out", str(tmp_path / "c")], f"no logmine store at {tmp_path / 'none'}"),
            (["--store", str(store), "--out", str(tmp_path / "a")],
             f"output directory {tmp_path / 'a'} is not empty (pass --overwrite to replace it)"),
            (["--store", str(store), "--out", str(tmp_path / "d"), "--reasoning", "full"],
             "reasoning must be one of drop, summary, got 'full'")):
        result = runner.invoke(app, ["export", "atif", *args])
        assert result.exit_code == 1 and result.output.strip() == f"Error: {message}", result.output
    assert not list(tmp_path.glob("logmine-traceback-*"))
