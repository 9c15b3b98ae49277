"""Forked, resumed and compacted sessions cut into tasks: a request is a task of the session that
received it, never again of a session that copied it with its history."""

from __future__ import annotations

import json

from conftest import query
from session_builder import SessionBuilder, segmented

FIX = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"


def _parent() -> SessionBuilder:
    return (SessionBuilder().user("Fix the add function").run("pytest -q", 1).patch(FIX).run("pytest -q", 0)
            .agent("Fixed.").user("Now write a README").run("ls").agent("Written."))


def _fork(parent: SessionBuilder, upto: int, **meta) -> SessionBuilder:
    """A session holding ``parent``'s first ``upto`` lines (its header first), copied in one burst as
    Codex writes a fork's history: each line re-stamped a millisecond after the one before."""
    child = SessionBuilder()
    child.lines[0]["payload"].update(meta)
    stamp = child.lines[0]["timestamp"][:-4]  # "…T00:00:02." of the child's header
    child.lines += [{**line, "timestamp": f"{stamp}{n + 1:03d}Z"} for n, line in enumerate(parent.lines[:upto])]
    child._t += 5  # the child's own first line comes seconds later (someone typed it)
    return child


def _prompts(store, session_id: str) -> list[str]:
    return [t["prompt"] for t in query(store, "SELECT prompt FROM tasks WHERE session_id = ? ORDER BY index",
                                       [session_id])]


def test_forked_session_keeps_only_its_own_requests(tmp_path):
    parent = _parent()
    upto = next(i for i, line in enumerate(parent.lines) if "README" in json.dumps(line))  # forked before it
    child = _fork(parent, upto - 1).user("Now add a sub function").patch(FIX).run("pytest -q", 0).agent("Added.")
    store, summary = segmented(tmp_path, parent, child)
    assert _prompts(store, parent.session_id) == ["Fix the add function", "Now write a README"]
    assert _prompts(store, child.session_id) == ["Now add a sub function"]
    (session,) = query(store, "SELECT forked_from_id FROM sessions WHERE session_id = ?", [child.session_id])
    assert session["forked_from_id"] == parent.session_id
    # the copied test runs and patch are nobody's work in the child
    (task,) = query(store, "SELECT first_seq, n_tool_calls FROM tasks WHERE session_id = ?", [child.session_id])
    assert task["n_tool_calls"] == 2 and summary.tasks == 3
    # ... but the copied patch is the child's starting point: its first task starts after it
    (state,) = query(store, "SELECT start_state FROM tasks WHERE session_id = ?", [child.session_id])
    assert [p["task_index"] for p in json.loads(state["start_state"])["prior_patches"]] == [-1]


def test_subagent_fork_yields_no_task_and_names_its_parent(tmp_path):
    parent = _parent()
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": parent.session_id, "depth": 1,
                                           "agent_nickname": "Wegener", "agent_role": "worker"}}}
    child = _fork(parent, len(parent.lines), source=spawn, forked_from_id=parent.session_id,
                  agent_role="worker").user("Implement Batch 3").run("pytest -q", 0)
    store, summary = segmented(tmp_path, parent, child)
    assert _prompts(store, child.session_id) == []
    assert summary.no_task_reasons == {"subagent:thread_spawn session": 1}
    (session,) = query(store, "SELECT parent_session_id, forked_from_id FROM sessions WHERE session_id = ?",
                       [child.session_id])
    assert session == {"parent_session_id": parent.session_id, "forked_from_id": parent.session_id}


def test_resumed_session_keeps_every_request(tmp_path):
    b = SessionBuilder().user("Fix the add function").run("pytest -q", 1).patch(FIX).run("pytest -q", 0)
    b.lines.append({**b.lines[0], "timestamp": "2026-01-02T09:00:00.000Z"})  # `codex resume` repeats the header
    b._t += 3600
    b.user("Now write a README").run("ls").agent("Written.")
    store, _ = segmented(tmp_path, b)
    assert _prompts(store, b.session_id) == ["Fix the add function", "Now write a README"]
    assert query(store, "SELECT count(*) AS n FROM quarantine") == [{"n": 0}]


def test_compacted_history_is_not_a_request(tmp_path):
    b = SessionBuilder().user("Fix the add function").run("pytest -q", 1)
    b._add("compacted", {"message": "", "replacement_history": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the add function"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "An older request"}]},
        {"type": "compaction", "encrypted_content": "gAAAAABpscoq"}]})
    b._add("event_msg", {"type": "context_compacted"})
    b.patch(FIX).run("pytest -q", 0).agent("Fixed.")
    store, summary = segmented(tmp_path, b)
    assert _prompts(store, b.session_id) == ["Fix the add function"]
    assert summary.fail_to_pass == 1
    assert query(store, "SELECT count(*) AS n FROM quarantine") == [{"n": 0}]
