"""Bad input is quarantined line by line with a reason; the run goes on and keeps every good line."""

from __future__ import annotations

import os

import orjson
import pytest
from claude_support import FIXADD
from conftest import FIXTURES, query

from logmine.ingest.run import IngestConfig, NothingToIngest, ingest

GOOD = (FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl").__next__().read_bytes().splitlines()

BAD_LINES = {
    b'{"timestamp": "2026-01-01T00:00:00Z", "type": "response_item"': "invalid JSON",
    b'{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":"not an object"}': "unexpected record shape",
    b'{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":5}}':
        "unexpected record shape",
    b"\x00\x01\x02\xff\xfe binary garbage \x89PNG\r\x1a": "invalid UTF-8",
    b'{"type":"event_msg","payload":{"type":"user_message","message":"caf\xe9"}}': "invalid UTF-8",
    b"[1, 2, 3]": "JSON list where an object was expected",
    b"\x01\x02\x03 not json at all": "invalid JSON",
}


def _ingest(tmp_path, *paths, **kw):
    return ingest(IngestConfig(paths=paths, store=tmp_path / "store", **kw))


# (file name, good lines): a Codex rollout and a Claude Code session file, each the real CLI's
MIXED = {"codex": ("rollout-2026-11-29T09-05-18-01a2268d-3796-7fb2-a86f-e93c26513a02.jsonl", GOOD),
         "claude": (FIXADD["2.1.332"].name, FIXADD["2.1.332"].read_bytes().splitlines())}


@pytest.mark.parametrize("fmt", MIXED)
def test_bad_lines_quarantined_good_lines_kept(tmp_path, fmt):
    name, good_lines = MIXED[fmt]
    mixed = tmp_path / name
    lines = list(good_lines)
    for i, bad in enumerate(BAD_LINES):  # interleave, keeping the session_meta first
        lines.insert(2 + 3 * i, bad)
    mixed.write_bytes(b"\n".join(lines) + b"\n")
    summary = _ingest(tmp_path, mixed)
    rows = query(tmp_path / "store", "SELECT line_no, reason, excerpt FROM quarantine ORDER BY line_no")
    assert len(rows) == len(BAD_LINES) == summary.quarantined
    for row, expected in zip(rows, BAD_LINES.values()):
        assert row["reason"].startswith(expected), row
        assert lines[row["line_no"] - 1] in BAD_LINES
    good = query(tmp_path / "store", "SELECT count(DISTINCT line_no) AS n FROM events")[0]["n"]
    assert good == len(good_lines)
    assert summary.formats == {"g2" if fmt == "codex" else "claude": 1}


def test_empty_truncated_and_oversize(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "empty.jsonl").write_bytes(b"")
    truncated = d / "truncated.jsonl"
    truncated.write_bytes(b"\n".join(GOOD[:10]) + b"\n" + GOOD[10][: len(GOOD[10]) // 2])
    (d / "rollout-2025-08-23-0418f71e-beb0-474c-a03d-1719a72e64cc.json").write_bytes(b'{\n  "session": {"id": "x", ')
    huge = d / "huge.jsonl"
    payload = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x" * (50 << 20)}]}
    big_line = orjson.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": payload})
    huge.write_bytes(GOOD[0] + b"\n" + big_line + b"\n" + GOOD[1] + b"\n")
    summary = _ingest(tmp_path, d, max_line_bytes=32 << 20)
    reasons = {(os.path.basename(r["source_path"]), r["reason"].split(":")[0])
               for r in query(tmp_path / "store", "SELECT * FROM quarantine")}
    assert reasons == {
        ("empty.jsonl", "empty file"),
        ("rollout-2025-08-23-0418f71e-beb0-474c-a03d-1719a72e64cc.json", "invalid JSON document"),
        ("huge.jsonl", f"line of {len(big_line)} bytes exceeds the {32 << 20}-byte limit"),
    }
    assert summary.pending == [(str(truncated), len(GOOD[10]) // 2)]  # waits, not quarantined
    assert query(tmp_path / "store", "SELECT count(DISTINCT line_no) AS n FROM events WHERE source_path = ?",
                 [str(huge)])[0]["n"] == 2
    assert ("empty.jsonl" in dict((os.path.basename(p), r) for p, r in summary.bad_files))


def test_unreadable_paths_and_symlink_loops(tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "good.jsonl").write_bytes(b"\n".join(GOOD) + b"\n")
    (d / "sub" / "loop").symlink_to(d)  # directory loop
    (d / "a.jsonl").symlink_to(d / "b.jsonl")
    (d / "b.jsonl").symlink_to(d / "a.jsonl")  # file symlink loop
    (d / "dangling.jsonl").symlink_to(d / "missing.jsonl")
    os.mkfifo(d / "fifo.jsonl")
    summary = _ingest(tmp_path, d)
    bad = {os.path.basename(p): reason for p, reason in summary.bad_files}
    assert bad["a.jsonl"].startswith("cannot read file: Too many levels of symbolic links")
    assert bad["dangling.jsonl"] == "cannot read file: No such file or directory"
    assert bad["fifo.jsonl"] == "cannot read file: not a regular file"
    assert any(reason.startswith("symlink loop") for reason in bad.values())
    assert query(tmp_path / "store", "SELECT count(DISTINCT line_no) AS n FROM events")[0]["n"] == len(GOOD)
    again = _ingest(tmp_path, d)  # bad files are reported once, not re-quarantined
    assert again.quarantined == 0 and again.events == 0


def test_nothing_to_ingest(tmp_path):
    (tmp_path / "empty-dir").mkdir()
    with pytest.raises(NothingToIngest, match="no Codex or Claude Code session files under"):
        _ingest(tmp_path, tmp_path / "empty-dir")
