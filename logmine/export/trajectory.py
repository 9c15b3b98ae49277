"""A task's events → one OpenAI-style chat conversation: ``messages`` plus the ``tools`` they call.

The conversation is what the model saw and did, in the shape every SFT trainer reads:

- ``system`` (``TrajectoryOptions.system_prompt``; omitted when empty), then ``user``: the task's
  prompt (``tasks.prompt``: redacted, VS Code wrapper removed);
- ``assistant`` turns: ``content`` (the agent's message text, ``""`` when none), optional
  ``reasoning_content`` (reasoning summaries, only with ``reasoning="summary"``; encrypted reasoning
  is never read), optional ``tool_calls`` ``[{id, type: "function", function: {name, arguments}}]``
  with ``arguments`` a JSON string;
- ``tool`` results ``{tool_call_id, name, content}``, right after the turn that made the calls;
- later genuine user messages (follow-ups) as ``user`` turns.

Only model-visible records are read (Codex's ``response_item/*``, ``chat/*``: ``event_msg/*`` repeat
them for the UI; Claude Code's ``user/*``, ``assistant/*`` and the ``file_op/*`` file operations
ingest made of its file tools' calls). Context Codex injected (environment context, AGENTS.md,
developer messages, turn aborts, tool warnings) is left out. One model response — its reasoning,
message text and tool calls — is one assistant turn; consecutive responses with nothing between
them are merged (the harness never shows two assistant turns in a row). Tool call ids are
renumbered ``call_0``, ``call_1``, … in order, so that copies of a session are identical.

Tool interface (``tools="canonical"``, the default): the interface of the sandbox harness, so that
SFT and RL speak one language (:data:`logmine.protocol.CANONICAL_TOOLS`):

- ``bash {"command": str}``: every shell-like call (``shell`` argv, ``shell_command``,
  ``exec_command``, ``local_shell``…), from the ``command`` column; a call made in another
  directory than the task's cwd becomes ``cd DIR && COMMAND``;
- ``apply_patch {"patch": str}``: every apply_patch edit, whatever its form (freeform input,
  ``{"input": …}``, shell argv or heredoc): the patch text ``*** Begin Patch … *** End Patch``; and
  every Claude Code ``Write``/``Edit``/``MultiEdit`` call, as the patch text of the file operations
  ingest recorded for it (the write's content, the CLI's own diff hunks), paths relative to the
  task's cwd; such a call without a file operation (an edit without recorded hunks) is left out;
- anything else (``update_plan``, ``write_stdin``, web search, MCP tools…) is left out together with
  its output, and counted.

``tools="raw"`` keeps the agent's own tool names and arguments (Codex's, or Claude Code's ``Bash``,
``Read``, ``Edit``…; a freeform input becomes ``{"input": text}``); the tool schemas are then
inferred from the calls of the conversation.

Tool results: :func:`logmine.protocol.format_observation` — the output body then ``[exit code: N]``.
A call without an output (interrupted) and an output without its call are left out and counted.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections import Counter
from dataclasses import dataclass

import orjson

from logmine.ingest.records import Event
from logmine.ingest.tools import SHELL_TOOLS, patch_input
from logmine.patch import FileOp, PatchError, extract_patch, render_patch, rooted
from logmine.protocol import CANONICAL_TOOLS, format_observation
from logmine.segment.records import Task

TOOL_MODES = ("canonical", "raw")
REASONING_MODES = ("drop", "summary")

SYSTEM_PROMPT = (
    "You are a coding agent working in a software repository. Run shell commands with the `bash` tool "
    "and edit files with the `apply_patch` tool. When the task is done, reply with a short summary "
    "and no tool call."
)

_APPLY_PATCH_NAMES = ("apply_patch", "applypatch")
_KINDS = ("user_message", "assistant_message", "reasoning", "tool_call", "tool_output")
# model-visible records: Codex's (``event_msg/*`` repeat them for the UI), then Claude Code's
_VISIBLE = ("response_item/", "chat/", "user/", "assistant/")
# Claude Code's file tools: ingest records what each call did as ``file_op/<tool>`` patch events
_FILE_OP = "file_op/"
_FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})
_CLAUDE_CALL = "assistant/tool_use"
# the events columns this module reads
EVENT_COLUMNS = ("seq", "line_no", "kind", "record_type", "text", "tool_name", "call_id", "arguments", "command",
                 "workdir", "exit_code", "is_injected")
# the events a conversation is built from, as a condition of an ``events`` query (its kind and record type)
EVENTS_WHERE = (f"((kind IN ({', '.join(repr(k) for k in _KINDS)}) AND ("
                + " OR ".join(f"record_type LIKE '{prefix}%'" for prefix in _VISIBLE)
                + f")) OR (kind = 'patch' AND record_type LIKE '{_FILE_OP}%'))")


@dataclass(frozen=True, slots=True)
class TrajectoryOptions:
    tools: str = "canonical"  # canonical | raw
    reasoning: str = "drop"  # drop | summary (reasoning summaries as reasoning_content)
    system_prompt: str = SYSTEM_PROMPT  # "" for no system message


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One task as a chat conversation (the SFT record; ``schemas/sft_example.schema.json``)."""

    task_id: str
    messages: tuple[dict, ...]
    tools: tuple[dict, ...]
    left_out: tuple[tuple[str, int], ...] = ()  # what was not exported, by reason ("tool update_plan": 2)

    @property
    def digest(self) -> str:
        """Hash of messages and tools: equal for identical tasks (copies of a session)."""
        data = orjson.dumps({"messages": self.messages, "tools": self.tools}, option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(data).hexdigest()

    @property
    def n_chars(self) -> int:
        """Characters of text the conversation carries (contents, reasoning, call arguments, tools)."""
        total = len(orjson.dumps(self.tools))
        for m in self.messages:
            total += len(m["content"]) + len(m.get("reasoning_content") or "")
            total += sum(len(c["function"]["arguments"]) for c in m.get("tool_calls") or ())
        return total


@dataclass(frozen=True, slots=True)
class Drop:
    """A task or example that is not exported, and why (``reason`` is short and countable)."""

    task_id: str
    reason: str
    detail: str = ""


def build_trajectory(task: Task, events: list[Event], exit_codes: dict[str, int | None],
                     options: TrajectoryOptions = TrajectoryOptions()) -> Trajectory | Drop:
    """The conversation of ``task`` (its task_id, prompt, first_seq, cwd) from its events (read with
    at least :data:`EVENT_COLUMNS`, in seq order, any record type) and the exit
    codes of its tool calls by call_id (the ``tool_calls`` view: outputs and end events combined).

    Returns a :class:`Drop` when no assistant turn is left."""
    builder = _Builder(task, exit_codes, options)
    for event in events:
        if event.kind in _KINDS and event.record_type.startswith(_VISIBLE):
            builder.add(event)
        elif event.kind == "patch" and event.record_type.startswith(_FILE_OP):
            builder.file_op(event)
    return builder.finish()


class _Builder:
    """Accumulates messages event by event; :meth:`finish` cleans them up."""

    def __init__(self, task: Task, exit_codes: dict[str, int | None], options: TrajectoryOptions):
        self.task, self.exit_codes, self.options = task, exit_codes, options
        self.messages: list[dict] = []
        if options.system_prompt:
            self.messages.append({"role": "system", "content": options.system_prompt})
        self.messages.append({"role": "user", "content": task.prompt or ""})
        self.turn: dict | None = None  # the assistant turn being built
        self.last_turn: dict | None = None  # the latest assistant turn: only its calls can be answered
        self.calls: dict[str, dict] = {}  # call_id -> the turn that made the call
        self.answered: set[str] = set()
        self.skipped: set[str] = set()  # calls left out with their outputs
        self.left_out: Counter = Counter()
        self.raw_args: dict[str, list[dict]] = {}  # raw mode: arguments seen per tool, for the schemas
        self.file_ops: dict[str, list[FileOp]] = {}  # a Claude Code file tool's call_id -> what it did

    def add(self, event: Event) -> None:
        kind = event.kind
        if kind == "user_message":
            self._user(event)
        elif kind == "tool_output":
            self._output(event)
        elif kind == "reasoning":
            if self.options.reasoning == "summary" and event.text:
                self._open()["reasoning"].append(event.text)
        elif kind == "assistant_message":
            if event.text:
                self._open()["texts"].append(event.text)
        else:
            self._call(event)

    def _open(self) -> dict:
        if self.turn is None:
            self.turn = self.last_turn = {"role": "assistant", "texts": [], "reasoning": [], "calls": []}
            self.messages.append(self.turn)
        return self.turn

    def _user(self, event: Event) -> None:
        if event.seq == self.task.first_seq:
            return  # the request itself: tasks.prompt
        if event.is_injected:
            self.left_out["injected context"] += 1
            return
        text = event.text or ""
        self.turn = None
        if self.messages[-1]["role"] == "user" and self.messages[-1]["content"] == text:
            return  # a client retry of the same message
        self.messages.append({"role": "user", "content": text})
        self.last_turn = None  # outputs that arrive after it have lost their place

    def _call(self, event: Event) -> None:
        call_id = event.call_id or f"seq{event.seq}"
        if call_id in self.calls or call_id in self.skipped:
            self.left_out["repeated call"] += 1
            return
        if self.options.tools == "raw":
            mapped = _raw_call(event)
        elif event.tool_name in _FILE_TOOLS and event.record_type == _CLAUDE_CALL:
            mapped = "apply_patch", {"patch": ""}  # the patch: from its file operations (file_op)
            self.file_ops[call_id] = []
        else:
            mapped = _canonical_call(event, self.task.cwd)
        if mapped is None:
            self.skipped.add(call_id)
            self.left_out[f"tool {event.tool_name}"] += 1
            return
        name, args = mapped
        if self.options.tools == "raw":
            self.raw_args.setdefault(name, []).append(args)
        arguments = orjson.dumps(args).decode()
        turn = self._open()
        turn["calls"].append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        self.calls[call_id] = turn

    def file_op(self, event: Event) -> None:
        """A file operation of a Claude Code file tool's call (canonical mode; ignored otherwise)."""
        ops = self.file_ops.get(event.call_id or "")
        if ops is not None and event.args is not None:
            ops.append(event.file_op)

    def _patched(self, call_id: str) -> None:
        """A Claude Code file tool's call, answered: its patch, or it is left out (nothing recorded)."""
        ops = self.file_ops.pop(call_id)
        turn = self.calls.pop(call_id)
        call = next(c for c in turn["calls"] if c["id"] == call_id)
        if ops:
            call["function"]["arguments"] = orjson.dumps({"patch": _patch_text(ops, self.task.cwd)}).decode()
            self.calls[call_id] = turn
            return
        turn["calls"].remove(call)
        self.skipped.add(call_id)
        self.left_out["file tool call without a file operation"] += 1

    def _output(self, event: Event) -> None:
        call_id = event.call_id or ""  # no call has the empty id: an output without its call
        if call_id in self.file_ops and call_id in self.calls:
            self._patched(call_id)
        if call_id in self.skipped:
            return
        turn = self.calls.get(call_id)
        if turn is None or call_id in self.answered or turn is not self.last_turn:
            self.left_out["output without its call"] += 1
            return
        self.answered.add(call_id)
        self.turn = None
        exit_code = self.exit_codes[call_id] if call_id in self.exit_codes else event.exit_code
        name = next(c["function"]["name"] for c in turn["calls"] if c["id"] == call_id)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "name": name,
                              "content": format_observation(event.text, exit_code)})

    def finish(self) -> Trajectory | Drop:
        messages: list[dict] = []
        for message in self.messages:
            if message["role"] == "assistant":
                message = self._assistant(message)
                if message is None:
                    continue
                if messages and messages[-1]["role"] == "assistant":
                    messages[-1] = _merge(messages[-1], message)
                    continue
            messages.append(message)
        while messages[-1]["role"] == "user" and len(messages) > 2:
            messages.pop()  # a follow-up the agent never answered
        if not any(m["role"] == "assistant" for m in messages):
            return Drop(self.task.task_id, "no agent turn")
        ids = {}
        for message in messages:
            for call in message.get("tool_calls", ()):
                ids[call["id"]] = call["id"] = f"call_{len(ids)}"
            if message["role"] == "tool":
                message["tool_call_id"] = ids[message["tool_call_id"]]
        tools = CANONICAL_TOOLS if self.options.tools == "canonical" else _raw_schemas(self.raw_args)
        left_out = tuple(sorted((what, n) for what, n in self.left_out.items() if n))
        return Trajectory(self.task.task_id, tuple(messages), tuple(tools), left_out)

    def _assistant(self, turn: dict) -> dict | None:
        calls = [c for c in turn["calls"] if c["id"] in self.answered]
        if len(calls) < len(turn["calls"]):
            self.left_out["call without output"] += len(turn["calls"]) - len(calls)
        if not calls and not turn["texts"]:
            if turn["reasoning"]:
                self.left_out["reasoning without action"] += 1
            return None
        message = {"role": "assistant", "content": "\n\n".join(turn["texts"])}
        if turn["reasoning"]:
            message["reasoning_content"] = "\n\n".join(turn["reasoning"])
        if calls:
            message["tool_calls"] = calls
        return message


