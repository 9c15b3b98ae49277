"""The typed ``events`` record (:class:`logmine.ingest.records.Event`) and the ghost-snapshot columns
ingest maps for segment (``ghost_commit``, ``ghost_untracked``)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from conftest import FIXTURES, query

from logmine.ingest.records import Event, TokenUsage, thread_token_usage
from logmine.patch import FileOp
from logmine.store.tables import EVENTS

GHOSTED = "AcidicSoil__codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"


def test_a_real_ghost_snapshot_maps_to_its_commit_and_untracked_files(fixture_store):
    store, _ = fixture_store
    rows = query(store, "SELECT record_type, ghost_commit, ghost_untracked, raw FROM events "
                        "WHERE source_path LIKE ? AND ghost_commit IS NOT NULL", [f"%{GHOSTED}"])
    assert len(rows) == 1
    (row,) = rows
    assert row["record_type"] == "response_item/ghost_snapshot"
    assert row["ghost_commit"] == "a01966ef5b7bfb4af9f1a34be1a3c85da2bb0c13"
    snapshot = json.loads(row["raw"])["payload"]["ghost_commit"]  # the line as stored (redacted)
    assert row["ghost_untracked"] == snapshot["preexisting_untracked_files"]
    assert row["ghost_untracked"][0] == ".browser-echo-mcp.json" and len(row["ghost_untracked"]) == 12


def test_every_ghost_snapshot_of_the_fixtures_and_nothing_else_has_a_ghost_commit(fixture_store):
    store, _ = fixture_store
    written = sum(line.count('"type":"ghost_snapshot"') for path in (FIXTURES / "codex-public").glob("*.jsonl")
                  for line in path.read_text().splitlines())
    rows = query(store, "SELECT record_type, ghost_commit FROM events WHERE ghost_commit IS NOT NULL "
                        "OR record_type = 'response_item/ghost_snapshot' OR ghost_untracked IS NOT NULL")
    assert written == 3 and len(rows) == written
    assert all(r["record_type"] == "response_item/ghost_snapshot" and len(r["ghost_commit"]) == 40 for r in rows)


def _event(kind: str, record_type: str, arguments: str | None, **row) -> Event:
    return Event.from_row({"seq": 7, "kind": kind, "record_type": record_type, "arguments": arguments, **row})


def test_from_row_decodes_the_arguments_of_a_function_call():
    event = _event("tool_call", "response_item/function_call", '{"command": ["ls", "-la"], "workdir": "/r"}')
    assert event.args == {"command": ["ls", "-la"], "workdir": "/r"}
    assert event.arguments == '{"command": ["ls", "-la"], "workdir": "/r"}' and not event.freeform


@pytest.mark.parametrize("arguments", ['{"a": 1}', "*** Begin Patch\n*** End Patch"])
def test_a_freeform_input_is_never_decoded(arguments):
    event = _event("tool_call", "response_item/custom_tool_call", arguments)
    assert event.freeform and event.args is None and event.arguments == arguments


@pytest.mark.parametrize("arguments", [None, "", "not json", "[1, 2]", '"text"'])
def test_arguments_that_are_no_json_object_decode_to_none(arguments):
    assert _event("tool_call", "response_item/function_call", arguments).args is None


def test_a_patch_event_holds_its_file_operation():
    op = FileOp(op="add", path="a.py", content="x = 1\n")
    event = _event("patch", "response_item/custom_tool_call", json.dumps(op.to_dict()))
    assert not event.freeform and event.file_op == op
    call = _event("tool_call", "response_item/function_call", json.dumps(op.to_dict()))
    with pytest.raises(ValueError):
        _ = call.file_op


def test_from_row_ignores_other_columns_and_fills_defaults():
    event = Event.from_row({"seq": 1, "kind": "user_message", "record_type": "response_item/message",
                            "is_injected": None, "ghost_untracked": None, "failed": True, "text": "hi"})
    assert (event.text, event.is_injected, event.ghost_untracked, event.ghost_commit) == ("hi", False, (), None)


def test_a_ghost_snapshot_of_an_older_part_is_read_from_its_raw_line():
    """Parts written before the ghost columns existed read them as NULL; the raw line still says."""
    line = {"timestamp": "2025-11-17T21:32:47.052Z", "type": "response_item", "payload": {
        "type": "ghost_snapshot", "ghost_commit": {"id": "c" * 40, "preexisting_untracked_files": ["n.py"]}}}
    old = Event.from_row({"seq": 3, "kind": "other", "record_type": "response_item/ghost_snapshot",
                          "ghost_commit": None, "raw": json.dumps(line)})
    assert (old.ghost_commit, old.ghost_untracked) == ("c" * 40, ("n.py",))
    new = Event.from_row({"seq": 3, "kind": "other", "record_type": "response_item/ghost_snapshot",
                          "ghost_commit": "d" * 40, "ghost_untracked": ["m.py"], "raw": json.dumps(line)})
    assert (new.ghost_commit, new.ghost_untracked) == ("d" * 40, ("m.py",))  # the column wins


def test_the_record_has_a_field_for_every_column_of_the_table():
    # from_row keeps the table's columns: one the record lacked would fail every `SELECT *` reader
    assert {f.name for f in fields(Event)} - {"args"} == set(EVENTS.names)


def test_a_token_count_line_gives_the_threads_running_total():
    total = {"input_tokens": 900, "cached_input_tokens": 400, "output_tokens": 60, "reasoning_output_tokens": 20}
    g2 = {"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": total, "last_token_usage": {**total, "input_tokens": 1}}}}
    record = {"type": "token_usage_record", "payload": {"usage": {"input_tokens": 1},
                                                        "thread_token_usage": {**total, "output_tokens": 61}}}
    assert thread_token_usage(json.dumps(g2)) == TokenUsage(900, 400, 60, 20)
    assert thread_token_usage(json.dumps(record)) == TokenUsage(900, 400, 61, 20)
    assert TokenUsage(900, 400, 60, 20) - TokenUsage(100, 50, 10, 0) == TokenUsage(800, 350, 50, 20)
    rate_limits_only = {"type": "event_msg", "payload": {"type": "token_count", "info": None}}
    for raw in (json.dumps(rate_limits_only), None, "", "not json", "[1]"):
        assert thread_token_usage(raw) is None
