"""Task events → chat messages + tools: tool mapping, what is left out, turn grouping."""

from __future__ import annotations

import dataclasses
import json

import pytest

from logmine.export.trajectory import (
    EVENT_COLUMNS,
    SYSTEM_PROMPT,
    Drop,
    Trajectory,
    TrajectoryOptions,
    build_trajectory,
)
from logmine.ingest.records import Event
from logmine.protocol import CANONICAL_TOOLS
from logmine.segment.records import StartState, Task

TASK = Task(task_id="t-1", session_id="s", source_path="/s.jsonl", index=0, prompt="Fix add", first_seq=0,
            last_seq=99, start_state=StartState(), rebuildable=False, cwd="/repo")
PATCH = "*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n*** End Patch"


def event(seq: int, kind: str, record_type: str = "response_item/function_call", **fields) -> Event:
    """An event as export sft reads it: the row of its query, through :meth:`Event.from_row`."""
    row = dict.fromkeys(EVENT_COLUMNS)
    row.update({"seq": seq, "kind": kind, "record_type": record_type, "is_injected": False, **fields})
    return Event.from_row(row)


def user(seq, text, injected=False):
    return event(seq, "user_message", "response_item/message", text=text, is_injected=injected)


def agent(seq, text):
    return event(seq, "assistant_message", "response_item/message", text=text)


def reasoning(seq, text):
    return event(seq, "reasoning", "response_item/reasoning", text=text)


def call(seq, call_id, tool, arguments, command=None, workdir=None, record_type="response_item/function_call"):
    return event(seq, "tool_call", record_type, call_id=call_id, tool_name=tool, arguments=arguments,
                 command=command, workdir=workdir)


def output(seq, call_id, text, exit_code=None, record_type="response_item/function_call_output"):
    return event(seq, "tool_output", record_type, call_id=call_id, text=text, exit_code=exit_code)


def build(events, exits=None, **options) -> Trajectory:
    result = build_trajectory(TASK, events, exits or {}, TrajectoryOptions(**options))
    assert isinstance(result, Trajectory), result
    return result


def calls(trajectory: Trajectory) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in trajectory.messages for c in m.get("tool_calls", ())]


def test_conversation_shape_and_renumbered_ids():
    events = [user(0, "Fix add"), reasoning(1, "Run the tests first."),
              call(2, "call_Xy", "shell", '{"command": ["bash", "-lc", "pytest -q"]}', "pytest -q", "/repo"),
              output(3, "call_Xy", "F\n", 1),
              call(4, "call_Zz", "apply_patch", PATCH + "\n", record_type="response_item/custom_tool_call"),
              output(5, "call_Zz", "Success. Updated the following files:\nM calc.py\n", 0,
                     "response_item/custom_tool_call_output"),
              agent(6, "Fixed."),
              event(7, "assistant_message", "event_msg/agent_message", text="Fixed.")]  # UI copy: ignored
    t = build(events)
    assert t.task_id == "t-1" and t.tools == CANONICAL_TOOLS
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert t.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert t.messages[1] == {"role": "user", "content": "Fix add"}
    assert t.messages[2] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "bash", "arguments": '{"command":"pytest -q"}'}}]}
    assert t.messages[3] == {"role": "tool", "tool_call_id": "call_0", "name": "bash", "content": "F\n[exit code: 1]"}
    assert calls(t)[1] == ("apply_patch", {"patch": PATCH})
    assert t.messages[5]["content"] == "Success. Updated the following files:\nM calc.py\n[exit code: 0]"
    assert t.messages[6] == {"role": "assistant", "content": "Fixed."}
    assert t.left_out == ()


@pytest.mark.parametrize("tool, arguments, command, record_type", [
    ("apply_patch", json.dumps({"input": PATCH}), None, "response_item/function_call"),
    ("apply_patch", PATCH, None, "response_item/custom_tool_call"),
    ("shell", json.dumps({"command": ["apply_patch", PATCH]}), "apply_patch '...'", "response_item/function_call"),
    ("shell", json.dumps({"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}\nEOF"]}),
     f"apply_patch <<'EOF'\n{PATCH}\nEOF", "response_item/function_call"),
    ("shell_command", json.dumps({"command": f"cd /repo && apply_patch <<'EOF'\n{PATCH}\nEOF"}),
     f"cd /repo && apply_patch <<'EOF'\n{PATCH}\nEOF", "response_item/function_call"),
])
def test_every_apply_patch_form_becomes_the_canonical_tool(tool, arguments, command, record_type):
    t = build([call(1, "c", tool, arguments, command, record_type=record_type), output(2, "c", "Success.", 0)])
    assert calls(t) == [("apply_patch", {"patch": PATCH})]


