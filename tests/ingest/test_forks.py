"""Forked, resumed and compacted sessions: what ingest marks as copied history, and how it links forks.

The shapes are those of real files (ivanma9/ship, MIT: sub-agents of Codex 0.114 spawned with their
parent's context; Hoper-J/cpolar-connect, MIT: a conversation backtracked in Codex 0.36), cut down
to a few lines each.
"""

from __future__ import annotations

import json

from conftest import query

from logmine.ingest.run import IngestConfig, ingest

PARENT = "019ce3fb-1087-7980-8f92-8d0171aaea6a"
CHILD = "019ce419-22de-7f50-80eb-86a44f32465b"
PARENT_TURN = "019ce3fb-2a61-7f33-9d7e-6c1f0e5e3b01"  # began before the child existed
CHILD_TURN = "019ce419-230c-7d72-b234-3b3dd291d611"
GIT = {"commit_hash": "2ac98e0e737852e5b1502a1626c7ba3dd425ac95", "branch": "004-optimize-query-flows",
       "repository_url": "https://github.com/ivanma9/ship.git"}


def _line(ts: str, kind: str, payload: dict) -> dict:
    return {"timestamp": ts, "type": kind, "payload": payload}


def _meta(ts: str, sid: str, **extra) -> dict:
    return _line(ts, "session_meta", {"id": sid, "timestamp": ts, "cwd": "/w/ship", "originator": "codex_cli_rs",
                                      "cli_version": "0.114.0", "model_provider": "openai", "git": GIT, **extra})


def _user(ts: str, text: str, turn: str | None = None) -> list[dict]:
    return [_line(ts, "response_item", {"type": "message", "role": "user",
                                        "content": [{"type": "input_text", "text": text}]}),
            _line(ts, "event_msg", {"type": "user_message", "message": text, "images": []}
                  | ({"turn_id": turn} if turn else {}))]


def _exec(ts: str, call_id: str, cmd: str, output: str) -> list[dict]:
    return [_line(ts, "response_item", {"type": "function_call", "name": "exec_command", "call_id": call_id,
                                        "arguments": json.dumps({"cmd": cmd, "workdir": "/w/ship"})}),
            _line(ts, "response_item", {"type": "function_call_output", "call_id": call_id, "output": output})]


def _parent_history(ts: str) -> list[dict]:
    """What a sub-agent's file copies from its parent: the parent's header and rollout, one burst."""
    replacement = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Write the spec."}]},
                   {"type": "compaction", "encrypted_content": "gAAAAABpscoq"}]
    return [
        _meta(ts, PARENT, source="cli"),
        _line(ts, "event_msg", {"type": "task_started", "turn_id": PARENT_TURN, "model_context_window": 258400}),
        _line(ts, "turn_context", {"turn_id": PARENT_TURN, "cwd": "/w/ship", "model": "gpt-5.4"}),
        *_user(ts, "lets implement a plan to improve the coverage", PARENT_TURN),
        *_exec(ts, "call_parent_1", "pnpm test", "Chunk ID: 2f7e18\nWall time: 1.5 seconds\nProcess exited with code 1\n"
               "Original token count: 12\nOutput:\nFAIL src/upload.test.ts\n"),
        _line(ts, "compacted", {"message": "", "replacement_history": replacement}),
        _line(ts, "event_msg", {"type": "context_compacted"}),
        _line(ts, "response_item", {"type": "function_call", "name": "spawn_agent", "call_id": "call_spawn",
                                    "arguments": json.dumps({"agent_type": "worker", "fork_context": True,
                                                             "message": "Implement Batch 3"})}),
        _line(ts, "response_item", {"type": "function_call_output", "call_id": "call_spawn", "output": (
            "You are the newly spawned agent. The prior conversation history was forked from your parent agent. "
            "Treat the next user message as your new task, and use the forked history only as background context.")}),
    ]


def _subagent_fork(own_ts: str = "2026-03-12T22:09:38.900Z") -> list[dict]:
    """A sub-agent spawned with its parent's context; its own first line comes ``own_ts``."""
    source = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1, "agent_nickname": "Wegener",
                                            "agent_role": "worker"}}}
    return [
        _meta("2026-03-12T22:09:38.561Z", CHILD, forked_from_id=PARENT, source=source, agent_nickname="Wegener",
              agent_role="worker"),
        *_parent_history("2026-03-12T22:09:38.562Z"),
        _line(own_ts, "event_msg", {"type": "task_started", "turn_id": CHILD_TURN, "model_context_window": 258400}),
        _line(own_ts, "turn_context", {"turn_id": CHILD_TURN, "cwd": "/w/ship", "model": "gpt-5.4"}),
        *_user(own_ts, "Implement Batch 3 from the coverage plan in your forked workspace.", CHILD_TURN),
        *_exec(own_ts, "call_child_1", "pnpm test", "Chunk ID: 0f354d\nWall time: 1.3 seconds\n"
               "Process exited with code 0\nOriginal token count: 5\nOutput:\nok\n"),
    ]


