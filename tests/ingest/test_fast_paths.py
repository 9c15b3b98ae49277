"""The shortcuts that make ingest fast give what the plain way gives.

Each fast path is checked against the slow one it replaces: redacting a chunk of lines against
redacting each line alone, a rule tried only where its keyword starts against ``finditer``, the
base64 block search against its regex, column-built Arrow tables against ``from_pylist``, worker
processes that hand their tables over in files against reading in-process, the cached Hyperscan
database against a fresh compile. Secrets are generated when the test runs.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest
from conftest import FIXTURES, query
from redact.planted import planted

import logmine.ingest.run as run
from logmine.ingest import IngestConfig, ingest
from logmine.ingest.arrow import spill, table_of, unspill
from logmine.redact import Redactor, encoded
from logmine.redact.engine import matches, ruleset
from logmine.store.tables import EVENTS, SESSIONS

PLANTED = planted()


def _log_lines() -> list[str]:
    """Real log lines, and each planted secret as a prompt, a tool output and a shell command."""
    lines = []
    for path in sorted((FIXTURES / "codex-generated").rglob("*.jsonl"))[:2]:
        lines += path.read_text(encoding="utf-8").splitlines()
    for p in PLANTED:
        for text in p.variants.values():
            lines.append(json.dumps({"type": "event_msg", "payload": {"type": "user_message", "message": text}}))
            lines.append(json.dumps({"type": "response_item", "payload": {"type": "function_call_output",
                                                                         "call_id": "c", "output": text}}))
            lines.append(json.dumps({"type": "response_item", "payload": {
                "type": "function_call", "name": "shell", "call_id": "c",
                "arguments": json.dumps({"command": ["bash", "-lc", text]})}}))
    return lines


def test_a_chunk_of_lines_is_redacted_as_each_line_alone():
    # one scan of lines joined by newlines credited a JSON-string pattern's hit to the wrong line
    # (it crosses newlines), and the secret got another rule's kind
    lines = _log_lines()
    alone = Redactor()
    expected = [alone.redact_json_line(line) for line in lines]
    chunk = Redactor()
    assert chunk.redact_jsonl(lines) == expected
    assert chunk.counts == alone.counts and sum(alone.counts.values()) >= len(PLANTED)


def test_a_rule_tried_where_its_keywords_start_finds_what_finditer_finds():
    rule = next(r for r in ruleset().rules if r.starts)
    rnd = random.Random(14)
    pieces = ["api_key", "Auth", "TOKEN", "secret", "passwd", "password", "creds", "= ", ": ", '\\"', '"',
              "x9", "abc123DEF456ghi789", " ", ".", "-", "\\n", "key=", "Api"]
    texts = [line for line in _log_lines() if line.isascii()]
    texts += ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 60))) for _ in range(3000)]
    for text in texts:
        assert [m.span() for m in matches(rule, text)] == [m.span() for m in rule.regex.finditer(text)], text


def test_base64_blocks_are_found_where_the_block_regex_finds_them():
    rnd = random.Random(7)
    alphabet = "AbZ09+/_-"
    texts = _log_lines()
    for _ in range(2000):
        parts = [rnd.choice(["", " ", "\\n", "\\\\n", "\\t", "\n", "=", '"', "\\"])]
        for _ in range(rnd.randint(1, 4)):
            parts.append("".join(rnd.choice(alphabet) for _ in range(rnd.randint(10, 150))))
            parts.append(rnd.choice(["\\n", "\n", "\\r\\n", " ", "==", "\\", "x\\n"]))
        texts.append("".join(parts))
    for text in texts:
        assert [m.span() for m in encoded._blocks(text)] == [m.span() for m in encoded._BLOCK.finditer(text)], text


def test_tables_built_by_column_equal_from_pylist():
    rows = [dict.fromkeys(EVENTS.names), {"seq": 3, "kind": "tool_call", "text": "é", "is_injected": True}]
    assert table_of(rows, EVENTS).equals(pa.Table.from_pylist(rows, schema=EVENTS))
    sessions = [{"session_id": "s", "file_gen": 1}]  # a headerless file's session names five columns
    assert table_of(sessions, SESSIONS).equals(pa.Table.from_pylist(sessions, schema=SESSIONS))


def test_spilled_tables_come_back_whole(tmp_path):
    table = pa.Table.from_pylist([{"seq": i, "text": "x" * i} for i in range(100)], schema=EVENTS)
    path = spill(table, str(tmp_path))
    assert unspill(path).equals(table)
    assert not list(tmp_path.iterdir())


def test_ingest_imports_no_pandas(tmp_path):
    code = ("import sys; from pathlib import Path; from logmine.ingest import IngestConfig, ingest; "
            f"ingest(IngestConfig(paths=(Path({str(FIXTURES / 'codex-generated')!r}),), store=Path({str(tmp_path)!r}), "
            "jobs=1)); print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture
def parallel_always(monkeypatch):
    monkeypatch.setattr(run, "PARALLEL_MIN_BYTES", 0)  # a small corpus goes to worker processes too
    monkeypatch.setattr(run, "SPILL_BYTES", 0)  # and every table they make reaches the driver in a file


def test_worker_processes_store_what_one_process_stores(tmp_path, parallel_always):
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "codex-generated", corpus)
    (corpus / "secrets.jsonl").write_text("\n".join(_log_lines()[-60:]) + "\n")
    tables = {}
    for jobs in (1, 2):
        store = tmp_path / f"store-{jobs}"
        ingest(IngestConfig(paths=(corpus,), store=store, jobs=jobs))
        tables[jobs] = [query(store, f"SELECT * EXCLUDE (file_gen) FROM {t} ORDER BY ALL")
                        for t in ("sessions", "events", "quarantine")]
        tables[jobs].append(query(store, "SELECT * EXCLUDE (file_gen, mtime_ns) FROM files ORDER BY ALL"))
    assert tables[1] == tables[2] and tables[1][1]


def test_the_compiled_rules_are_cached_and_a_bad_cache_is_compiled_again(tmp_path):
    code = ("import json, sys; from logmine.redact import Redactor; "
            "print(json.dumps(sorted(Redactor().redact_text(sys.argv[1]) for _ in [0])))")
    text = PLANTED[0].text
    env = {"LOGMINE_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"}
    first = subprocess.run([sys.executable, "-c", code, text], env=env, capture_output=True, text=True, check=True)
    (cache,) = tmp_path.glob("hyperscan-*.db")
    again = subprocess.run([sys.executable, "-c", code, text], env=env, capture_output=True, text=True, check=True)
    cache.write_bytes(b"[]\nnot a database")
    broken = subprocess.run([sys.executable, "-c", code, text], env=env, capture_output=True, text=True, check=True)
    assert first.stdout == again.stdout == broken.stdout and PLANTED[0].value not in first.stdout
    assert cache.read_bytes() != b"[]\nnot a database"  # compiled again and cached again
