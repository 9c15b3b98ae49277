"""Ingest's tables skip the store's redaction gate (``TableSpec.redacted_at_source``): this test
drives every path by which ``read_file`` makes rows and shows each one redacts.

Every format (G0, G1, G2, history; plain and gzip), a secret appended to every string of every
record (JSON text inside strings planted too), and every quarantine path with a secret in the
bad line: no planted value is in any Parquet part afterwards. The quarantine reasons reached are
checked against the reasons ``logmine/ingest/source.py`` can write, so a new path fails here
until it is driven too.
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
import shutil
from pathlib import Path

from conftest import FIXTURES, query
from redact.leaks import find_leaks
from redact.planted import planted

import logmine.ingest.source as source
from logmine.ingest.run import IngestConfig, ingest
from logmine.store.catalog import TABLES

PLANTED = planted()  # random on every run
NEEDLES = {n for p in PLANTED for n in p.needles}
# ciphertext in real logs, kept opaque by design; "type"/"timestamp" route a record to its mapper
NOT_PLANTED = {"type", "timestamp", "encrypted_content"}
G2 = next((FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl"))
G1 = next((FIXTURES / "codex-generated/codex-0.20.0").glob("*.jsonl"))
HISTORY = FIXTURES / "codex-public/JaydenXsoe__ocodex__history.jsonl"
G0 = next((FIXTURES / "codex-public").glob("*.json"))
# a reason whose excerpt is always empty and that a test cannot reach cheaply (a 1 GiB document)
UNDRIVEN = {"JSON document larger than "}


def _plant(value, texts, key=None):
    """``value`` with a secret appended to every string (JSON text in a string planted inside)."""
    if isinstance(value, dict):
        return {k: _plant(v, texts, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_plant(v, texts) for v in value]
    if isinstance(value, str) and key not in NOT_PLANTED:
        try:
            inner = json.loads(value)
        except ValueError:
            inner = None
        if isinstance(inner, (dict, list)):
            return json.dumps(_plant(inner, texts))
        return value + "\n" + next(texts)
    return value


def _planted_lines(path: Path, texts) -> list[bytes]:
    return [json.dumps(_plant(json.loads(line), texts)).encode() for line in path.read_text().splitlines()]


def _bad_lines(secret: str) -> list[bytes]:
    """One line per quarantine path of a JSON Lines file, each holding ``secret``."""
    quoted = json.dumps(secret)
    return [
        b'{"type": "event_msg", "payload": {"message": ' + quoted.encode() + b', "x": "caf\xe9"}}',  # invalid UTF-8
        b'{"type": "event_msg", "payload": {"message": ' + quoted.encode(),  # invalid JSON
        json.dumps([secret]).encode(),  # not an object
        json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": secret}).encode(),
        json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg", "payload": {"secret": secret}})
        .encode() + b" " * 4096,  # longer than the line limit of this test
    ]


def _inputs(tmp_path: Path) -> Path:
    texts = itertools.cycle([p.text for p in PLANTED])
    d = tmp_path / "in"
    d.mkdir()
    g2 = _planted_lines(G2, texts)
    (d / G2.name).write_bytes(b"\n".join(g2) + b"\n")
    (d / ("gz-" + G2.name + ".gz")).write_bytes(gzip.compress(b"\n".join(g2[:20]) + b"\n"))
    (d / G1.name).write_bytes(b"\n".join(_planted_lines(G1, texts)) + b"\n")
    (d / "history.jsonl").write_bytes(b"\n".join(_planted_lines(HISTORY, texts)) + b"\n")
    (d / G0.name).write_text(json.dumps(_plant(json.loads(G0.read_text()), texts), indent=1))
    # a session whose first lines are lost (no session_meta), then every bad line
    bad = [line for p in PLANTED for line in _bad_lines(p.text)]
    (d / ("rollout-2026-01-01T00-00-00-" + "0" * 8 + "-0000-0000-0000-" + "0" * 12 + ".jsonl")).write_bytes(
        b"\n".join(g2[3:12] + bad) + b"\n")
    secret = PLANTED[0].text
    g0_bad = {"broken": b'{\n "session": {"note": ' + json.dumps(secret).encode(),
              "utf8": b'{\n "session": {"note": ' + json.dumps(secret).encode() + b', "x": "\xe9"},\n "items": []}',
              "shape": b'{\n "session": ' + json.dumps(secret).encode() + b',\n "items": [1]\n}'}
    for name, data in g0_bad.items():
        (d / f"rollout-2025-08-23-{name}.json").write_bytes(data)
    (d / "empty.jsonl").write_bytes(b"")
    return d


def _reason_templates() -> set[str]:
    """The fixed start of every reason ``source.py`` writes to the quarantine."""
    code = Path(source.__file__).read_text()
    calls = re.findall(r'(?:_quarantine\([^,]+,|quarantine\(|bad_file\([^"]+)\s*f?"([^"{]*)', code)
    return {c for c in calls if c}


def test_every_ingest_path_redacts_before_rows_are_made(tmp_path):
    inputs = _inputs(tmp_path)
    assert find_leaks([inputs], NEEDLES)  # the secrets are there to find
    store = tmp_path / "store"
    missing = inputs / "gone.jsonl"  # listed explicitly, cannot be read
    summary = ingest(IngestConfig(paths=(inputs, missing), store=store, jobs=1, max_line_bytes=4096,
                                     redact_style="placeholder"))  # marks to count
    assert summary.formats.keys() >= {"g0", "g1", "g2", "history"} and summary.redactions
    reasons = [r["reason"] for r in query(store, "SELECT reason FROM quarantine")]
    templates = _reason_templates()
    assert len(templates) >= 10, templates
    reached = {t for t in templates if any(r.startswith(t) for r in reasons)}
    assert templates - reached == UNDRIVEN, (templates - reached, sorted(set(reasons)))
    excerpts = [r["excerpt"] for r in query(store, "SELECT excerpt FROM quarantine WHERE excerpt <> ''")]
    assert len(excerpts) >= 4 * len(PLANTED) and all("[REDACTED:" in e for e in excerpts)
    headerless = query(store, "SELECT count(*) AS n FROM sessions WHERE source_path LIKE '%-000000000000.jsonl'")
    assert headerless[0]["n"] == 1
    trusted = [name for name, spec in TABLES.items() if spec.redacted_at_source == "logmine.ingest.source.read_file"]
    parts = [p for name in trusted for p in (store / name).glob("part-*.parquet")]
    assert {p.parent.name for p in parts} == {"sessions", "events", "quarantine"}
    assert find_leaks(parts, NEEDLES) == []
    shutil.rmtree(inputs)  # the store alone, searched whole (catalog included): nothing
    assert find_leaks([store], NEEDLES) == []