def _backtracked_fork() -> list[dict]:
    """Codex 0.36: a conversation backtracked to an earlier message is a new session holding the old
    one's header and history up to there, re-stamped; no ``forked_from_id``, no turn ids."""
    child, parent = "613a9a68-8816-40b2-a2d4-041ade599da6", "9cd28a74-da7e-4458-a91a-fffec2be9d7a"
    meta = {"cwd": "/w/cpolar", "originator": "codex_cli_rs", "cli_version": "0.36.0"}
    return [
        _line("2025-09-16T06:12:31.309Z", "session_meta", {"id": child, "timestamp": "2025-09-16T06:12:31.257Z", **meta}),
        _line("2025-09-16T06:12:37.389Z", "session_meta", {"id": parent, "timestamp": "2025-09-16T04:47:48.362Z", **meta}),
        *_user("2025-09-16T06:12:37.390Z", "检查目前项目的设计"),
        *_exec("2025-09-16T06:12:37.395Z", "call_a", "ls", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nsrc\n"),
        *_user("2025-09-16T06:12:37.527Z", "可以，开始实施"),
        *_user("2025-09-16T06:13:00.267Z", "等下再继续，目前每个命令的描述风格似乎不一致"),  # the child's own
        _line("2025-09-16T06:13:34.119Z", "event_msg", {"type": "agent_message", "message": "好的"}),
    ]


def _write(tmp_path, lines: list[dict], name: str = f"rollout-2026-03-12T17-09-38-{CHILD}.jsonl"):
    path = tmp_path / "sessions" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def _ingest(tmp_path):
    ingest(IngestConfig(paths=(tmp_path / "sessions",), store=tmp_path / "store", jobs=1))
    return tmp_path / "store"


def _copied(store) -> list[tuple]:
    return [(r["line_no"], r["copied_from"]) for r in query(
        store, "SELECT DISTINCT line_no, copied_from FROM events ORDER BY line_no")]


def test_subagent_fork_marks_the_parents_history_and_links_the_parent(tmp_path):
    lines = _subagent_fork()
    _write(tmp_path, lines)
    store = _ingest(tmp_path)
    assert query(store, "SELECT count(*) AS n FROM quarantine") == [{"n": 0}]
    (session,) = query(store, "SELECT session_id, source, parent_session_id, forked_from_id FROM sessions")
    assert session == {"session_id": CHILD, "source": "subagent:thread_spawn", "parent_session_id": PARENT,
                       "forked_from_id": PARENT}
    copy = range(2, 2 + len(_parent_history("")))  # the parent's header to the spawn call's output
    # the child's first turn comes 0.34 s after the copy, within COPY_GAP_S: its turn id, begun after the
    # child was created, ends the copy
    assert _copied(store) == [(n, PARENT if n in copy else None) for n in range(1, len(lines) + 1)]
    requests = query(store, "SELECT text, copied_from FROM events WHERE kind = 'user_message' "
                            "AND record_type = 'response_item/message' ORDER BY seq")
    assert requests == [{"text": "lets implement a plan to improve the coverage", "copied_from": PARENT},
                        {"text": "Implement Batch 3 from the coverage plan in your forked workspace.",
                         "copied_from": None}]


def test_compacted_lines_in_a_copy_are_read_and_their_history_is_not_replayed(tmp_path):
    _write(tmp_path, _subagent_fork())
    store = _ingest(tmp_path)
    rows = query(store, "SELECT record_type, copied_from FROM events WHERE kind = 'compaction' ORDER BY seq")
    assert rows == [{"record_type": "compacted", "copied_from": PARENT},
                    {"record_type": "event_msg/context_compacted", "copied_from": PARENT}]
    # the user message inside replacement_history is a summary of the history, not an event
    assert query(store, "SELECT count(*) AS n FROM events WHERE text = 'Write the spec.'") == [{"n": 0}]


def test_backtracked_fork_without_forked_from_id_is_linked_by_the_copied_header(tmp_path):
    lines = _backtracked_fork()
    _write(tmp_path, lines, "rollout-2025-09-16T14-12-31-613a9a68-8816-40b2-a2d4-041ade599da6.jsonl")
    store = _ingest(tmp_path)
    (session,) = query(store, "SELECT forked_from_id, parent_session_id FROM sessions")
    assert session == {"forked_from_id": "9cd28a74-da7e-4458-a91a-fffec2be9d7a", "parent_session_id": None}
    # the copy is one burst; the child's own message follows it 22.7 s later
    parent = session["forked_from_id"]
    assert _copied(store) == [(1, None), *((n, parent) for n in range(2, 9)), (9, None), (10, None), (11, None)]


def test_a_copy_read_in_two_runs_is_marked_as_in_one(tmp_path):
    lines = _subagent_fork()
    path = _write(tmp_path, lines[:6])  # the file as it was while Codex was still writing the copy
    _ingest(tmp_path)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    grown = _ingest(tmp_path)
    whole = tmp_path / "whole"
    _write(whole, lines)
    assert _copied(grown) == _copied(_ingest(whole))


def test_resumed_session_repeating_its_own_header_copies_nothing(tmp_path):
    sid = "019b75dc-7d05-75e1-9fa9-7d47023ec98d"
    lines = [_meta("2026-01-01T10:00:00.000Z", sid), *_user("2026-01-01T10:00:01.000Z", "Fix the build"),
             _meta("2026-01-02T09:00:00.000Z", sid), *_user("2026-01-02T09:00:01.000Z", "Now add a test")]
    _write(tmp_path, lines, f"rollout-2026-01-01T10-00-00-{sid}.jsonl")
    store = _ingest(tmp_path)
    assert query(store, "SELECT count(*) AS n FROM quarantine") == [{"n": 0}]
    assert query(store, "SELECT forked_from_id FROM sessions") == [{"forked_from_id": None}]
    assert all(copied is None for _, copied in _copied(store))
