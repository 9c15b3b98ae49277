"""Secret redaction: every text that reaches disk goes through a :class:`Redactor` first.

Each secret becomes a typed placeholder, ``[REDACTED:<kind>]``; only the secret itself is
replaced (``Authorization: Bearer `` and ``NAME=`` stay visible). Detection builds on the
vendored gitleaks rule set (``rules/gitleaks.toml``, MIT, see ``rules/README.md``) whose Go
RE2 patterns are ported to Python ``re`` at load time, plus a few rules of our own
(:data:`_OWN_RULES`) and structured-key redaction of JSON values whose key names a secret.

Speed: as in gitleaks, a rule runs only on text holding one of its keywords; all keywords are
found in one pass of a single trie-shaped regex over the lower-cased text.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import replace

import orjson

from logmine.ingest.gitleaks import BOUNDARY, RULES_FILE, Rule, load_gitleaks, port_re2

__all__ = ["PLACEHOLDER", "RULES_FILE", "Redactor", "default_redactor", "port_re2", "secret_key_kind", "skipped_rules"]

PLACEHOLDER = "[REDACTED:{}]"
_MARK = "[REDACTED:"

# ---------------------------------------------------------------- our own rules

_PLACEHOLDER_VALUE = r"\$.*|<.*>|\{.*\}|%.*%|\*+|.*(?:\.\.\.|…).*|(?:.*[_-])?x{3,}"  # $VAR <token> sk-... ghp_xxx
_PLACEHOLDER = re.compile(_PLACEHOLDER_VALUE)
_NOT_A_VALUE = re.compile(rf"(?i){_PLACEHOLDER_VALUE}|[0-9]+|true|false|none|null|yes|no|changeme|test|guest"
                          r"|(?:my|your)?_?(?:pass(?:wd|word)?|pwd|secret|token|value)|user(?:name)?"
                          r"|(?-i:[A-Z_]+)")  # an upper-case meta-variable: KEY=VALUE, TOKEN=YOUR_TOKEN


def _is_value(secret: str) -> bool:
    """A literal secret: not a placeholder, a flag, a number, a meta-variable or a well-known
    default (``guest``). For the heuristic rules; a secret-named JSON key needs less."""
    return not (_NOT_A_VALUE.fullmatch(secret) or _NOT_A_VALUE.fullmatch(secret.rstrip(".,:")))


_NOT_SECRET_NAME = re.compile(r"_(?:FILE|PATH|DIR|URL|URI|ENDPOINT|HOST|PORT|NAME|TYPE|ID|LENGTH|SIZE|COUNT|LIMIT"
                              r"|ENV|VAR|FORMAT|PREFIX|FIELD)$")


def _env_name_ok(m: re.Match) -> bool:
    """The matched segment (``TOKEN``) must end a whole ``UPPER_SNAKE`` name that starts at a word
    boundary and does not name a file, URL or size; the value must be a literal."""
    text, start = m.string, m.start()
    head = re.search(r"[A-Z0-9_]*\Z", text[max(0, start - 64):start]).group()
    before = start - len(head)
    if (head and not head.endswith("_")) or _NOT_SECRET_NAME.search(m["name"]):
        return False  # MONKEY=, TOKEN_URL=
    if before > 0 and re.match(r"[\w$.\-]", text[before - 1]) and text[before - 2:before - 1] != "\\":
        return False  # the tail of an identifier, or a $NAME expansion
    value = m["secret"]
    if m["sep"] != "=" and not any(c.isdigit() for c in value):
        return False  # NAME: value and NAME = "value" are code as often (METADATA_KEY = 'x-meta')
    return _is_value(value) and not value.startswith(("/", ".", "~"))


_Q = r"(?:\\*[\"'])?"  # an optional quote, escaped (once or more) when the text is JSON-encoded
# (id, kind, pattern, keywords, literals required, accept); a group named "secret", else group 1,
# is what gets replaced
_OWN_RULES = (
    ("pem-private-key-open", "private_key",  # a PEM block cut off before its END line
     r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:(?:\\[rn]|\r?\n)[A-Za-z0-9+/=]{1,100})*",
     ("-----begin",), (), None),
    ("openai-project-key", "openai_api_key", BOUNDARY + r"(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,})",
     ("sk-proj-", "sk-svcacct-", "sk-admin-"), (), None),
    ("anthropic-key", "anthropic_api_key", r"(sk-ant-[a-z]{3,6}\d\d-[A-Za-z0-9_-]{20,})", ("sk-ant-",), (), None),
    ("aws-access-key-id", "aws_access_key_id", BOUNDARY + r"((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b",
     ("akia", "asia", "abia", "acca", "a3t"), (), lambda m: not m.group(1).endswith("EXAMPLE")),
    ("aws-secret-access-key", "aws_secret_access_key", r"(?i)aws_?secret_?(?:access_?)?key" + _Q
     + r"[ \t]*(?:=|:|=>)[ \t]*" + _Q + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", ("secret",), (), None),
    ("authorization-header", "authorization_header", r"(?i)authorization" + _Q + r"[ \t]*[:=][ \t]*" + _Q
     + r"[ \t]*(?:bearer|basic|token|bot|digest)[ \t]+([A-Za-z0-9._~+/\-]{8,}=*)",
     ("authorization",), (), lambda m: _is_value(m.group(1))),
    ("bearer-token", "authorization_header", r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/\-]{20,}=*)", ("bearer",), (),
     lambda m: any(c.isdigit() for c in m.group(1)) and _entropy(m.group(1)) > 3.0),
    ("url-password", "url_password",  # user:pass@, unless a default such as postgres:postgres
     r"://([^\s:/@\"'\\<>\[\]]{1,256}):(?P<secret>[^\s:/@\"'\\<>\[\]]{1,256})@",
     ("://",), (), lambda m: _is_value(m["secret"]) and m["secret"] != m[1]),
)
_ENV_RULE = (  # NAME=value, export NAME=value, NAME: value, NAME = "value"
    "env-secret", "env_secret",
    r"(?P<name>(?:SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|KEY|APIKEY|CREDENTIALS?)(?:_[A-Z0-9]+)*)"
    r"(?P<sep>=|:[ \t]+|[ \t]*=[ \t]*(?=\\*[\"']))" + _Q + r"(?P<secret>[^\s\"'\\$`<>(){}\[\],;|&]{4,})",
    (), ("SECRET", "TOKEN", "PASSW", "PASSPHRASE", "KEY", "CREDENTIAL"), _env_name_ok,
)


def _own(spec, late: bool = False) -> Rule:
    rid, kind, pattern, keywords, required, accept = spec
    regex = re.compile(pattern, re.ASCII)
    return Rule(rid, kind, regex, keywords, secret_group=regex.groupindex.get("secret", 0),
                 required=required, accept=accept, late=late)


# ---------------------------------------------------------------- structured keys

_SECRET_KEY = re.compile(
    r"(?:^|_)(?:(?P<password>password|passwd|passphrase|pwd)|(?P<secret>secret|secret_key|secret_access_key)"
    r"|(?P<api_key>api_key|apikey)|(?P<private_key>private_key)|(?P<authorization_header>authorization)"
    r"|(?P<credentials>credentials?)|(?P<token>token))$")
_NOT_SECRET_KEY = re.compile(r"(?:^|_)(?:eos|bos|pad|unk|sep|cls|mask|stop|special|page)_token$")
_KEYISH = r"[A-Za-z0-9_.\-]{0,40}(?i:pass|pwd|secret|token|key|authorization|credential)[A-Za-z0-9_.\-]{0,40}"
_JSON_PAIRS = (  # "key": "value", and the same inside a JSON-encoded string: \"key\": \"value\"
    re.compile(rf'"({_KEYISH})"\s*:\s*"((?:[^"\\]|\\.)*)"', re.ASCII),
    re.compile(rf'\\"({_KEYISH})\\"\s*:\s*\\"((?:\\\\(?:\\.|[^"\\])|\\[^"\\]|[^"\\])*)\\"', re.ASCII),
)
# Encrypted reasoning (``"encrypted_content": "gAAAA..."``) is ciphertext: never a readable secret,
# and a quarter of a typical log's bytes, so its value is masked while the rest is scanned.
_OPAQUE_KEY = '"encrypted_content"'
_OPAQUE = re.compile(r'("encrypted_content"\s*:\s*")([^"\\]*)(")')
_STRUCTURED = Rule("structured-keys", "", None, ("passw", "passphrase", "pwd", "secret", "key", "authorization",
                                                  "credential", "token"), late=True)


@functools.lru_cache(maxsize=4096)
def secret_key_kind(key: str) -> str | None:
    """The kind of a JSON key that names a secret (``clientSecret`` -> ``secret``), else None.

    Keys that count or configure tokens (``input_tokens``, ``total_token_usage``, ``eos_token``)
    do not name secrets.
    """
    norm = re.sub(r"[-.\s]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)).lower()
    m = None if _NOT_SECRET_KEY.search(norm) else _SECRET_KEY.search(norm)
    return m.lastgroup if m else None


def _keyed_value(value: str) -> bool:
    return bool(value) and _MARK not in value and not _PLACEHOLDER.fullmatch(value)


# ---------------------------------------------------------------- matching helpers

def _entropy(s: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    return -sum(c / len(s) * math.log2(c / len(s)) for c in Counter(s).values())


def _secret_span(m: re.Match, group: int) -> tuple[int, int]:
    """gitleaks' secret: the rule's secretGroup, else the first non-empty group, else the match."""
    if group:
        return m.span(group)
    return next((m.span(g) for g in range(1, len(m.groups()) + 1) if m.start(g) < m.end(g)), m.span())


def _escaped(text: str, i: int) -> bool:
    """Whether ``text[i]`` follows an odd run of backslashes."""
    j = i
    while j and text[j - 1] == "\\":
        j -= 1
    return (i - j) % 2 == 1


def _escape_holding(text: str, i: int) -> tuple[int, int] | None:
    """(start, end) of the JSON escape sequence that ``text[i]`` belongs to, if any."""
    for j in range(i, max(i - 6, -1), -1):  # an escape is at most 6 chars: \uXXXX
        if text[j] == "\\" and not _escaped(text, j):
            end = j + (6 if text[j + 1:j + 2] == "u" else 2)
            return (j, end) if i < end else None
    return None


def _json_safe(text: str, s: int, e: int, multiline: bool) -> tuple[int, int]:
    """[s, e) of JSON text shrunk so that no cut splits an escape sequence or passes a closing
    quote. A secret neither starts nor ends with an escape, and only a multi-line one (a PEM
    block) holds any: a token runs up to the first escape (\\n, \\", \\\\, \\u00e9) at most."""
    while s < e and (esc := _escape_holding(text, s)):
        s = esc[1]
    if not multiline and (cut := text.find("\\", s, e)) != -1:
        e = cut
    while s < e and (esc := _escape_holding(text, e - 1)):
        e = esc[0]
    q = text.find('"', s, e)
    while q != -1 and _escaped(text, q):
        q = text.find('"', q + 1, e)
    return s, (e if q == -1 else q)


def _replace(text: str, finds: list[tuple[int, int, str]], counts: Counter) -> str:
    if not finds:
        return text
    out, last = [], 0
    for s, e, kind in finds:
        out += (text[last:s], PLACEHOLDER.format(kind))
        last = e
        counts[kind] += 1
    return "".join(out) + text[last:]


def _trie(words) -> str:
    """One regex for the longest of ``words`` at a position; ``re`` runs it far faster than a
    flat alternation."""
    firsts = sorted({w[0] for w in words if w})
    alts = [re.escape(c) + _trie({w[1:] for w in words if w[:1] == c}) for c in firsts]
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    return "" if not alts else f"(?:{body})?" if "" in words else body


# ---------------------------------------------------------------- the rule set and the redactor

class Ruleset:
    """All rules in running order, and the keyword prefilter that picks those a text needs."""

    def __init__(self) -> None:
        gitleaks, self.skipped, self.allow = load_gitleaks()
        first = [r for r in gitleaks if r.id == "private-key"]  # before any rule can bite into a key
        generic = [r for r in gitleaks if r.id.startswith("generic")]
        own = [_own(spec) for spec in _OWN_RULES]
        # named secrets first; NAME=value rules catch only what neither they nor JSON keys named
        self.rules = [*first, own[0], *(r for r in gitleaks if r not in first + generic), *own[1:],
                      _STRUCTURED, _own(_ENV_RULE, late=True), *(replace(r, late=True) for r in generic)]
        keywords = {k for r in self.rules for k in r.keywords}
        self._find = re.compile(_trie(keywords))
        self._automaton = _automaton(keywords)
        self._always = frozenset(i for i, r in enumerate(self.rules) if not r.keywords)
        # a keyword found stands for every keyword inside it ("sk_live" holds "sk"), and the scan,
        # reporting the longest keyword at each start without overlaps, looks again wherever
        # another keyword could start inside one found and run past its end
        self._rules_for = {k: frozenset(i for i, r in enumerate(self.rules) if any(w in k for w in r.keywords))
                           for k in keywords}
        self._overlaps = {k: [o for o in range(1, len(k)) if any(w.startswith(k[o:]) and len(w) > len(k) - o
                                                                 for w in keywords)] for k in keywords}

    def select(self, text: str) -> list[Rule]:
        """The rules, in running order, whose keywords occur in ``text`` (case-insensitively)."""
        low = text.lower()
        if self._automaton is not None:  # every occurrence, overlaps included, in one C pass
            found = {keyword for _, keyword in self._automaton.iter(low)}
        else:
            found = self._scan(low)
        return [self.rules[i] for i in sorted(self._always.union(*(self._rules_for[k] for k in found)))]

    def _scan(self, low: str) -> set[str]:
        """The keywords in ``low`` with the trie regex (when pyahocorasick is not installed)."""
        found = set()
        for m in self._find.finditer(low):
            found.add(kw := m.group())
            for o in self._overlaps[kw]:
                if inner := self._find.match(low, m.start() + o):
                    found.add(inner.group())
        return found


def _automaton(keywords: set[str]):
    """An Aho-Corasick automaton of the keywords (pyahocorasick), about 3× faster than the trie
    regex at finding them; None when the package is missing."""
    try:
        import ahocorasick
    except ImportError:
        return None
    automaton = ahocorasick.Automaton()
    for keyword in keywords:
        automaton.add_word(keyword, keyword)
    automaton.make_automaton()
    return automaton


@functools.lru_cache(maxsize=1)
def _ruleset() -> Ruleset:
    return Ruleset()


def skipped_rules() -> dict[str, str]:
    """The gitleaks rules that are not run, each with the reason."""
    return dict(_ruleset().skipped)


class Redactor:
    """Replaces secrets with ``[REDACTED:<kind>]``; :attr:`counts` tallies replacements by kind.

    Cheap to make: all instances share the rules, compiled once.
    """

    def __init__(self) -> None:
        self._rules = _ruleset()
        self.counts: Counter[str] = Counter()

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced (``text`` itself when it holds none)."""
        return self._redact(text, False, self.counts)

    def redact_json_line(self, line: str) -> str:
        """One JSON document's text (a JSONL line or a whole file), redacted in its encoding.

        A replacement never splits an escape sequence or crosses a string's quotes, and string
        values under secret-naming keys become placeholders, so valid JSON stays valid. Should a
        replacement break it all the same, the document is parsed, redacted as objects
        (:meth:`redact_obj`) and serialised again. Encrypted reasoning is opaque: not scanned.
        """
        blobs: list[str] = []
        masked = _OPAQUE.sub(lambda m: blobs.append(m[2]) or m[1] + m[3], line) if _OPAQUE_KEY in line else line
        counts: Counter[str] = Counter()
        out = self._redact(masked, True, counts)
        if not counts:
            return line
        if blobs:
            rest = iter(blobs)
            out = _OPAQUE.sub(lambda m: m[1] + next(rest) + m[3], out)
        try:
            orjson.loads(out)
        except orjson.JSONDecodeError:
            try:
                return orjson.dumps(self.redact_obj(orjson.loads(line))).decode()
            except orjson.JSONDecodeError:
                pass  # it was no JSON to begin with: the text redaction stands
        self.counts.update(counts)
        return out

    def redact_obj(self, obj):
        """A copy of parsed JSON with every string redacted and secret-keyed strings replaced."""
        if isinstance(obj, str):
            return self.redact_text(obj)
        if isinstance(obj, list):
            return [self.redact_obj(v) for v in obj]
        if isinstance(obj, dict):
            return {k: v if k == _OPAQUE_KEY[1:-1] else self._keyed(k, v) for k, v in obj.items()}
        return obj

    def _keyed(self, key, value):
        kind = secret_key_kind(key) if isinstance(key, str) and isinstance(value, str) else None
        if kind is None:
            return self.redact_obj(value)
        out = self._redact(value, False, self.counts, named_only=True)
        return _replace(value, [(0, len(value), kind)], self.counts) if out is value and _keyed_value(value) else out

    def _redact(self, text: str, json: bool, counts: Counter, named_only: bool = False) -> str:
        for rule in self._rules.select(text):
            if rule.late and named_only:
                break
            if rule is _STRUCTURED:
                text = self._structured(text, counts) if json else text
            elif not rule.required or any(r in text for r in rule.required):
                text = self._apply(rule, text, json, counts)
        return text

    def _apply(self, rule: Rule, text: str, json: bool, counts: Counter) -> str:
        finds = []
        for m in rule.regex.finditer(text):
            s, e = _secret_span(m, rule.secret_group)
            if json:
                s, e = _json_safe(text, s, e, rule.kind == "private_key")
            if s < e and self._keep(rule, text[s:e], m):
                finds.append((s, e, rule.kind))
        return _replace(text, finds, counts)

    def _keep(self, rule: Rule, secret: str, m: re.Match) -> bool:
        """gitleaks' filters (entropy, a digit in generic secrets, allowlists), then our rule's own."""
        if _MARK in secret or (rule.entropy and _entropy(secret) <= rule.entropy):
            return False
        if rule.id.startswith("generic") and not any(c.isdigit() for c in secret):
            return False
        if rule.accept and not rule.accept(m):
            return False
        text, start, end = m.string, m.start(), m.end()
        if rule.context:  # the dropped [\w.-]{0,50}? prefix, for allowlists that read the match
            start -= len(re.search(r"[\w.-]{0,50}\Z", text[max(0, start - 50):start], re.ASCII).group())
        return not any(a.allows(secret, text, start, end) for a in (*self._rules.allow, *rule.allow))

    def _structured(self, text: str, counts: Counter) -> str:
        for pairs in _JSON_PAIRS:
            finds = [(m.start(2), m.end(2), kind) for m in pairs.finditer(text)
                     if (kind := secret_key_kind(m[1])) and _keyed_value(m[2])]
            text = _replace(text, finds, counts)
        return text


def default_redactor() -> Redactor:
    """A new :class:`Redactor`, counts at zero, over the shared rules (compiled on first use)."""
    return Redactor()
