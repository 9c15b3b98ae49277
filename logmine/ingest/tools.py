"""Tool calls and tool outputs across Codex's tool generations.

Codex's shell tool changed shape four times (``shell`` argv, ``shell_command`` string, unified-exec
``exec_command``/``write_stdin``, the built-in ``local_shell_call``) and its output text three times
(a JSON string with metadata, ``Exit code: N / Wall time:`` text, unified-exec text). This module
turns each into one normal form: the command as a single string, and exit code / duration / output
body. See ``docs/codex-format.md``, "Tool calls and their outputs".
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import orjson

from logmine.ingest.shapes import RecordShapeError
from logmine.patch import extract_patch

# ``Bash``: Claude Code's shell tool (``{"command": ...}``), read the same way (logmine.ingest.claude)
SHELL_TOOLS = frozenset({"shell", "container.exec", "shell_command", "exec_command", "local_shell", "Bash"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "fish", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "/usr/bin/zsh"})
_APPLY_PATCH_NAMES = frozenset({"apply_patch", "applypatch"})

_FREEFORM_HEADER = re.compile(r"\AExit code: (-?\d+)\nWall time: ([0-9.]+) seconds\n")
_UNIFIED_WALL = re.compile(r"^Wall time: ([0-9.]+) seconds$", re.M)
_UNIFIED_EXIT = re.compile(r"^Process exited with code (-?\d+)$", re.M)
_UNIFIED_RUNNING = re.compile(r"^Process running with session ID (\d+)$", re.M)
_OUTPUT_MARK = "\nOutput:\n"
# Plain-text outputs Codex writes instead of the command's own output. A command refused before it
# ran (by the user or the approval policy) did not fail: its outcome stays unknown. One that ran (or
# could not start) and failed says so, sometimes with the exit code inside an error's text
# ("sandbox denied exec error, exit code: 2, …", "Denied { output: ExecToolCallOutput { exit_code: 128, …").
_DECLINED = ("exec command rejected", "approval policy is Never; reject command",
             'exec_command failed: CreateProcess { message: "Rejected(')
_FAILED = ("failed in sandbox", "execution error:", "command timed out", "sandbox error:", "exec_command failed:",
           "error: Failed to find expected lines", "error: invalid hunk", "apply_patch verification failed")
_EMBEDDED_EXIT = re.compile(r"\bexit[_ ]code: (-?\d+)")
_EMBEDDED_EXIT_CHARS = 400  # where the error's own words end and the command's stderr may begin


@dataclass(frozen=True, slots=True)
class ShellCall:
    """A shell-like tool call in normal form."""

    command: str | None
    workdir: str | None = None
    exec_session_id: str | None = None  # write_stdin: the unified-exec process written to


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool output says about the command that produced it."""

    body: str
    exit_code: int | None = None
    duration_s: float | None = None
    exec_session_id: str | None = None  # unified exec: the process is still running
    status: str | None = None  # "failed" (ran and failed, maybe without a code) | "declined" (never ran)


def argv_to_command(argv: list) -> str:
    """``["bash", "-lc", "pytest -q"]`` -> ``"pytest -q"``; any other argv is shell-quoted."""
    argv = [str(a) for a in argv]
    if len(argv) == 3 and argv[0] in _SHELLS and argv[1] in ("-lc", "-c", "-l -c"):
        return argv[2]
    return shlex.join(argv)


def shell_call(tool_name: str, args: dict) -> ShellCall | None:
    """Normalise the arguments of a shell-like tool; None when the tool is not one."""
    workdir = args.get("workdir") or args.get("working_directory")
    if tool_name == "write_stdin":
        sid = args.get("session_id")
        return ShellCall(None, workdir, None if sid is None else str(sid))
    if tool_name not in SHELL_TOOLS:
        return None
    command = args.get("cmd") if tool_name == "exec_command" else args.get("command")
    if isinstance(command, list):
        command = argv_to_command(command)
    elif command is not None and not isinstance(command, str):
        command = str(command)
    return ShellCall(command, workdir if isinstance(workdir, str) else None)