def _merge(first: dict, second: dict) -> dict:
    merged = {"role": "assistant", "content": "\n\n".join(t for t in (first["content"], second["content"]) if t)}
    reasoning = [r for r in (first.get("reasoning_content"), second.get("reasoning_content")) if r]
    if reasoning:
        merged["reasoning_content"] = "\n\n".join(reasoning)
    calls = [*first.get("tool_calls", ()), *second.get("tool_calls", ())]
    if calls:
        merged["tool_calls"] = calls
    return merged


def _canonical_call(event: Event, cwd: str | None) -> tuple[str, dict] | None:
    name = event.tool_name or ""
    patch = patch_input(name, event.args, event.arguments if event.freeform else None, event.command)
    if patch is None and name in _APPLY_PATCH_NAMES:
        patch = event.arguments or ""  # arguments that are not JSON: still what the model wrote
    if patch is not None:
        return "apply_patch", {"patch": extract_patch(patch) or patch}
    if name in SHELL_TOOLS and event.command:
        return "bash", {"command": _in_workdir(event.command, event.workdir, cwd)}
    return None


def _patch_text(ops: list[FileOp], cwd: str | None) -> str:
    """``*** Begin Patch … *** End Patch`` for ``ops``, with paths relative to ``cwd`` (absolute, as
    recorded, when one is outside it)."""
    if cwd:
        try:
            ops = list(rooted(ops, cwd, cwd))
        except PatchError:
            pass
    return render_patch(ops).removesuffix("\n")


