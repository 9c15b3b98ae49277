"""Secret redaction: planted FAKE secrets of every kind, JSON safety, idempotency, and no false
positives on real Codex logs.

Every secret here is generated from a seeded RNG and carries a FAKE marker where its format
allows, so no token-shaped literal sits in the repository for secret scanners to flag.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections import Counter
from pathlib import Path

import pytest

from logmine.redact import Redactor, default_redactor, port_re2, secret_key_kind, skipped_rules

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ALNUM = string.ascii_letters + string.digits
_rnd = random.Random("logmine-redact-tests")


def pick(chars: str, n: int) -> str:
    return "".join(_rnd.choice(chars) for _ in range(n))


def b64url(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


PEM_BODY = [pick(string.ascii_letters + string.digits + "+/", 64) for _ in range(6)]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END RSA PRIVATE KEY-----"

# (kind, secret, text holding it); "{s}" marks the secret
CASES = [
    ("github_token", "ghp_FAKE" + pick(ALNUM, 32), "git push https with {s} now"),
    ("github_token", "github_pat_FAKE" + pick(ALNUM + "_", 78), "GH token: {s}"),
    ("gitlab_token", "glpat-FAKE" + pick(ALNUM, 16), "use {s} for the registry"),
    ("openai_api_key", "sk-proj-FAKEtest" + pick(ALNUM + "_-", 48), "OpenAI key {s} in the prompt"),
    ("openai_api_key", "sk-FAKE" + pick(ALNUM, 16) + "T3BlbkFJ" + pick(ALNUM, 20), "old key {s} here"),
    ("anthropic_api_key", "sk-ant-api03-FAKE" + pick(ALNUM + "_-", 89) + "AA", "claude {s} ok"),
    ("aws_access_key_id", "AKIA" + pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), "id {s} here"),
    ("aws_access_key_id", "AKIAFAKE" + pick(string.ascii_uppercase + string.digits, 12),
     "AWS_ACCESS_KEY_ID={s} python3 x.py"),
    ("aws_secret_access_key", pick(ALNUM + "/+", 40), "aws_secret_access_key = {s}"),
    ("google_api_key", "AIzaFAKE" + pick(ALNUM + "_-", 31), "maps key {s} in config"),
    ("slack_token", "xoxb-" + pick(string.digits, 12) + "-" + pick(string.digits, 12) + "-FAKE" + pick(ALNUM, 20),
     "slack bot {s} posts"),
    ("huggingface_token", "hf_FAKE" + pick(string.ascii_letters, 30), "hub login {s} done"),
    ("stripe_key", "sk_test_FAKE" + pick(ALNUM, 24), "stripe {s} charge"),
    ("npm_token", "npm_" + pick(string.ascii_lowercase + string.digits, 36), "//registry.npmjs.org/:_authToken={s}"),
    ("pypi_token", "pypi-AgEIcHlwaS5vcmc" + pick(ALNUM + "_-", 70), "twine upload -p {s} dist/*"),
    ("private_key", PEM, "key file:\n{s}\nend of file"),
    ("jwt", b64url({"alg": "HS256", "typ": "JWT"}) + "." + b64url({"sub": "FAKE-user", "iat": 1700000000}) + "."
     + pick(ALNUM + "_-", 43), "session {s} expired"),
    ("authorization_header", "FAKE" + pick(ALNUM, 28) + "9",
     "curl -s -H 'Authorization: Bearer {s}' https://api.example.invalid/"),
    ("authorization_header", "FAKE" + pick(ALNUM, 24) + "7", "Authorization: Token {s}"),
    ("url_password", "FAKE" + pick(ALNUM, 12), "git clone https://deploy:{s}@git.example.invalid/repo.git"),
    ("env_secret", "FAKE" + pick(ALNUM, 16), "export DEPLOY_SECRET={s}"),
    ("env_secret", "FAKE" + pick(ALNUM, 16) + "2", "DB_PASSWORD: {s}"),  # YAML and code forms need a digit
    ("env_secret", "FAKE" + pick(ALNUM, 16) + "3", 'SERVICE_API_KEY = "{s}"'),
    # no FAKE marker here: "fake" is one of gitleaks' stopwords for generic secrets
    ("generic_secret", pick(ALNUM, 28) + "1", 'client.auth_token = "{s}"'),
]
IDS = [f"{kind}-{i}" for i, (kind, _, _) in enumerate(CASES)]


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def pieces(secret: str) -> list[str]:
    """The secret, or each line of a multi-line one: none may survive."""
    return [p for p in secret.splitlines() if len(p) > 8] or [secret]


@pytest.mark.parametrize("kind,secret,template", CASES, ids=IDS)
def test_plain_text(kind, secret, template):
    r = Redactor()
    out = r.redact_text(template.format(s=secret))
    assert not any(p in out for p in pieces(secret)), out
    assert out == template.format(s=placeholder(kind))  # only the secret went; the rest is verbatim
    assert r.counts == Counter({kind: 1})


@pytest.mark.parametrize("kind,secret,template", CASES, ids=IDS)
def test_inside_json_string_with_escapes(kind, secret, template):
    text = 'first line\n\t"quoted" C:\\path é\n' + template.format(s=secret) + '\n"last" \\ line\u2028'
    expected = text.replace(secret, placeholder(kind))
    encodings = [  # (JSON text, how to get the string back)
        (json.dumps({"type": "message", "text": text}), lambda d: d["text"]),
        (json.dumps({"text": text}, ensure_ascii=False), lambda d: d["text"]),
        (json.dumps({"items": [{"text": text}]}, indent=2), lambda d: d["items"][0]["text"]),
        (json.dumps({"arguments": json.dumps({"cmd": text})}), lambda d: json.loads(d["arguments"])["cmd"]),
    ]
    for line, text_of in encodings:
        r = Redactor()
        out = r.redact_json_line(line)
        assert not any(p in out for p in pieces(secret))
        assert text_of(json.loads(out)) == expected  # valid JSON; only the secret went
        assert r.counts == Counter({kind: 1}), r.counts


@pytest.mark.parametrize("kind,secret,template", CASES, ids=IDS)
@pytest.mark.parametrize("key", ["token", "client_secret", "apiKey"])
def test_under_a_structured_key(kind, secret, template, key):
    # a value a detector names keeps that name; the key's kind is the fallback
    for line in (json.dumps({"config": {key: secret, "input_tokens": 12}}),
                 json.dumps({"args": json.dumps({key: secret})})):
        r = Redactor()
        out = r.redact_json_line(line)
        json.loads(out)
        assert not any(p in out for p in pieces(secret))
        assert placeholder(kind) in out or placeholder(secret_key_kind(key)) in out
        assert sum(r.counts.values()) == 1
    obj = Redactor().redact_obj({"nested": [{key: secret}]})
    assert obj["nested"][0][key] in (placeholder(kind), placeholder(secret_key_kind(key)))


@pytest.mark.parametrize("key,kind", [
    ("password", "password"), ("db_password", "password"), ("passwd", "password"), ("client_secret", "secret"),
    ("api_key", "api_key"), ("OPENAI_API_KEY", "api_key"), ("access_token", "token"), ("authToken", "token"),
    ("private_key", "private_key"), ("Authorization", "authorization_header"), ("aws_secret_access_key", "secret"),
])
def test_secret_keys(key, kind):
    value = "FAKE" + pick(ALNUM, 10)
    r = Redactor()
    out = r.redact_json_line(json.dumps({key: value, "n": 1}))
    assert json.loads(out) == {key: placeholder(kind), "n": 1}
    assert r.counts == Counter({kind: 1})
    assert Redactor().redact_obj({key: value}) == {key: placeholder(kind)}


@pytest.mark.parametrize("key", ["input_tokens", "max_output_tokens", "total_token_usage", "reasoning_output_tokens",
                                 "cached_input_tokens", "token_count", "eos_token", "keyboard", "passthrough",
                                 "internal_chat_message_metadata_passthrough", "has_credits", "client_authored"])
def test_keys_that_do_not_name_secrets(key):
    line = json.dumps({key: "FAKE" + pick(ALNUM, 10), "nested": {key: 7}})
    assert secret_key_kind(key) is None
    assert Redactor().redact_json_line(line) == line


def test_non_string_values_under_secret_keys_stay():
    line = json.dumps({"token": 123, "password": None, "api_key": {"name": "x"}, "secret": ["a"], "auth_token": True})
    assert Redactor().redact_json_line(line) == line


ORDINARY = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
    "Merge: 1a410efbd13591db07496601ebc7a059dd55cfe9 e6b5e5ad2b3ef9f7c4d5e6f7a8b9c0d1e2f3a4b5",
    "session 0199f41d-9079-7662-ba8d-eff8c75f8a7a and 38b123ff-933b-4dfe-bd12-d42671fcb25f",
    '{"type":"function_call","call_id":"call_4uToLHROm83PEn2PFmjnbtep","id":"fc_68a46d4d81a88191a0e1b2c3d4e5f6a7"}',
    "msg_68a46d5a2b8c8191b9f1e2d3c4b5a697 rs_68a46d4c1f408191a9b8c7d6e5f4a3b2",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  dist/logmine.whl",
    "Chunk ID: 2f7e18",
    "token = tokenizer(x)",
    "password_field = form.password",
    'api_key = os.environ["OPENAI_API_KEY"]',
    'headers = {"Authorization": f"Bearer {token}"}',
    "MAX_TOKENS=4096 TOKENIZERS_PARALLELISM=false KEYBOARD=us TOKEN_URL=https://oauth2.example.invalid/token",
    "export GITHUB_TOKEN=$GITHUB_TOKEN",
    "git@github.com:org/repo.git https://github.com/org/repo/blob/main/src/app.py#L10",
    "/home/user/project/src/logmine/ingest/redact.py:120: in _apply",
    "amqp://guest:guest@localhost:5672// and postgres://user:${DB_PASSWORD}@db/x",
    "data = base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6"
    "kgAAAABJRU5ErkJggg==')",
    "the model used 1532 input tokens and 88 output tokens; see docs/auth.md for the token flow",
    # placeholders and code that only look like assignments of secrets
    "OPENAI_API_KEY=sk-... GH_TOKEN=ghp_xxx; settings take the form KEY=VALUE.",
    "METADATA_KEY = 'pydantic-mypy-metadata'\nHF_HUB_DISABLE_IMPLICIT_TOKEN: bool = False",
    "RegEnumKey = win32api.RegEnumKeyEx",
    '"key_sha256": "' + "ab12" * 16 + '"',
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_content_is_left_alone(text):
    r = Redactor()
    assert r.redact_text(text) == text
    line = json.dumps({"type": "function_call_output", "output": text})
    assert r.redact_json_line(line) == line
    assert not r.counts


def test_encrypted_reasoning_is_opaque_but_the_rest_of_its_line_is_not():
    blob = "gAAAAAB" + pick(ALNUM + "-_", 200) + CASES[0][1] + pick(ALNUM + "-_", 200)
    secret = CASES[2][1]
    doc = {"type": "reasoning", "encrypted_content": blob, "summary": [{"text": f"use {secret}"}],
           "more": {"encrypted_content": "", "text": "x"}}
    r = Redactor()
    out = json.loads(r.redact_json_line(json.dumps(doc)))
    assert out["encrypted_content"] == blob and out["more"] == doc["more"]
    assert out["summary"][0]["text"] == "use [REDACTED:gitlab_token]"
    assert r.counts == Counter({"gitlab_token": 1})
    assert Redactor().redact_obj(doc)["encrypted_content"] == blob


@pytest.mark.parametrize("kind,secret,template", CASES, ids=IDS)
def test_idempotent(kind, secret, template):
    r = Redactor()
    once_text = r.redact_text(template.format(s=secret))
    once_json = r.redact_json_line(json.dumps({"text": template.format(s=secret), "password": secret}))
    again = Redactor()
    assert again.redact_text(once_text) == once_text
    assert again.redact_json_line(once_json) == once_json
    assert again.redact_obj(json.loads(once_json)) == json.loads(once_json)
    assert not again.counts


@pytest.mark.parametrize("around", ["\\", '"', "\n", "\t", "\\n", "\u00e9 ", "\x01 ", "`", "'"])
def test_secrets_next_to_escapes_keep_json_valid(around):
    for kind, secret, template in CASES:
        alone = Redactor().redact_text(secret) != secret  # the secret names itself, without context
        texts = [around + secret + around, f"x{around}{secret}", f"{secret}{around}x"] if alone else \
            [around + template.format(s=secret) + around]
        for text in texts:
            out = Redactor().redact_json_line(json.dumps({"t": text}))
            assert json.loads(out)["t"] == text.replace(secret, placeholder(kind)), (kind, out)


def test_a_broken_replacement_falls_back_to_objects(monkeypatch):
    import logmine.redact.engine as redact

    def cut_a_quote(text, s, e, multiline):  # simulate a rule whose span swallows the closing quote
        return s, e + 1 if text[e:e + 1] == '"' else e

    monkeypatch.setattr(redact, "_json_safe", cut_a_quote)
    secret = CASES[0][1]
    r = Redactor()
    out = r.redact_json_line(json.dumps({"a": f"x {secret}", "b": 1}))
    assert json.loads(out) == {"a": "x [REDACTED:github_token]", "b": 1}
    assert r.counts == Counter({"github_token": 1})


def test_invalid_json_is_still_redacted():
    secret = CASES[0][1]
    r = Redactor()
    assert r.redact_json_line('{"a": "' + secret) == '{"a": "[REDACTED:github_token]'


def test_counts_accumulate_and_redactors_are_independent():
    r = default_redactor()
    r.redact_text(f"{CASES[0][1]} and {CASES[2][1]}")
    r.redact_json_line(json.dumps({"password": "FAKEpw12345"}))
    assert r.counts == Counter({"github_token": 1, "gitlab_token": 1, "password": 1})
    assert not default_redactor().counts


def test_few_gitleaks_rules_are_skipped():
    skipped = skipped_rules()
    assert len(skipped) <= 8, skipped
    assert not [rid for rid, why in skipped.items() if why.startswith("cannot port")]


@pytest.mark.parametrize("go,py", [
    (r"\b(p8e-(?i)[a-z0-9]{32})", r"(?:\b|(?<=\\[nrt]))(p8e-(?i:[a-z0-9]{32}))"),
    (r"(?:\"(?i)a|b)c", r"(?:\"(?i:a)|(?i:b))c"),
    (r"x(?:\s|\z)", r"x(?:\s|\Z)"),
    (r"\bZXlK(?:(?P<alg>aGJH)|(?P<x>NElq))", r"(?:\b|(?<=\\[nrt]))ZXlK(?:(?:aGJH)|(?:NElq))"),
    (r"[(?i)]\b", r"[(?i)]\b"),
])
def test_port_re2(go, py):
    assert port_re2(go) == py
    re.compile(py)


# ------------------------------------------------------------------ real Codex logs

HEX40 = re.compile(r"\b[0-9a-f]{40}\b")
UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
CALL_ID = re.compile(r"\b(?:call|fc|msg|rs)_[A-Za-z0-9]{16,}\b")


def _fixture_documents():
    files = [*sorted((FIXTURES / "codex-public").glob("*.json*")),
             *sorted((FIXTURES / "codex-generated").glob("*/*.jsonl"))]
    for path in files:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            yield path, text
        else:
            yield from ((path, line) for line in text.splitlines() if line.strip())


def test_real_codex_logs_stay_intact():
    r = Redactor()
    docs = 0
    for path, doc in _fixture_documents():
        docs += 1
        out = r.redact_json_line(doc)
        json.loads(out)
        for pattern in (HEX40, UUID, CALL_ID):
            lost = set(pattern.findall(doc)) - set(pattern.findall(out))
            assert not lost, f"{path.name}: redaction removed {sorted(lost)[:3]}"
    assert docs > 1000
    print(f"\nredactions over {docs} fixture documents: {dict(r.counts.most_common()) or 'none'}")



def test_keyword_prefilter_with_and_without_aho_corasick():
    """Both keyword searches select the same rules on every fixture line."""
    from logmine.redact import ruleset

    rules = ruleset("keywords").prefilter
    if rules._automaton is None:
        pytest.skip("pyahocorasick is not installed")
    fixtures = Path(__file__).parents[1] / "fixtures"
    lines = [line for path in sorted(fixtures.rglob("*.jsonl")) for line in path.read_text().splitlines()]
    assert len(lines) > 3000
    def selected(keywords):  # a keyword stands for the rules of every keyword inside it
        return set().union(*(rules._rules_for[k] for k in keywords))

    for line in lines:
        low = line.lower()
        assert selected({k for _, k in rules._automaton.iter(low)}) == selected(rules.scan_keywords(low)), line[:200]


def test_the_prefilter_does_not_report_every_position_of_a_long_run():
    """A rule's Hyperscan pattern that matches anywhere inside a long base64-like run (an encrypted
    reasoning item, a hash: lookarounds are dropped in prefilter mode) reports thousands of hits per
    line to Python: one such rule once made the whole scan nine times slower. Runs are the base64
    pass's to find (:func:`logmine.redact.prefilter.base64_runs`), not the patterns'."""
    from logmine.redact import ruleset

    rules = ruleset()
    if rules.prefilter.name != "hyperscan":
        pytest.skip("Hyperscan is not installed")
    rng = random.Random(0)
    run = "".join(rng.choice(string.ascii_letters + string.digits + "+/") for _ in range(20000))
    lines = [f'{{"type":"reasoning","content":"{run}"}}', f'{{"x":"+{run[:80]}"}}', f"sha {run[:64]}\n{run[:100]}="]
    hits = Counter()
    rules.prefilter._db.scan("\n".join(lines).encode(), scratch=rules.prefilter._scratch(),
                             match_event_handler=lambda rule, *_: hits.update([rule]))
    named = {rules.rules[i].id if i < len(rules.rules) else "base64": n for i, n in hits.items()}
    assert sum(hits.values()) < 50, named


def test_every_way_of_asking_for_the_rules_shares_one_compiled_set():
    """The forkserver warms ``ruleset()``; a worker's ``Redactor()`` must find that set, not compile
    every rule again (``lru_cache`` keys ``f()`` and ``f(None)`` apart)."""
    from logmine.redact.engine import ruleset

    assert ruleset() is ruleset(None) is Redactor()._rules is Redactor(None)._rules
    assert ruleset("keywords") is not ruleset()
