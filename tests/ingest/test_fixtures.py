"""Every real Codex file in tests/fixtures ingests completely and as the logs state it."""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES, query

ALL_FILES = sorted(p for d in ("codex-public", "codex-generated") for p in (FIXTURES / d).rglob("*")
                   if p.suffix in (".jsonl", ".json") and p.name != "scenario.json")  # what fixture_store reads


def test_no_line_quarantined_and_every_file_read(fixture_store):
    store, summary = fixture_store
    assert query(store, "SELECT * FROM quarantine") == []
    assert summary.bad_files == [] and summary.pending == []
    assert summary.changes["new"] == len(ALL_FILES)
    read = {r["source_path"] for r in query(store, "SELECT DISTINCT source_path FROM events")}
    assert read == {str(p) for p in ALL_FILES}


def test_every_line_becomes_an_event(fixture_store):
    """Nothing is dropped: each non-blank JSONL line has an event carrying its raw text."""
    store, _ = fixture_store
    for path in ALL_FILES:
        if path.suffix != ".jsonl":
            continue
        lines = [i + 1 for i, line in enumerate(path.read_bytes().split(b"\n")) if line.strip()]
        got = query(store, "SELECT DISTINCT line_no FROM events WHERE source_path = ? AND raw IS NOT NULL "
                           "ORDER BY line_no", [str(path)])
        assert [r["line_no"] for r in got] == lines, path.name


def test_formats_and_versions(fixture_store):
    store, _ = fixture_store
    rows = query(store, "SELECT format, cli_version, count(*) AS n FROM sessions GROUP BY ALL ORDER BY ALL")
    got = {(r["format"], r["cli_version"]): r["n"] for r in rows}
    assert got[("g0", None)] == 1
    assert got[("g1", None)] == 5  # four public legacy files and the 0.20.0 one
    for version in ("0.171.0", "0.45.0", "0.90.0", "0.34.0", "0.46.0", "0.57.0", "0.58.0", "0.63.0"):
        assert any(v == version for (_, v) in got), version
    history = query(store, "SELECT count(*) AS n FROM events WHERE format = 'history'")[0]["n"]
    assert history == len((FIXTURES / "codex-public" / "JaydenXsoe__ocodex__history.jsonl").read_text().splitlines())


def test_every_tool_call_paired_with_its_output(fixture_store):
    """Calls pair with outputs by call_id, except where the log itself has no output."""
    store, _ = fixture_store
    for path in ALL_FILES:
        if path.suffix != ".jsonl":
            continue
        text = path.read_text()
        output_ids = set(re.findall(r'"type":"(?:function_call_output|custom_tool_call_output)","call_id":"([^"]+)"', text))
        output_ids |= set(re.findall(r'"call_id":"([^"]+)","output"', text))
        calls = query(store, "SELECT call_id, has_output FROM tool_calls WHERE source_path = ? AND tool_name <> "
                             "'web_search'", [str(path)])
        for call in calls:
            assert call["has_output"] == (call["call_id"] in output_ids), (path.name, call["call_id"])


def test_exit_codes_as_the_logs_state_them(fixture_store):
    """Outputs in the JSON-metadata encoding: the stored exit code equals metadata.exit_code."""
    store, _ = fixture_store
    checked = 0
    for path in ALL_FILES:
        if path.suffix != ".jsonl":
            continue
        expected = {}
        for line in path.read_text().splitlines():
            obj = json.loads(line)
            item = obj.get("payload", obj)
            if item.get("type") in ("function_call_output", "custom_tool_call_output") and isinstance(item.get("output"), str):
                try:
                    meta = json.loads(item["output"]).get("metadata", {})
                except (ValueError, AttributeError):
                    m = re.search(r"^(?:Exit code: |Process exited with code )(-?\d+)$", item["output"].split("\nOutput:\n")[0], re.M)
                    if m:
                        expected[item["call_id"]] = int(m.group(1))
                    continue
                if "exit_code" in meta:
                    expected[item["call_id"]] = meta["exit_code"]
        rows = query(store, "SELECT call_id, exit_code FROM events WHERE source_path = ? AND kind = 'tool_output' "
                            "AND record_type LIKE 'response_item/%'", [str(path)])
        got = {r["call_id"]: r["exit_code"] for r in rows if r["call_id"] in expected}
        assert got == expected, path.name
        checked += len(expected)
    assert checked > 200


def test_generated_sessions_match_the_scenario(fixture_store):
    """The scenario the real CLIs ran: pytest fails, a patch fixes calc.py, pytest passes."""
    store, _ = fixture_store
    scenario = json.loads((FIXTURES / "codex-generated/scenario-fixadd/scenario.json").read_text())
    for version in ("0.20.0", "0.45.0", "0.90.0", "0.171.0"):
        path = next((FIXTURES / f"codex-generated/codex-{version}").glob("*.jsonl"))
        prompts = [r["text"] for r in query(store, "SELECT text FROM events WHERE source_path = ? AND kind = "
                   "'user_message' AND NOT is_injected AND record_type LIKE 'response_item/%' ORDER BY seq", [str(path)])]
        turns = scenario["turns"] if version != "0.20.0" else scenario["turns"][:1]
        assert prompts == [t["prompt"] for t in turns], version
        calls = query(store, "SELECT command, exit_code FROM tool_calls WHERE source_path = ? AND command IS NOT NULL "
                             "AND command NOT LIKE 'apply_patch%' ORDER BY seq", [str(path)])
        assert [c["command"] for c in calls][:2] == ["python -m pytest -q"] * 2
        assert [c["exit_code"] for c in calls][:2] == [1, 0], version
        patches = query(store, "SELECT patch_op, path FROM events WHERE source_path = ? AND kind = 'patch' ORDER BY seq",
                        [str(path)])
        expected = [("update", "calc.py")] + ([("update", "calc.py"), ("add", "test_sub.py")] if version != "0.20.0" else [])
        assert [(p["patch_op"], p["path"]) for p in patches] == expected, version


def test_injected_context_is_not_a_user_request(fixture_store):
    store, _ = fixture_store
    rows = query(store, "SELECT text, injected_kind FROM events WHERE kind = 'user_message' AND is_injected")
    kinds = {r["injected_kind"] for r in rows}
    assert {"environment_context", "developer"} <= kinds
    genuine = query(store, "SELECT text FROM events WHERE kind = 'user_message' AND NOT is_injected")
    assert not any(r["text"].lstrip().startswith(("<environment_context>", "<user_instructions>", "# AGENTS.md"))
                   for r in genuine if r["text"])


@pytest.mark.parametrize("kind", ["shell", "shell_command", "exec_command", "apply_patch", "update_plan"])
def test_tool_generations_present(fixture_store, kind):
    store, _ = fixture_store
    assert query(store, "SELECT count(*) AS n FROM events WHERE kind = 'tool_call' AND tool_name = ?", [kind])[0]["n"] > 0