def test_shell_like_tools_become_bash_with_their_workdir():
    events = [call(1, "a", "exec_command", '{"cmd": "ls"}', "ls"), output(2, "a", "x", 0),
              call(3, "b", "shell_command", '{"command": "make"}', "make", "/repo/sub"), output(4, "b", "", 2),
              call(5, "c", "shell", '{"command": ["ls"]}', "ls", "/elsewhere"), output(6, "c", "", 0),
              call(7, "d", "local_shell", '{"command": ["pwd"]}', "pwd", "/repo/."), output(8, "d", "/repo\n", 0)]
    assert calls(build(events)) == [("bash", {"command": "ls"}), ("bash", {"command": "cd sub && make"}),
                                    ("bash", {"command": "cd /elsewhere && ls"}), ("bash", {"command": "pwd"})]


def test_other_tools_are_left_out_with_their_outputs_and_counted():
    events = [agent(1, "Planning."), call(2, "p", "update_plan", '{"plan": []}'), output(3, "p", "Plan updated"),
              call(4, "w", "write_stdin", '{"session_id": 1, "chars": ""}'), output(5, "w", "more output"),
              call(6, "s", "shell", '{"command": ["ls"]}', "ls"), output(7, "s", "a.py\n", 0), agent(8, "Done.")]
    t = build(events)
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.messages[2]["content"] == "Planning." and calls(t) == [("bash", {"command": "ls"})]
    assert dict(t.left_out) == {"tool update_plan": 1, "tool write_stdin": 1}


def test_raw_mode_keeps_codex_tools_and_infers_their_schemas():
    events = [call(1, "p", "update_plan", '{"plan": [], "explanation": "x"}'), output(2, "p", "Plan updated"),
              call(3, "c", "apply_patch", PATCH, record_type="response_item/custom_tool_call"), output(4, "c", "ok", 0),
              call(5, "s", "shell", '{"command": ["ls"], "workdir": "/repo"}', "ls", "/repo"), output(6, "s", "", 0)]
    t = build(events, tools="raw")
    assert calls(t) == [("update_plan", {"plan": [], "explanation": "x"}), ("apply_patch", {"input": PATCH}),
                        ("shell", {"command": ["ls"], "workdir": "/repo"})]
    schemas = {s["function"]["name"]: s["function"]["parameters"] for s in t.tools}
    assert schemas["shell"] == {"type": "object", "required": ["command", "workdir"],
                                "properties": {"command": {"type": "array"}, "workdir": {"type": "string"}}}
    assert schemas["apply_patch"]["properties"] == {"input": {"type": "string"}}
    assert t.messages[3]["content"] == "Plan updated"  # no exit code: the body alone


def test_reasoning_summaries_only_when_asked():
    events = [reasoning(1, "Think A."), call(2, "a", "shell", '{}', "ls"), output(3, "a", "", 0),
              reasoning(4, "Think B."), agent(5, "Done.")]
    assert not any("reasoning_content" in m for m in build(events).messages)
    t = build(events, reasoning="summary")
    assert [m.get("reasoning_content") for m in t.messages if m["role"] == "assistant"] == ["Think A.", "Think B."]


def test_injected_context_retries_and_followups():
    events = [user(0, "Fix add"), user(1, "<environment_context>…</environment_context>", injected=True),
              agent(2, "Which file?"), user(3, "calc.py"), user(4, "calc.py"), agent(5, "Fixed."),
              user(6, "thanks")]
    t = build(events)
    assert [(m["role"], m["content"]) for m in t.messages[1:]] == [
        ("user", "Fix add"), ("assistant", "Which file?"), ("user", "calc.py"), ("assistant", "Fixed.")]
    assert dict(t.left_out) == {"injected context": 1}


def test_unanswered_calls_stray_outputs_and_merged_turns():
    events = [agent(1, "Looking."), call(2, "a", "shell", '{}', "ls"), call(3, "b", "shell", '{}', "pwd"),
              output(4, "a", "x", 0), output(5, "a", "again", 0), output(6, "zz", "stray", 0),
              call(7, "p", "update_plan", '{}'), output(8, "p", "Plan updated"), agent(9, "One."), agent(10, "Two.")]
    t = build(events)
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert calls(t) == [("bash", {"command": "ls"})]
    assert t.messages[-1] == {"role": "assistant", "content": "One.\n\nTwo."}
    assert dict(t.left_out) == {"call without output": 1, "output without its call": 2, "tool update_plan": 1}


