"""Ingest reads what real files look like: a BOM, a broken first line, compressed rollouts, the same
session at two paths, out-of-range and wrongly typed fields, a second session_meta."""

from __future__ import annotations

import gzip
import json
import shutil

import orjson
import pyarrow as pa
import pytest
from conftest import FIXTURES, query

from logmine.ingest.run import IngestConfig, ingest

SESSION = next((FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl"))
NAME = SESSION.name
SID = NAME[-42:-6]


def _ingest(tmp_path, *paths):
    return ingest(IngestConfig(paths=paths, store=tmp_path / "store"))


def _count(tmp_path, table: str) -> int:
    return query(tmp_path / "store", f"SELECT count(*) AS n FROM {table}")[0]["n"]


@pytest.fixture(scope="module")
def plain_events(tmp_path_factory) -> int:
    path = tmp_path_factory.mktemp("plain")
    _ingest(path, SESSION)
    return _count(path, "events")


def test_bom_is_stripped(tmp_path, plain_events):
    path = tmp_path / NAME
    path.write_bytes(b"\xef\xbb\xbf" + SESSION.read_bytes())
    _ingest(tmp_path, path)
    assert _count(tmp_path, "quarantine") == 0 and _count(tmp_path, "events") == plain_events
    (session,) = query(tmp_path / "store", "SELECT session_id, cwd FROM sessions")
    assert session["session_id"] == SID and session["cwd"]


@pytest.mark.parametrize("broken", [b"{", b'{"timestamp": "2026-01-01T00:00:00Z", "type": "sess'])
def test_broken_first_line_does_not_make_a_g0_document(tmp_path, plain_events, broken):
    path = tmp_path / NAME
    path.write_bytes(broken + b"\n" + SESSION.read_bytes())
    summary = _ingest(tmp_path, path)
    assert summary.formats == {"g2": 1}
    assert _count(tmp_path, "events") == plain_events
    assert [r["line_no"] for r in query(tmp_path / "store", "SELECT line_no FROM quarantine")] == [1]


def test_compressed_rollouts_are_read_as_streams(tmp_path, plain_events):
    gz = tmp_path / "in" / (NAME + ".gz")
    zst = tmp_path / "in" / (NAME.replace(SID, "00000000-0000-0000-0000-000000000001") + ".zst")
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(SESSION.read_bytes()))
    other = SESSION.read_bytes().replace(SID.encode(), b"00000000-0000-0000-0000-000000000001")
    with pa.CompressedOutputStream(str(zst), "zstd") as out:
        out.write(other)
    summary = _ingest(tmp_path, gz.parent)
    assert summary.changes["new"] == 2 and not summary.bad_files
    assert _count(tmp_path, "quarantine") == 0 and _count(tmp_path, "events") == 2 * plain_events
    assert _ingest(tmp_path, gz.parent).changes["unchanged"] == 2


def test_truncated_compressed_stream_keeps_what_it_has(tmp_path):
    gz = tmp_path / (NAME + ".gz")
    data = gzip.compress(SESSION.read_bytes())
    gz.write_bytes(data[: len(data) // 2])
    summary = _ingest(tmp_path, gz)
    assert not summary.bad_files and _count(tmp_path, "events") > 0


def test_same_session_at_two_paths_is_stored_once(tmp_path, plain_events):
    for folder in ("sessions", "archived_sessions"):
        (tmp_path / folder).mkdir()
        shutil.copy(SESSION, tmp_path / folder / NAME)
    _ingest(tmp_path, tmp_path / "sessions", tmp_path / "archived_sessions")
    assert _count(tmp_path, "sessions") == 1 and _count(tmp_path, "events") == plain_events
    rows = query(tmp_path / "store", "SELECT source_path, format, duplicate_of FROM files ORDER BY source_path")
    assert rows == [
        {"source_path": str(tmp_path / "archived_sessions" / NAME), "format": "g2", "duplicate_of": None},
        {"source_path": str(tmp_path / "sessions" / NAME), "format": "duplicate",
         "duplicate_of": str(tmp_path / "archived_sessions" / NAME)},
    ]


def _with_line(tmp_path, line: dict):
    path = tmp_path / NAME
    path.write_bytes(SESSION.read_bytes() + json.dumps(line).encode() + b"\n")  # json: ints beyond 64 bits
    _ingest(tmp_path, path)
    return query(tmp_path / "store", "SELECT line_no, reason FROM quarantine")


@pytest.mark.parametrize(("exit_code", "reason"), [
    (2**63, f"exit_code {2**63} is outside the int64 range"),
    (-(2**63) - 1, f"exit_code {-(2**63) - 1} is outside the int64 range"),
    (2**70, f"exit_code {2**70} is outside the int64 range"),  # beyond 64 bits: still read as the integer it is
])
def test_exit_code_beyond_int64_is_quarantined(tmp_path, plain_events, exit_code, reason):
    line = {"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg",
            "payload": {"type": "exec_command_end", "call_id": "c1", "exit_code": exit_code}}
    (row,) = _with_line(tmp_path, line)
    assert row["reason"] == f"unexpected record shape: {reason}"
    assert _count(tmp_path, "events") == plain_events


def test_exit_code_text_beyond_int64_is_quarantined(tmp_path, plain_events):
    output = "Exit code: 99999999999999999999\nWall time: 0.1 seconds\nOutput:\nok\n"
    line = {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": output}}
    (row,) = _with_line(tmp_path, line)
    assert row["reason"] == "unexpected record shape: exit_code 99999999999999999999 is outside the int64 range"


@pytest.mark.parametrize(("payload", "reason"), [
    ({"type": "function_call", "name": "shell", "call_id": 7, "arguments": "{}"}, "call_id is int, expected a string"),
    ({"type": "function_call", "name": ["shell"], "call_id": "c", "arguments": "{}"}, "name is list, expected a string"),
])
def test_wrong_field_types_are_quarantined(tmp_path, plain_events, payload, reason):
    line = {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": payload}
    (row,) = _with_line(tmp_path, line)
    assert row["reason"] == f"unexpected record shape: {reason}"
    assert _count(tmp_path, "events") == plain_events


def test_second_session_meta_of_another_session_is_a_fork_not_a_bad_line(tmp_path, plain_events):
    meta = orjson.loads(SESSION.read_bytes().splitlines()[0])
    meta["payload"]["id"] = "11111111-2222-3333-4444-555555555555"
    assert _with_line(tmp_path, meta) == []  # the parent's header, copied (tests/ingest/test_forks.py)
    assert query(tmp_path / "store", "SELECT session_id, forked_from_id FROM sessions") == [
        {"session_id": SID, "forked_from_id": "11111111-2222-3333-4444-555555555555"}]
    assert query(tmp_path / "store", "SELECT count(*) AS n FROM events WHERE copied_from IS NOT NULL") == [{"n": 1}]


def test_same_size_edit_in_the_middle_is_detected(tmp_path):
    path = tmp_path / NAME
    data = SESSION.read_bytes()
    path.write_bytes(data)
    _ingest(tmp_path, path)
    middle = len(data) // 2
    start = data.index(b'"', middle)
    edited = data[:start] + b"'" + data[start + 1:]  # same size: one byte, away from head and tail
    assert len(edited) == len(data)
    path.write_bytes(edited)
    summary = _ingest(tmp_path, path)
    assert summary.changes["rewritten"] == 1


def test_appended_gzip_member_is_read_incrementally(tmp_path, plain_events):
    lines = SESSION.read_bytes().splitlines(keepends=True)
    gz = tmp_path / (NAME + ".gz")
    gz.write_bytes(gzip.compress(b"".join(lines[:10])))
    _ingest(tmp_path, gz)
    with open(gz, "ab") as out:
        out.write(gzip.compress(b"".join(lines[10:])))
    summary = _ingest(tmp_path, gz)
    assert summary.changes["grown"] == 1 and _count(tmp_path, "events") == plain_events


def test_corrupt_gzip_is_a_bad_file(tmp_path):
    gz = tmp_path / (NAME + ".gz")
    gz.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 20)
    summary = _ingest(tmp_path, gz)
    assert summary.bad_files == [(str(gz), "cannot read file: corrupt gzip stream: "
                                  "Error -3 while decompressing data: invalid code lengths set")]
