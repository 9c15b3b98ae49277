"""The shortcuts that make ingest fast give what the plain way gives.

Each fast path is checked against the slow one it replaces: redacting a chunk of lines against
redacting each line alone, one prefilter scan of joined lines against a scan of each line, a rule
tried only where its keyword starts against ``finditer`` (structured keys too), the base64 block
search against its regex, encrypted reasoning cut out by ``find`` against its regex, column-built
Arrow tables against ``from_pylist``, the ``ts`` column parsed by Arrow against each stamp parsed by Python (events kept as columns too), worker processes that hand
write their groups' rows as parts, against reading in-process (copies of a file among them too), the cached Hyperscan database
against a fresh compile. Secrets are generated when the test runs.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import FIXTURES, query
from redact.planted import planted

import logmine.ingest.run as run
from logmine.ingest.records import EventRows, parse_ts, ts_array
from logmine.ingest.run import IngestConfig, ingest
from logmine.redact import Redactor, encoded
from logmine.redact.engine import matches, ruleset
from logmine.redact.patterns import JSON_PAIRS, OPAQUE, keyed_value, replace_spans, secret_key_kind
from logmine.redact.prefilter import mask_opaque
from logmine.store.rows import table_of
from logmine.store.tables import EVENTS, SESSIONS, TS

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
    texts = _log_lines() + ["é api_key=abc123DEF456ghi789", "İ token: abc123DEF456ghi789x"]  # İ lower-cases to 2
    pieces.append("é")
    texts += ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 60))) for _ in range(3000)]
    for text in texts:
        assert [m.span() for m in matches(rule, text)] == [m.span() for m in rule.regex.finditer(text)], text


def test_structured_keys_tried_before_their_key_words_find_what_finditer_finds():
    rnd = random.Random(5)
    quotes = ['"', "'", '\\"', '\\\\\\"', '\\\\\\\\\\"']  # ", ', \", \\\", \\\\\"
    keys = ["db_password", "api_key", "Token", "x_pwd", "A" * 39 + "key", "B" * 41 + "secret", "my.secret-key", "é_key"]
    noise = ["x", "é", " ", ":", ",", "{", "\\", "İ"]

    def text() -> str:
        out = []
        for _ in range(rnd.randint(1, 4)):
            q, r = rnd.choice(quotes), rnd.choice(quotes)
            out.append(rnd.choice(noise) + f"{q}{rnd.choice(keys)}{rnd.choice([q, r])}{rnd.choice([': ', ':', ' : '])}"
                       f"{q}{rnd.choice(['s3cr3tValue99', 'hunter2', '', '${X}'])}{rnd.choice([q, r])}")
        return "".join(out)

    texts = _log_lines() + [text() for _ in range(3000)]
    fast, slow = Redactor(), Redactor()
    for text in texts:
        expected = text
        for pairs in JSON_PAIRS:  # what _structured did before: finditer over the whole text
            key, value = (2, 3) if pairs.groups == 3 else (1, 2)
            expected = replace_spans(expected, [(m.start(value), m.end(value), kind) for m in pairs.finditer(expected)
                                                if (kind := secret_key_kind(m[key])) and keyed_value(m[value], kind)],
                                     slow.counts)
        assert fast._structured(text, fast.counts) == expected, text
    assert fast.counts == slow.counts and sum(slow.counts.values()) > 100


def test_one_scan_of_joined_lines_flags_every_rule_a_line_alone_flags():
    prefilter = ruleset().prefilter
    lines = [line.encode() for line in _log_lines()]
    lines += [b"curl -u admin:hunter2secret", b"oc login --token=sha256~" + b"a" * 43]  # rules ending in \Z
    together = prefilter.rules_by_data(lines)
    for i, line in enumerate(lines):
        alone = prefilter.rules_by_data([line]).get(0, frozenset())
        assert alone <= together.get(i, frozenset()), line


def test_encrypted_reasoning_is_cut_out_as_its_regex_cuts_it():
    lines = [line for path in sorted(FIXTURES.rglob("*.jsonl")) for line in path.read_text().splitlines()]
    lines += ['{"encrypted_content" : "gAAAA1", "x": {"encrypted_content":"gAAAA2"}}', '{"encrypted_content":"a\\\\b"}']
    assert sum('"encrypted_content"' in line for line in lines) > 10
    for line in lines:
        assert mask_opaque(line.encode()) == OPAQUE.sub(lambda m: m[1] + m[3], line).encode(), line


def test_base64_blocks_are_found_where_the_block_regex_finds_them():
    rnd = random.Random(7)
    alphabet = "AbZ09+/_-"
    texts = _log_lines()
    for _ in range(2000):
        parts = [rnd.choice(["", " ", "\\n", "\\\\n", "\\t", "\n", "=", '"', "\\"])]
        for _ in range(rnd.randint(1, 4)):
            parts.append("".join(rnd.choice(alphabet) for _ in range(rnd.randint(10, 150))))
            parts.append(rnd.choice(["\\n", "\n", "\\r\\n", " ", "==", "\\", "x\\n", "é", "日本"]))
        texts.append("".join(parts))
    for text in texts:
        assert [m.span() for m in encoded._blocks(text)] == [m.span() for m in encoded._BLOCK.finditer(text)], text


def test_tables_built_by_column_equal_from_pylist():
    rows = [dict.fromkeys(EVENTS.names), {"seq": 3, "kind": "tool_call", "text": "é", "is_injected": True}]
    assert table_of(rows, EVENTS).equals(pa.Table.from_pylist(rows, schema=EVENTS))
    sessions = [{"session_id": "s", "file_gen": 1}]  # a headerless file's session names five columns
    assert table_of(sessions, SESSIONS).equals(pa.Table.from_pylist(sessions, schema=SESSIONS))


def test_events_kept_as_columns_make_the_table_rows_make():
    rnd = random.Random(3)
    events, rows = EventRows(), []
    for seq in range(500):
        fields = {name: rnd.choice([None, "é" * seq, f"v{seq}"]) for name in ("role", "text", "command", "session_id")
                  if rnd.random() < 0.4}
        if rnd.random() < 0.2:
            fields["exit_code"] = rnd.choice([0, 1, None])
        dense = (None if seq % 7 else "s", seq, seq, seq * 10, None, "t", "tool_call", "rt", "p", "g2", "{}", 1, False)
        events.append(dense, dict(fields))
        rows.append({**dict(zip(EventRows.DENSE, dense)), **fields})
    events.set_missing("session_id", "sid")
    rows = [{**row, "session_id": row["session_id"] or "sid"} for row in rows]
    events.truncate(450)
    assert events.table().equals(table_of(rows[:450], EVENTS)) and events.first("seq") == 0


STAMPS = ["2025-09-01T12:34:56.123Z", "2025-09-01T12:34:56.123456Z", "2025-09-01T12:34:56.123456789Z",
          "2025-09-01T12:34:56Z", "2025-09-01T12:34:56+02:00", "2025-09-01T12:34:56.5-0130", "1969-12-31T23:59:59.9999Z",
          "2025-09-01 12:34:56Z", "2025-09-01T12:34Z", "2024-02-29T00:00:00.000Z", None]


@pytest.mark.parametrize("odd", [None, "2025-09-01T12:34:56", "2025-09-01", "20250901T123456Z", "not a time",
                                 "9999-12-31T23:59:59Z", "2025-13-01T00:00:00Z"])
def test_the_ts_column_parsed_at_once_equals_each_stamp_parsed_alone(odd):
    stamps = [*STAMPS, odd]
    assert ts_array(stamps).equals(pa.array([parse_ts(s) for s in stamps], TS))


def test_ingest_imports_no_pandas(tmp_path):
    code = ("import sys; from pathlib import Path; from logmine.ingest.run import IngestConfig, ingest; "
            f"ingest(IngestConfig(paths=(Path({str(FIXTURES / 'codex-generated')!r}),), store=Path({str(tmp_path)!r}), "
            "jobs=1)); print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture
def parallel_always(monkeypatch):
    monkeypatch.setattr(run, "PARALLEL_MIN_BYTES", 0)  # a small corpus goes to worker processes too
    monkeypatch.setattr(run, "GROUP_MIN_BYTES", 1)  # in groups of a few files each


def test_worker_processes_store_what_one_process_stores(tmp_path, parallel_always):
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "codex-generated", corpus)
    (corpus / "secrets.jsonl").write_text("\n".join(_log_lines()[-60:]) + "\n")
    original = sorted(corpus.rglob("*.jsonl"))[0]
    for copy in ("a-copy.jsonl", "zz/copy.jsonl", "zz/copy-2.jsonl"):  # stored once, in whichever group
        (corpus / copy).parent.mkdir(exist_ok=True)
        shutil.copy(original, corpus / copy)
    tables = {}
    for jobs in (1, 2):
        store = tmp_path / f"store-{jobs}"
        if jobs == 2:  # the same key: the same pseudonyms
            store.mkdir()
            shutil.copy(tmp_path / "store-1" / "redaction.json", store)
        ingest(IngestConfig(paths=(corpus,), store=store, jobs=jobs))
        tables[jobs] = [query(store, f"SELECT * EXCLUDE (file_gen) FROM {t} ORDER BY ALL")
                        for t in ("sessions", "events", "quarantine")]
        tables[jobs].append(query(store, "SELECT * EXCLUDE (file_gen, mtime_ns) FROM files ORDER BY ALL"))
        parts = {row["path"] for row in query(store, "SELECT path FROM parts WHERE table_name = 'events'")}
        assert {p.name for p in (store / "events").iterdir()} == parts | {"_empty.parquet"}  # no stray part
    assert sum(row["format"] == "duplicate" for row in tables[2][3]) == 3
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


def test_groups_keep_the_files_in_order_and_end_in_smaller_ones():
    tasks = [run._Task(Path(f"f{i}"), None, i, 1, 250_000) for i in range(800)]  # 200 MB
    groups = run._groups(tasks, 12_500_000, tail=25_000_000)
    sizes = [sum(t.size for t in group) for group in groups]
    assert [t for group in groups for t in group] == tasks
    assert sizes[:14] == [12_500_000] * 14 and max(sizes[14:]) <= 12_500_000 // 4 + 250_000
    assert run._groups(tasks, 12_500_000) == [tasks[i:i + 50] for i in range(0, 800, 50)]