def patch_input(tool_name: str, args: dict | None, raw_input: str | None, command: str | None) -> str | None:
    """The apply_patch text carried by a tool call in any of its four forms, else None.

    Forms: freeform ``custom_tool_call`` (raw input), function ``{"input": patch}``, shell argv
    ``["apply_patch", patch]``, and a shell heredoc ``apply_patch <<'EOF' ... EOF``.
    """
    if tool_name in _APPLY_PATCH_NAMES:
        if raw_input is not None:
            return raw_input
        if args:
            value = args.get("input") or args.get("patch")
            return value if isinstance(value, str) else None
        return None
    if args and isinstance(args.get("command"), list):
        argv = args["command"]
        if len(argv) >= 2 and str(argv[0]) in _APPLY_PATCH_NAMES:
            return str(argv[1])
    if command and "*** Begin Patch" in command and ("apply_patch" in command or "applypatch" in command):
        return extract_patch(command)
    return None


def output_text(output) -> str:
    """Tool output payloads are a string, a list of content items (MCP images) or an object."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = []
        for item in output:
            if isinstance(item, dict):
                parts.append(item.get("text") if isinstance(item.get("text"), str) else f"[{item.get('type', 'item')}]")
            else:
                parts.append(str(item))
        return "\n".join(parts)
    if isinstance(output, dict) and isinstance(output.get("content"), (str, list)):
        return output_text(output["content"])
    return orjson.dumps(output).decode()


def parse_output(text: str) -> ToolOutput:
    """Exit code, duration and body from any of the three output encodings.

    Plain-text outputs are Codex's own words: a failure (``failed in sandbox …``, ``execution error:
    …``, ``command timed out``, ``apply_patch verification failed: …``) is returned with
    ``status="failed"`` and the exit code its text names, if any; a refusal (``exec command rejected
    by user``) with ``status="declined"``; anything else as a body without exit code or status.
    """
    if text.startswith("{") and '"metadata"' in text:
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            meta = obj["metadata"]
            return ToolOutput(
                body=output_text(obj.get("output")),
                exit_code=_int(meta.get("exit_code")),
                duration_s=_float(meta.get("duration_seconds")),
            )
    m = _FREEFORM_HEADER.match(text)
    if m:
        body = text.split(_OUTPUT_MARK, 1)[1] if _OUTPUT_MARK in text else text[m.end():]
        return ToolOutput(body=body, exit_code=int(m.group(1)), duration_s=float(m.group(2)))
    head, sep, body = text.partition(_OUTPUT_MARK)
    if sep and ("Chunk ID:" in head or "Process " in head):
        wall = _UNIFIED_WALL.search(head)
        exited = _UNIFIED_EXIT.search(head)
        running = _UNIFIED_RUNNING.search(head)
        return ToolOutput(
            body=body,
            exit_code=int(exited.group(1)) if exited else None,
            duration_s=float(wall.group(1)) if wall else None,
            exec_session_id=running.group(1) if running else None,
        )
    if text.startswith(_DECLINED):
        return ToolOutput(body=text, status="declined")
    if text.startswith(_FAILED):
        code = _EMBEDDED_EXIT.search(text, 0, _EMBEDDED_EXIT_CHARS)
        exit_code = int(code.group(1)) if code else None
        if exit_code is not None and not -(2**63) <= exit_code < 2**63:
            exit_code = None  # words in an error message: not worth quarantining the line for
        return ToolOutput(body=text, exit_code=exit_code, status="failed")
    return ToolOutput(body=text)


def duration_seconds(value) -> float | None:
    """Event durations are ``{"secs": S, "nanos": N}``, a number, or a string like ``"1.2s"``."""
    if isinstance(value, dict):
        return float(value.get("secs", 0)) + float(value.get("nanos", 0)) / 1e9
    if isinstance(value, str):
        value = value.rstrip("s")
    return _float(value)


def _int(value) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _float(value) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def content_text(content) -> str | None:
    """Text of a content list (input_text/output_text/summary_text/...), or a plain string."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RecordShapeError("content is neither a list nor a string")
    parts = []
    for item in content:
        if isinstance(item, dict):
            text = item.get("text")
            parts.append(text if isinstance(text, str) else f"[{item.get('type', 'item')}]")
        elif isinstance(item, str):
            parts.append(item)
    return "\n".join(parts)


def parse_arguments(arguments: str | None) -> tuple[dict, str | None]:
    """A function call's arguments as a dict, and why not where they are not a JSON object."""
    if not arguments:
        return {}, None
    try:
        args = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}, "arguments are not valid JSON"
    return (args, None) if isinstance(args, dict) else ({}, "arguments are not a JSON object")
