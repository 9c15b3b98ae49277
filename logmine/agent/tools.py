"""Tool calls in the policy's own output format, parsed back into ``ToolCall`` records.

Two formats, chosen by name (``parser`` in the GRPO config) or detected (``auto``):

- ``hermes``: ``<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>`` — Qwen2.5,
  Qwen3-8B, Hermes, and the tiny models ``logmine train init-model`` writes;
- ``qwen3_xml``: ``<tool_call><function=bash><parameter=command>ls</parameter></function></tool_call>``
  — Qwen3-Coder / Qwen3.5 (TMax's ``vllm_qwen3_xml``).

A parser returns every well-formed call in order; text around the calls is ignored. A call whose
body does not parse is a format error (``ToolCallError``), not a silent drop: the harness ends the
rollout or answers with format feedback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from logmine.errors import LogmineError

_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_FUNCTION = re.compile(r"^\s*<function=([^>\s]+)>(.*?)</function>\s*$", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", re.S)


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict


class ToolCallError(LogmineError, ValueError):
    """The output holds a ``<tool_call>`` block that does not parse (the message says why)."""


def parse_hermes(text: str) -> list[ToolCall]:
    calls = []
    for body in _BLOCK.findall(text):
        try:
            obj = json.loads(body.strip())
        except json.JSONDecodeError as exc:
            raise ToolCallError(f"the tool call is not valid JSON: {exc.msg}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            raise ToolCallError('the tool call must be a JSON object with a "name"')
        arguments = obj.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                raise ToolCallError("the tool call's arguments are not valid JSON") from None
        if not isinstance(arguments, dict):
            raise ToolCallError("the tool call's arguments must be a JSON object")
        calls.append(ToolCall(obj["name"], arguments))
    return calls


def parse_qwen3_xml(text: str) -> list[ToolCall]:
    calls = []
    for body in _BLOCK.findall(text):
        match = _FUNCTION.match(body)
        if match is None:
            raise ToolCallError("the tool call must hold one <function=NAME>...</function>")
        calls.append(ToolCall(match[1], {k: v for k, v in _PARAMETER.findall(match[2])}))
    return calls


def parse_auto(text: str) -> list[ToolCall]:
    """``qwen3_xml`` when the first call starts with ``<function=``, else ``hermes``."""
    first = _BLOCK.search(text)
    if first and first[1].lstrip().startswith("<function="):
        return parse_qwen3_xml(text)
    return parse_hermes(text)


PARSERS: dict[str, Callable[[str], list[ToolCall]]] = {
    "auto": parse_auto, "hermes": parse_hermes, "qwen3_xml": parse_qwen3_xml}


def format_hermes(call: ToolCall) -> str:
    """The text a hermes-format model emits for ``call`` (used to write solved demonstrations)."""
    return "<tool_call>\n" + json.dumps({"name": call.name, "arguments": call.arguments}) + "\n</tool_call>"
