"""Tool-call parsers: both chat formats, malformed calls are errors, never silently dropped."""

from __future__ import annotations

import pytest

from logmine.agent.tools import ToolCall, ToolCallError, format_hermes, parse_auto, parse_hermes, parse_qwen3_xml


def test_hermes_json_call_with_object_or_string_arguments():
    text = 'I will list.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>'
    assert parse_hermes(text) == [ToolCall("bash", {"command": "ls -la"})]
    text = '<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"pwd\\"}"}</tool_call>'
    assert parse_hermes(text) == [ToolCall("bash", {"command": "pwd"})]


def test_qwen3_xml_call_keeps_multiline_parameters_verbatim():
    text = ("<think>\nok\n</think>\n<tool_call>\n<function=bash>\n<parameter=command>\ncat <<'EOF' > a.py\n"
            "print(1)\nEOF\n</parameter>\n</function>\n</tool_call>")
    assert parse_qwen3_xml(text) == [ToolCall("bash", {"command": "cat <<'EOF' > a.py\nprint(1)\nEOF"})]


def test_auto_detects_the_format_and_keeps_order():
    xml = "<tool_call><function=bash><parameter=command>ls</parameter></function></tool_call>"
    hermes = '<tool_call>{"name": "bash", "arguments": {"command": "pwd"}}</tool_call>'
    assert parse_auto(xml) == [ToolCall("bash", {"command": "ls"})]
    assert parse_auto(hermes + hermes) == [ToolCall("bash", {"command": "pwd"})] * 2
    assert parse_auto("no call here") == []


@pytest.mark.parametrize("text, message", [
    ("<tool_call>{not json}</tool_call>", "the tool call is not valid JSON: Expecting property name enclosed in "
                                          "double quotes"),
    ('<tool_call>{"arguments": {}}</tool_call>', 'the tool call must be a JSON object with a "name"'),
    ('<tool_call>{"name": "bash", "arguments": [1]}</tool_call>', "the tool call's arguments must be a JSON object"),
])
def test_malformed_hermes_calls_raise_with_the_reason(text, message):
    with pytest.raises(ToolCallError) as info:
        parse_hermes(text)
    assert str(info.value) == message


def test_malformed_xml_call_raises():
    with pytest.raises(ToolCallError, match="one <function=NAME>"):
        parse_qwen3_xml("<tool_call><parameter=command>ls</parameter></tool_call>")


def test_format_hermes_round_trips():
    call = ToolCall("bash", {"command": 'echo "hi" > a.txt'})
    assert parse_hermes(format_hermes(call)) == [call]
