"""Pseudonyms: the same secret gets the same replacement everywhere, the replacement keeps the
secret's shape, a second pass leaves it alone, and the key stays with its store."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import string

import pytest
from calc_repo import calc_repo
from conftest import query
from redact.planted import planted
from session_builder import SessionBuilder

from logmine.ingest.run import IngestConfig, ingest
from logmine.redact import PLACEHOLDERS, Mask, Redactor, store_mask
from logmine.redact.pseudonym import KEY_FILE, RedactionKeyError
from logmine.segment import SegmentConfig, segment
from logmine.verify import VerifyConfig, verify

PLANTED = planted()
KEY = Mask(bytes(range(32)))
PREFIXES = {"github_token": "ghp_", "openai_api_key": "sk-proj-", "anthropic_api_key": "sk-ant-api03-",
            "slack_token": "xoxb-", "huggingface_token": "hf_", "stripe_key": "sk_live_", "google_api_key": "AIza",
            "jwt": "eyJ"}


def _classes(text: str) -> str:
    return "".join("d" if c.isdigit() else "l" if c.isascii() and c.islower() else
                   "u" if c.isascii() and c.isupper() else c for c in text)


@pytest.mark.parametrize("p", PLANTED, ids=[f"{p.kind}-{i}" for i, p in enumerate(PLANTED)])
def test_a_pseudonym_keeps_the_shape_and_hides_the_secret(p):
    out = Redactor(mask=KEY).redact_text(p.text)
    assert not any(n in out for n in p.needles), out
    assert "[REDACTED:" not in out and len(out) == len(p.text)
    assert _classes(out) == _classes(p.text)  # every letter and digit stays in its class, the rest stays
    if p.kind in PREFIXES:
        start = p.text.index(p.value)
        assert out[start:start + len(p.value)].startswith(PREFIXES[p.kind])
    if p.kind == "jwt":
        token = re.search(r"eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+", out)
        assert token and token.group() != p.value
    if "-----BEGIN" in p.text:  # a PEM stays a PEM block: armour lines as they were, body lines as long
        assert [line for line in out.splitlines() if line.startswith("-----")] == \
            [line for line in p.text.splitlines() if line.startswith("-----")]
        assert [len(line) for line in out.splitlines()] == [len(line) for line in p.text.splitlines()]


@pytest.mark.parametrize("p", PLANTED, ids=[f"{p.kind}-{i}" for i, p in enumerate(PLANTED)])
def test_redacting_twice_changes_nothing_more(p):
    redactor = Redactor(mask=KEY)
    for form, text in p.variants.items():
        once = redactor.redact_json_line(text) if form != "plain" else redactor.redact_text(text)
        again = redactor.redact_json_line(once) if form != "plain" else redactor.redact_text(once)
        assert again == once, form


def test_one_secret_one_pseudonym_in_every_channel():
    """A password in a prompt, in a shell command's JSON arguments, in a tool output JSON-encoded in
    the line and in a patch gets one replacement, so code and tests written with it stay coherent."""
    password = "Zq7vK2pLm9xR4t"
    texts = [f"the staging password={password}, please",
             json.dumps({"command": ["bash", "-lc", f"mysql -u app -p{password} shop"]}),
             json.dumps({"output": json.dumps({"password": password})}),
             f"*** Begin Patch\n*** Add File: t.py\n+BODY = {{'password': '{password}'}}\n*** End Patch"]
    redactor = Redactor(mask=KEY)
    outs = [redactor.redact_text(t) for t in texts]
    assert not any(password in o for o in outs)
    found = {m for o in outs for m in re.findall(r"[A-Za-z0-9]{14}", o) if _classes(m) == _classes(password)}
    assert len(found) == 1, outs
    other = Mask(bytes(32))  # another store's key: another pseudonym, and not taken for one of this key
    assert Redactor(mask=other).redact_text(texts[0]) != outs[0]
    assert KEY.recognises(found.pop()) and not other.recognises(next(iter(
        re.findall(r"password=(\w+)", outs[0]))))


def test_the_store_keeps_its_key_private_and_ingest_is_idempotent(tmp_path):
    line = json.dumps({"timestamp": "2025-01-01T00:00:00Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"use {PLANTED[0].text}"}]}})
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "rollout-2025-01-01T00-00-00-0194a000-0000-7000-8000-000000000001.jsonl").write_text(
        json.dumps({"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {
            "id": "0194a000-0000-7000-8000-000000000001", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/w",
            "originator": "codex_cli_rs", "cli_version": "0.45.0"}}) + "\n" + line + "\n")
    texts = []
    for name in ("a", "b"):
        if name == "b":  # the same key: the same rows
            (tmp_path / "b").mkdir()
            shutil.copy(tmp_path / "a" / KEY_FILE, tmp_path / "b")
        ingest(IngestConfig(paths=(sessions,), store=tmp_path / name, jobs=1))
        texts.append(query(tmp_path / name, "SELECT text FROM events WHERE text IS NOT NULL ORDER BY ALL"))
    assert texts[0] == texts[1] and not any(PLANTED[0].value in str(t) for t in texts[0])
    assert os.stat(tmp_path / "a" / KEY_FILE).st_mode & 0o077 == 0  # the owner's alone
    assert store_mask(tmp_path / "a").key == store_mask(tmp_path / "b").key
    ingest(IngestConfig(paths=(sessions,), store=tmp_path / "c", jobs=1))  # a new store: a new key
    assert query(tmp_path / "c", "SELECT text FROM events WHERE text IS NOT NULL ORDER BY ALL") != texts[0]
    ingest(IngestConfig(paths=(sessions,), store=tmp_path / "d", jobs=1, redact_style="placeholder"))
    assert store_mask(tmp_path / "d") is PLACEHOLDERS
    assert any("[REDACTED:" in str(t) for t in query(tmp_path / "d", "SELECT text FROM events"))
    (tmp_path / "a" / KEY_FILE).write_text("{not json")
    with pytest.raises(RedactionKeyError, match="cannot read the redaction key"):
        store_mask(tmp_path / "a")


PASSWORD = "Zq7s3cretPassw0rd"
AUTH = f'PASSWORD = "{PASSWORD}"\n\n\ndef login(password):\n    return False\n'
TEST_AUTH = ('import json\nimport unittest\n\nfrom auth import login\n\n'
             f'BODY = json.loads(\'{{"password": "{PASSWORD}"}}\')\n\n\n'
             'class T(unittest.TestCase):\n    def test_login(self):\n        self.assertTrue(login(BODY["password"]))\n')
ADD_TEST = ("*** Begin Patch\n*** Update File: auth.py\n@@\n def login(password):\n-    return False\n"
            "+    return password == PASSWORD\n*** Add File: test_auth.py\n"
            + "".join(f"+{line}\n" for line in TEST_AUTH.splitlines()) + "*** End Patch")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
@pytest.mark.parametrize("style", ["pseudonym", "placeholder"])
def test_a_replay_validates_because_the_pseudonyms_stayed_consistent(tmp_path, style):
    """The server code holds a password, the task fixes its check and adds a test posting the same
    password: with pseudonyms
    the rebuilt tree and the replayed patch agree and the test's fail -> pass validates; with
    placeholders the test posts ``[REDACTED:password]`` and cannot pass."""
    repo = tmp_path / "work" / "proj"
    commit = calc_repo(repo, {"auth.py": AUTH})
    test = "python3 -m unittest test_auth"
    session = (SessionBuilder(cwd=str(repo), commit=commit).user("Add a test for login")
               .run(test, 1, output="ModuleNotFoundError: No module named 'test_auth'")
               .patch(ADD_TEST).run(test, 0, output="OK").agent("Added the test; it passes.").write(tmp_path / "s"))
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(session.parent,), store=store, jobs=1, redact_style=style))
    assert PASSWORD not in json.dumps(query(store, "SELECT text, arguments, command FROM events"))
    segment(SegmentConfig(store=store))
    verify(VerifyConfig(store=store, jobs=1))
    statuses = {row["status"] for row in query(store, "SELECT status FROM verifiers WHERE kind = 'test_command'")}
    assert statuses == ({"validated"} if style == "pseudonym" else {"fails_after"}), statuses


def test_every_pseudonym_is_recognised_as_one():
    """A pseudonym must read as it was made: one whose start happened to form a known prefix
    (``glvnbr-`` of a Django key) or whose letters all came out hex was re-masked by a second pass."""
    rnd = random.Random(26)
    chars = string.ascii_letters + string.digits + "-_.!"
    values = ["django-insecure-hbGlPt!rECil-0QP!1SL)Uz^(9v1Ao9!VYPlRpk&Zdv(rwIW+E"]
    values += ["".join(rnd.choice(chars) for _ in range(rnd.randint(4, 40))) for _ in range(20000)]
    made = [(v, KEY(v, "secret")) for v in values if sum(c.isalnum() for c in v) >= 4]
    missed = [(v, p) for v, p in made if p.startswith("[REDACTED:") or not KEY.recognises(p)]
    assert not missed, missed[:3]
