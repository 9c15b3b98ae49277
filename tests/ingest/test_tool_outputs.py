"""Exit codes and failures as Codex's tool outputs report them, and the ``tool_calls`` view that
attributes each to the command that produced it.

Outputs are taken from the licensed real sessions in tests/fixtures where those hold the shape; the
unified-exec shapes (exec_command, write_stdin polls) are the CLI's own wording, as in ivanma9/ship
(MIT) sessions of Codex 0.114.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, query

from logmine.ingest.run import IngestConfig, ingest
from logmine.ingest.tools import output_text, parse_output


def _fixture_outputs(prefix: str) -> list[str]:
    """Every tool output text of the fixture sessions that starts with ``prefix``."""
    found = []
    for path in sorted((FIXTURES / "codex-public").glob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            if prefix.replace('"', '\\"') not in line:
                continue
            record = json.loads(line)
            payload = record.get("payload", record)
            if payload.get("type") in ("function_call_output", "custom_tool_call_output"):
                text = output_text(payload.get("output"))
                if text.startswith(prefix):
                    found.append(text)
    return found


@pytest.mark.parametrize(("prefix", "exit_code", "status"), [
    ("failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, exit code: 2,", 2, "failed"),
    ("failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: 101,", 101, "failed"),
    ("failed in sandbox MacosSeatbelt with execution error: command timed out", None, "failed"),
    ("failed in sandbox None with execution error: command timed out", None, "failed"),
    ("failed in sandbox: sandbox error: command was killed by a signal", None, "failed"),
    ("failed in sandbox: Argument expected for the -c option", None, "failed"),  # the command's stderr, no code
    ("execution error: No such file or directory (os error 2)", None, "failed"),
])
def test_plain_text_failures_of_real_sessions(prefix, exit_code, status):
    outputs = _fixture_outputs(prefix)
    assert outputs, f"no fixture output starts with {prefix!r}"
    for text in outputs:
        out = parse_output(text)
        assert (out.exit_code, out.status, out.body) == (exit_code, status, text)


@pytest.mark.parametrize(("text", "exit_code", "status"), [
    ('exec_command failed: CreateProcess { message: "Codex(Sandbox(Denied { output: ExecToolCallOutput { '
     'exit_code: 128, stdout: StreamOutput { text: \\"\\", truncated_after_lines: None }, stderr: StreamOutput { '
     "text: \\\"fatal: Unable to create '/w/.git/index.lock': Operation not permitted\\\\n\\\"", 128, "failed"),
    ('exec_command failed: SandboxDenied { message: "\\n> ship@0.0.0 db:migrate /w\\nnode:net:1926\\n', None, "failed"),
    ('exec_command failed: CreateProcess { message: "Rejected(\\"rejected by user\\")" }', None, "declined"),
    ("exec command rejected by user", None, "declined"),
    ("approval policy is Never; reject command — you should not ask for escalated permissions", None, "declined"),
    ("Wall time: 16.5 seconds\naborted by user", None, None),  # interrupted: neither failed nor passed
    ("failed to parse function arguments: missing field `command` at line 1 column 53", None, None),
    ("failed in sandbox: exit code: 99999999999999999999", None, "failed"),  # words, not an int64 code
])
def test_plain_text_outputs_of_unified_exec_and_refusals(text, exit_code, status):
    out = parse_output(text)
    assert (out.exit_code, out.status) == (exit_code, status)


def test_total_output_lines_in_the_json_encoding_of_real_sessions():
    outputs = _fixture_outputs('{"output":"Total output lines:')
    assert len(outputs) >= 3
    for text in outputs:
        out = parse_output(text)
        assert out.exit_code is not None and out.body.startswith("Total output lines:")


@pytest.mark.parametrize(("text", "exit_code", "body"), [
    ("Exit code: 1\nWall time: 2.3 seconds\nTotal output lines: 412\nOutput:\nFAILED tests/test_a.py\n", 1,
     "FAILED tests/test_a.py\n"),
    ("Chunk ID: 0acc3e\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 925\n"
     "Output:\nTotal output lines: 58\n\ntotal 5832\n", 0, "Total output lines: 58\n\ntotal 5832\n"),
    ("Command: /bin/zsh -lc 'pnpm test'\nChunk ID: 958b31\nWall time: 1.0016 seconds\nProcess exited with code 2\n"
     "Original token count: 3\nOutput:\nTotal output lines: 3\n\nx\n", 2, "Total output lines: 3\n\nx\n"),
])
def test_total_output_lines_in_the_text_encodings(text, exit_code, body):
    out = parse_output(text)
    assert (out.exit_code, out.body, out.status) == (exit_code, body, None)


# -- the tool_calls view -----------------------------------------------------------------------------


def _unified(code: int | None, session: int | None = None, body: str = "") -> str:
    state = f"Process exited with code {code}" if code is not None else f"Process running with session ID {session}"
    return f"Chunk ID: 2f7e18\nWall time: 1.5 seconds\n{state}\nOriginal token count: 3\nOutput:\n{body}"


def _session(path: Path, calls: list[tuple[str, str, dict, str]]) -> None:
    """A G2 session whose tool calls (call_id, tool, arguments, output text) follow one request."""
    sid = "019cc379-79d6-7c21-885e-132b8a0c295f"
    lines = [{"type": "session_meta", "payload": {"id": sid, "cwd": "/w", "cli_version": "0.114.0"}},
             {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                   "content": [{"type": "input_text", "text": "Fix the tests"}]}}]
    for call_id, tool, arguments, output in calls:
        lines.append({"type": "response_item", "payload": {"type": "function_call", "name": tool, "call_id": call_id,
                                                           "arguments": json.dumps(arguments)}})
        lines.append({"type": "response_item", "payload": {"type": "function_call_output", "call_id": call_id,
                                                           "output": output}})
    path.mkdir(parents=True)
    with (path / f"rollout-2026-03-06T15-07-24-{sid}.jsonl").open("w") as f:
        for n, line in enumerate(lines):
            f.write(json.dumps({"timestamp": f"2026-03-06T15:{n // 60:02d}:{n % 60:02d}.000Z", **line}) + "\n")


def test_each_exit_code_goes_to_the_command_that_produced_it(tmp_path):
    poll = {"chars": "", "yield_time_ms": 120000}
    _session(tmp_path / "sessions", [
        ("c1", "exec_command", {"cmd": "pytest -q"}, _unified(None, 7)),
        ("p1", "write_stdin", {"session_id": 7, **poll}, _unified(None, 7)),  # still running
        ("p2", "write_stdin", {"session_id": 7, **poll}, _unified(1, body="1 failed\n")),
        ("c2", "exec_command", {"cmd": "pytest -q"}, _unified(None, 7)),  # session id 7 again
        ("p3", "write_stdin", {"session_id": 7, **poll}, _unified(0, body="2 passed\n")),
        ("c3", "exec_command", {"cmd": "npm test"}, _unified(None, 9)),  # never seen to exit
        ("s1", "shell", {"command": ["bash", "-lc", "pytest"]},
         "failed in sandbox MacosSeatbelt with execution error: command timed out"),
        ("s2", "shell", {"command": ["bash", "-lc", "pytest"]},
         "failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, exit code: 2, stdout: E"),
        ("s3", "shell", {"command": ["pytest"]},
         json.dumps({"output": "1 failed", "metadata": {"exit_code": 1, "duration_seconds": 0.5}})),
        ("s4", "shell", {"command": ["rm", "-rf", "build"]}, "exec command rejected by user"),
        ("s5", "shell_command", {"command": "pytest -q"}, "Exit code: 0\nWall time: 0.4 seconds\nOutput:\nok\n"),
    ])
    ingest(IngestConfig(paths=(tmp_path / "sessions",), store=tmp_path / "store", jobs=1))
    rows = query(tmp_path / "store", "SELECT call_id, exit_code, failed FROM tool_calls ORDER BY seq")
    assert [(r["call_id"], r["exit_code"], r["failed"]) for r in rows] == [
        ("c1", 1, True), ("p1", None, None), ("p2", 1, True), ("c2", 0, False), ("p3", 0, False),
        ("c3", None, None), ("s1", None, True), ("s2", 2, True), ("s3", 1, True), ("s4", None, None),
        ("s5", 0, False)]
