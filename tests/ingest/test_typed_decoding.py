"""Codex lines are decoded straight into typed records (``logmine.ingest.shapes``): what the types
check (the frame: a known kind's payload is an object), what they leave to the mapping (a field's
type, read per record kind), field presence where it matters, and lines of every generation with
their values swapped for other types: each line is mapped or quarantined, never lost, never fatal."""

from __future__ import annotations

import copy
import json
import random

import msgspec
import orjson
import pytest
from conftest import FIXTURES, query

from logmine.ingest.run import IngestConfig, ingest
from logmine.ingest.shapes import EventMsgLine, OtherLine, RecordShapeError, decode_g2, decode_legacy

SESSION = next((FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl"))
HEADER = SESSION.read_bytes().split(b"\n", 1)[0] + b"\n"


def _ingest_lines(tmp_path, *lines: dict | bytes) -> list[dict]:
    """Ingest the fixture's header line and then ``lines``; the events after the header."""
    path = tmp_path / SESSION.name
    path.write_bytes(HEADER + b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n"
                                       for x in lines))
    ingest(IngestConfig(paths=(path,), store=tmp_path / "store"))
    return query(tmp_path / "store", "SELECT * FROM events WHERE line_no > 1 ORDER BY seq")


def _reasons(tmp_path) -> list[str]:
    return [r["reason"] for r in query(tmp_path / "store", "SELECT reason FROM quarantine ORDER BY line_no")]


@pytest.mark.parametrize("payload", [None, 1, "text", [1]])
@pytest.mark.parametrize("kind", ["session_meta", "response_item", "event_msg", "turn_context", "compacted"])
def test_a_known_kind_needs_an_object_payload(kind, payload):
    line = orjson.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload})
    with pytest.raises(RecordShapeError, match=f"^{kind} payload is not an object$"):
        decode_g2(line)
    with pytest.raises(RecordShapeError, match=f"^{kind} payload is not an object$"):
        decode_g2(orjson.dumps({"type": kind}))


def test_other_kinds_are_kept_whatever_their_payload():
    line = decode_g2(b'{"type": "token_usage_record", "payload": [1, 2], "extra": {"a": 1}}')
    assert isinstance(line, OtherLine) and line.type == "token_usage_record" and line.payload == [1, 2]
    assert decode_g2(b'{"type": 7, "payload": 1}').type == 7
    with pytest.raises(RecordShapeError, match="^type is dict, expected a string$"):
        decode_g2(b'{"type": {"a": 1}, "payload": {}}')


def test_fields_the_mapping_does_not_read_are_skipped():
    line = decode_g2(b'{"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count", '
                     b'"info": {"total_token_usage": {"input_tokens": 5}}, "rate_limits": [1, {"x": 2}]}}')
    assert isinstance(line, EventMsgLine) and line.payload.type == "token_count"
    assert not hasattr(line.payload, "info") and not hasattr(line.payload, "rate_limits")


def test_a_present_null_message_is_not_an_absent_one(tmp_path):
    events = _ingest_lines(
        tmp_path,
        {"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg",
         "payload": {"type": "agent_message", "message": None, "text": "from text"}},
        {"timestamp": "2026-01-01T00:00:01Z", "type": "event_msg",
         "payload": {"type": "agent_message", "text": "from text"}},
    )
    assert [e["text"] for e in events] == [None, "from text"]


def test_a_legacy_header_is_an_id_without_a_type():
    header = decode_legacy(b'{"id": "s1", "timestamp": "2025-05-01T00:00:00Z", "instructions": null}')
    item = decode_legacy(b'{"type": "message", "role": "user", "content": []}')
    assert header.id == "s1" and header.type is msgspec.UNSET
    assert item.type == "message" and item.id is msgspec.UNSET


def test_a_field_of_the_wrong_type_is_named_in_the_reason(tmp_path):
    events = _ingest_lines(
        tmp_path,
        {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item",
         "payload": {"type": "function_call", "name": 5, "arguments": "{}", "call_id": "c1"}},
        {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": 3}},
        {"timestamp": "2026-01-01T00:00:02Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": "kept", "name": 5}},  # not read for a message
        b"[1, 2]",
        b'{"type": "response_item", "payload": {',
    )
    assert [e["text"] for e in events] == ["kept"]
    reasons = _reasons(tmp_path)
    assert reasons[:3] == ["unexpected record shape: name is int, expected a string",
                           "unexpected record shape: content is neither a list nor a string",
                           "JSON list where an object was expected"]
    assert reasons[3].startswith("invalid JSON: ")


_VALUES = [1, "x", None, [], {}, 1.5, True, [1, "a"], {"a": 1}, -5, 2**62, {"secs": 1, "nanos": 5}, "1.5s",
           "Exit code: 1\nWall time: 1 seconds\nOutput:\nhi", {"text": "t", "type": "input_text"}]


def _paths(value, prefix=()):
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from _paths(child, (*prefix, key))


def _swapped(obj: dict, rng: random.Random) -> dict:
    obj = copy.deepcopy(obj)
    for _ in range(rng.randint(1, 2)):
        paths = list(_paths(obj))
        if not paths:
            break
        *parents, last = rng.choice(paths)
        target = obj
        for key in parents:
            target = target[key]
        target[last] = copy.deepcopy(rng.choice(_VALUES))
    return obj


@pytest.mark.parametrize("seed", [1, 2])
def test_lines_with_values_of_other_types_are_mapped_or_quarantined(tmp_path, seed):
    """Every Codex generation's fixture lines, a third of them with one or two values swapped for a
    value of another type (or cut short): ingest finishes, and every line is an event or quarantined."""
    rng = random.Random(seed)
    sources = sorted(p for p in (FIXTURES / "codex-generated").rglob("*.jsonl")) \
        + sorted((FIXTURES / "codex-public").glob("*.jsonl"))
    written = {}
    for index, source in enumerate(sources):
        lines = []
        for raw in source.read_bytes().splitlines():
            obj = orjson.loads(raw) if raw.strip() else None
            roll = rng.random()
            if isinstance(obj, dict) and roll < 0.3:
                raw = orjson.dumps(_swapped(obj, rng))
            elif roll < 0.33:
                raw = raw[:rng.randint(1, max(1, len(raw) - 1))]
            lines.append(raw)
        path = tmp_path / "in" / f"{index:02d}-{source.name}"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"\n".join(lines) + b"\n")
        written[str(path)] = sum(1 for line in lines if line.strip())
    summary = ingest(IngestConfig(paths=(tmp_path / "in",), store=tmp_path / "store"))
    assert summary.quarantined > 0 and not summary.bad_files
    seen = query(tmp_path / "store", "SELECT source_path, count(DISTINCT line_no) AS n FROM ("
                 "SELECT source_path, line_no FROM events UNION ALL SELECT source_path, line_no FROM quarantine) "
                 "GROUP BY source_path")
    duplicates = {r["source_path"] for r in query(tmp_path / "store",
                                                  "SELECT source_path FROM files WHERE format = 'duplicate'")}
    assert {r["source_path"]: r["n"] for r in seen} == {p: n for p, n in written.items() if p not in duplicates}
    known = ("unexpected record shape: ", "invalid JSON: ", "invalid UTF-8 at byte ", "JSON ")
    reasons = [r["reason"] for r in query(tmp_path / "store", "SELECT reason FROM quarantine")]
    assert [r for r in reasons if not r.startswith(known)] == []
