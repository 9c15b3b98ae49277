"""Every kind of planted secret, in every encoding a log holds it, with both prefilter engines:
none survives, the placeholder names its kind, and a JSON line stays valid JSON."""

from __future__ import annotations

import base64
import json
import re

import pytest
from redact.planted import planted

from logmine.redact import Redactor, redact_table, redact_value

PLANTED = planted()  # random on every run: nothing secret-shaped is committed
ENGINES = [None, "keywords"]  # Hyperscan when installed (else keywords again), and the fallback


def _case_id(p) -> str:
    return f"{p.kind}-{PLANTED.index(p)}"


def _survivors(p, encoding: str, text: str, out: str) -> list[str]:
    if encoding == "base64":
        encoded = text.split(" ", 1)[1]
        return [encoded[i:i + 40] for i in range(0, len(encoded) - 40, 40) if encoded[i:i + 40] in out]
    return [n for n in p.needles if n in out]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("p", PLANTED, ids=_case_id)
def test_no_planted_secret_survives(p, engine):
    for encoding, text in p.variants.items():
        r = Redactor(engine)
        out = r.redact_text(text) if encoding in ("plain", "base64") else r.redact_json_line(text)
        assert not _survivors(p, encoding, text, out), (encoding, out[:400])
        if encoding == "base64":
            assert re.search(r"\[REDACTED:\w+\]", out), out[:200]
        else:
            assert f"[REDACTED:{p.kind}]" in out, (encoding, dict(r.counts), out[:400])
            if encoding != "plain":
                json.loads(out)


@pytest.mark.parametrize("p", PLANTED, ids=_case_id)
def test_chunks_values_and_tables(p):
    lines = [json.dumps({"n": i, "text": "nothing to see"}) for i in range(50)]
    lines[17], lines[33] = p.variants["json"], p.variants["json_in_json"]
    out = Redactor().redact_jsonl(lines)
    assert out[:17] == lines[:17] and out[18:33] == lines[18:33]  # untouched lines are returned as they were
    assert not any(n in line for n in p.needles for line in out)
    value = redact_value({"rows": [p.text, {"nested": p.text}]})
    assert not any(n in json.dumps(value) for n in p.needles)

    import pyarrow as pa
    table = pa.table({"id": [1, 2], "text": [p.text, None], "items": [[p.text], []],
                      "doc": [p.variants["json"], "{}"]})
    clean = redact_table(table)
    assert clean.schema == table.schema and clean["id"] == table["id"]
    dumped = json.dumps(clean.to_pylist())
    assert not any(n in dumped for n in p.needles)
    json.loads(clean["doc"][0].as_py())


def test_the_issue_examples_by_name():
    """The leaks the issue lists, one line each, as they were found."""
    ps = {p.kind + ":" + p.text[:12]: p for p in PLANTED}
    assert len(ps) == len(PLANTED)
    k8s = next(p for p in PLANTED if "tls.key" in p.text)
    out = Redactor().redact_text(k8s.text)
    assert "tls.crt: LS0tCg==" in out and "tls.key: [REDACTED:private_key]" in out
    pem = next(p for p in PLANTED if p.text.startswith("$ cat"))
    doubled = json.dumps({"output": json.dumps({"output": pem.text})})
    assert doubled.count("\\\\n") > 10  # newlines escaped twice
    out = Redactor().redact_json_line(doubled)
    assert json.loads(json.loads(out)["output"])["output"] == "$ cat deploy.pem\n[REDACTED:private_key]\n"


def test_base64_runs_that_hold_no_secret_stay():
    blob = base64.b64encode(b"just a long and boring message without any credentials in it at all").decode()
    png = base64.b64encode(bytes(range(256))).decode()
    for text in (f"echo {blob} | base64 -d", f"data:image/png;base64,{png}"):
        assert Redactor().redact_text(text) == text


def test_threads_share_the_rules_safely():
    from concurrent.futures import ThreadPoolExecutor

    texts = [p.variants["json"] for p in PLANTED] * 20
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda t: Redactor().redact_json_line(t), texts))
    assert all("[REDACTED:" in out for out in outs)
