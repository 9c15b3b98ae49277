"""A secret that starts a line is found when the newline before it is escaped (once or twice) in
JSON text, as in a prompt or tool output inside a log line: the rule's leading boundary sees ``n``
of ``\\n``, not a newline. Two PEM blocks in one text, the first cut short, are both found, and
the text between them is left as it was."""

from __future__ import annotations

import json

import pytest
from redact.planted import planted

from logmine.redact import Mask, Redactor

PLANTED = planted()  # random on every run
ENGINES = [None, "keywords"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("p", PLANTED, ids=lambda p: f"{p.kind}-{PLANTED.index(p)}")
def test_secret_after_an_escaped_newline(p, engine):
    text = "python -m pytest -q\n" + p.text
    once = json.dumps({"type": "message", "content": text})
    twice = json.dumps({"type": "function_call_output", "output": json.dumps({"output": text})})
    for line in (once, twice):
        out = Redactor(engine).redact_json_line(line)
        assert not [n for n in p.needles if n in out], out[:300]
        json.loads(out)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cut_pem_block_then_a_whole_one(engine):
    cut = next(p for p in PLANTED if p.kind == "private_key" and "head -4" in p.text)
    gcp = next(p for p in PLANTED if p.kind == "private_key_id")
    text = cut.text + "\nand the service account:\n" + gcp.text
    for line in (json.dumps({"content": text}), json.dumps({"output": json.dumps({"output": text})})):
        out = Redactor(engine).redact_json_line(line)
        assert not [n for n in cut.needles + gcp.needles if n in out], out[:300]


@pytest.mark.parametrize("mask", [None, Mask(bytes(range(32)))], ids=["placeholder", "pseudonym"])
def test_text_between_a_cut_pem_block_and_the_next_is_kept(mask):
    """A script that echoes a cut block, then runs it (as a bundle's solve.sh replays a session):
    gitleaks' private-key body once ran from the first BEGIN to the next block's armour, replacing
    the commands between (a pseudonym turned ``cd`` into another word, a placeholder left the second
    block's body in clear)."""
    cut = next(p for p in PLANTED if p.kind == "private_key" and "head -4" in p.text)
    cd = '(cd "$WORKSPACE/." && '
    text = f"{cd}echo '{cut.text}' >> notes.txt)\n{cd}{cut.text})\n{cd}echo done)\n"
    out = (Redactor(mask=mask) if mask else Redactor()).redact_text(text)
    assert not [n for n in cut.needles if n in out], out
    assert out.count(cd) == 3 and "' >> notes.txt)\n" in out and out.count("$ head -4 key.pem\n") == 2, out
    assert out.count("-----BEGIN RSA PRIVATE KEY-----") == (2 if mask else 0), out


@pytest.mark.parametrize("cut", range(4))
def test_base64_key_cut_at_any_character(cut):
    """An excerpt keeps the tail of an output: a base64 PEM cut anywhere is still found."""
    k8s = next(p for p in PLANTED if p.kind == "private_key" and "tls.key" in p.text)
    tail = k8s.value[len(k8s.value) // 3 + cut:]
    out = Redactor().redact_text(f"...{tail}\n")
    assert k8s.needles[-1] not in out and "[REDACTED:private_key]" in out, out[:200]


@pytest.mark.parametrize("tail", ["", "\n", "9", "xy", "xyz"])
def test_a_secret_at_the_end_of_a_base64_block_is_found(tail):
    """The last quantum of a block whose ``=`` padding was stripped still decodes: a secret's last
    characters there are read (without them ``…KaIU9`` lost its only digit and passed as a word)."""
    import base64

    text = "client id 8842 and client secret nhHECVhQHcyyEzFQVeTkKaIU9" + tail
    block = base64.b64encode(text.encode()).decode()
    for shown in (block, block.rstrip("=")):
        assert Redactor().redact_text(f"data: {shown}") == "data: [REDACTED:generic_secret]", shown