def _in_workdir(command: str, workdir: str | None, cwd: str | None) -> str:
    if not workdir or not cwd:
        return command
    target = os.path.normpath(os.path.join(cwd, workdir))
    if target == os.path.normpath(cwd):
        return command
    relative = os.path.relpath(target, cwd)
    return f"cd {shlex.quote(target if relative.startswith('..') else relative)} && {command}"


def _raw_call(event: Event) -> tuple[str, dict] | None:
    name = event.tool_name
    if not name:
        return None
    return name, event.args if event.args is not None else {"input": event.arguments or ""}


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}


def _raw_schemas(seen: dict[str, list[dict]]) -> list[dict]:
    """The agent's own tools as called in the conversation: each tool's parameters are the argument
    names seen, typed by the values seen."""
    tools = []
    for name in sorted(seen):
        props: dict[str, set[str]] = {}
        for args in seen[name]:
            for key, value in args.items():
                props.setdefault(key, set()).add(_JSON_TYPES.get(type(value), "null"))
        required = [k for k in props if all(k in args for args in seen[name])]
        properties = {k: {"type": sorted(t)[0] if len(t) == 1 else sorted(t)} for k, t in props.items()}
        tools.append({"type": "function", "function": {
            "name": name, "description": f"Tool `{name}` (parameters as seen in the logs).",
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    return tools