def test_a_task_without_agent_turn_is_dropped():
    events = [reasoning(1, "Hmm."), call(2, "a", "shell", '{"command": ["ls"]}', "ls")]  # interrupted
    result = build_trajectory(TASK, events, {}, TrajectoryOptions(reasoning="summary"))
    assert result == Drop("t-1", "no agent turn")


def test_exit_codes_come_from_the_tool_calls_view_and_copies_hash_alike():
    events = [call(1, "call_A", "shell", '{}', "make"), output(2, "call_A", "built\n", None), agent(3, "ok")]
    t = build(events, {"call_A": 0}, system_prompt="")
    assert t.messages[0] == {"role": "user", "content": "Fix add"}
    assert t.messages[2]["content"] == "built\n[exit code: 0]"
    renamed = [dataclasses.replace(e, call_id="call_B" if e.call_id else None) for e in events]
    assert build(renamed, {"call_B": 0}, system_prompt="").digest == t.digest
    assert t.n_chars > len("built\n[exit code: 0]")


def test_outputs_after_a_new_user_message_and_repeated_calls_are_left_out():
    events = [call(1, "a", "shell", '{}', "ls"), user(2, "stop, use pwd"), output(3, "a", "x", 0),
              call(4, "b", "shell", '{}', "pwd"), call(5, "b", "shell", '{}', "pwd"), output(6, "b", "/repo", 0)]
    t = build(events)
    assert [m["role"] for m in t.messages] == ["system", "user", "user", "assistant", "tool"]
    assert calls(t) == [("bash", {"command": "pwd"})] and t.messages[4]["tool_call_id"] == "call_0"
    assert dict(t.left_out) == {"call without output": 1, "output without its call": 1, "repeated call": 1}


def test_claude_file_tools_become_apply_patch_from_their_file_operations():
    """Claude Code's Edit/Write calls: the patch text of the file operations ingest recorded for them
    (paths relative to the task's cwd, absolute outside it), in the call's place; an edit without a
    recorded operation is left out with its output; raw mode keeps Claude Code's own calls."""
    def claude_call(seq, call_id, tool, args):
        return call(seq, call_id, tool, json.dumps(args), record_type="assistant/tool_use")

    def file_op(seq, call_id, tool, op):
        return event(seq, "patch", f"file_op/{tool}", call_id=call_id, tool_name=tool, arguments=json.dumps(op))

    update = {"op": "update", "path": "/repo/calc.py", "move_to": None, "content": None,
              "hunks": [{"header": None, "lines": ["-    return a - b", "+    return a + b"], "end_of_file": False}]}
    add = {"op": "add", "path": "/tmp/notes.txt", "move_to": None, "hunks": [], "content": "hi\n"}
    events = [user(0, "Fix add"),
              claude_call(1, "e", "Edit", {"file_path": "/repo/calc.py", "old_string": "-", "new_string": "+"}),
              call(2, "b", "Bash", '{"command": "ls"}', "ls", "/repo", record_type="assistant/tool_use"),
              file_op(3, "e", "Edit", update), output(4, "e", "updated", 0, "user/tool_result"),
              output(5, "b", "calc.py\n", 0, "user/tool_result"),
              claude_call(6, "w", "Write", {"file_path": "/tmp/notes.txt", "content": "hi\n"}),
              file_op(7, "w", "Write", add), output(8, "w", "created", 0, "user/tool_result"),
              claude_call(9, "x", "Edit", {"file_path": "/repo/a.py", "old_string": "a", "new_string": "b"}),
              output(10, "x", "updated", 0, "user/tool_result"),
              event(11, "assistant_message", "assistant/text", text="Done.")]
    t = build(events)
    assert calls(t) == [("apply_patch", {"patch": PATCH}), ("bash", {"command": "ls"}),
                        ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: /tmp/notes.txt\n+hi\n*** End Patch"})]
    assert dict(t.left_out) == {"file tool call without a file operation": 1}
    assert [m["role"] for m in t.messages][2:] == ["assistant", "tool", "tool", "assistant", "tool", "assistant"]
    raw = build(events, tools="raw")
    assert [name for name, _ in calls(raw)] == ["Edit", "Bash", "Write", "Edit"]
    assert calls(raw)[0][1] == {"file_path": "/repo/calc.py", "old_string": "-", "new_string": "+"}
