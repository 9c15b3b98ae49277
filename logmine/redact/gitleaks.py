"""gitleaks' rule set, ported to Python ``re`` at load time.

``rules/gitleaks.toml`` is vendored unchanged (MIT, see ``rules/README.md``). Its Go RE2 patterns
are ported here (:func:`port_re2`); rule ids map to coarse, stable kinds (``github_token``,
``openai_api_key``, …); rules that cannot apply to a log line (path-scoped, no content regex) are
skipped with a reason. :mod:`logmine.redact.engine` runs the rules.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

RULES_FILE = Path(__file__).parent / "rules" / "gitleaks.toml"

# gitleaks rule id (prefix) -> our coarse kind; other ids keep their name, with underscores.
_KINDS = (
    ("github-", "github_token"), ("gitlab-", "gitlab_token"), ("openai-", "openai_api_key"),
    ("anthropic-", "anthropic_api_key"), ("aws-access-token", "aws_access_key_id"),
    ("gcp-api-key", "google_api_key"), ("slack-webhook", "slack_webhook"), ("slack-", "slack_token"),
    ("huggingface-", "huggingface_token"), ("stripe-", "stripe_key"), ("npm-", "npm_token"),
    ("pypi-", "pypi_token"), ("private-key", "private_key"), ("jwt", "jwt"),
    ("curl-auth-header", "authorization_header"), ("curl-auth-user", "basic_auth"),
    ("generic-api-key", "generic_secret"),
)
# Rules not run, beyond those scoped to file paths (a log line has none).
_DISABLED = {"database-password": "no entropy gate: fires on shell text such as `pwd || echo ok`"}
# gitleaks' regexes replaced by ours. Its private-key body, ``[\s\S-]{64,}?`` up to the next
# ``KEY-----``, runs from a block cut short (``head -4 key.pem``) across any text to the armour of the
# next block: that text was replaced too, a script's ``cd`` becoming ``rm``. A body never holds five
# dashes in a row, so it ends at its own END line (the cut block is ``pem-private-key-open``'s).
_REGEX = {
    "private-key": r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[^-]|-{1,4}[^-]){64,}?"
                   r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
}
# Literals (case-sensitive) without which a rule cannot match: its keywords alone ("ey", "sk",
# "curl") are everyday words that would run it on nearly every line.
_REQUIRED = {
    "jwt": (".ey",), "twilio-api-key": ("SK",), "octopus-deploy-api-key": ("API-",),
    "sendgrid-api-token": ("SG.",), "square-access-token": ("EAAA", "sq0atp-"),
    "lob-api-key": ("lob", "Lob", "LOB"), "lob-pub-api-key": ("lob", "Lob", "LOB"),
    "intra42-client-secret": ("s-s4t2",), "curl-auth-header": ("-H", "--header"),
    "curl-auth-user": ("-u", "--user"),
}
# Allowlist additions for log and code content, (target, regex): git commit hashes, UUIDs and
# digests (under a name such as key_sha256) are ids, not secrets; nor are dotted code references.
_EXTRA_ALLOW = {
    "sourcegraph-access-token": (("secret", r"^[0-9a-fA-F]{40}$"),),
    "generic-api-key": (("secret", r"^(?:[0-9a-f]{40}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$"),
                        ("secret", r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$"),
                        ("match", r"(?i)sha\d*|md5|hash|digest|checksum|fingerprint")),
}
# Hyperscan prefilter patterns cheaper than a rule's regex, each a superset of what the rule can
# report (the prefilter scans each text on its own and only says whether a rule may match in it).
# Sourcegraph's third alternative is any 40-hex run (every git commit hash), which the allowlist
# above always drops: what the rule can report holds ``sgp_``, or is a hex run whose first digit a
# JSON-safe cut removed (the ``b``/``f`` of a ``\b``/``\f`` escape). Facebook's access token holds
# a digit, ``|`` or ``%``, and 27 token characters in a row; its digit run costs Hyperscan a sixth
# of the whole scan.
# Literals (lower case) at one of which every match of a rule begins, so that its regex is tried only
# there (:func:`logmine.redact.engine.matches`): generic-api-key's regex opens with its keyword
# alternation, and Python's ``re`` tries that alternation at every position of a long line.
_STARTS = {
    "generic-api-key": ("access", "auth", "api", "credential", "creds", "key", "passw", "secret", "token"),
}
PREFILTER_PATTERNS = {
    "sourcegraph-access-token": (r"(?i)sgp_", r"(?i)\\[bf][0-9a-f]{39}"),
    "facebook-access-token": (r"(?i)[0-9][|%][0-9a-z_-]{27}",),
    # its regex's lookarounds are dropped in Hyperscan's prefilter mode, leaving a bare 40-character
    # run that matched at every end of every long base64-like run (the scan took nine times as long);
    # the rule needs this literal in the text anyway
    "pem-private-key-diff-line": (r"PRIVATE KEY",),
}
_CONTEXT = r"[\w.-]{0,50}?"  # gitleaks' leading context: it only widens a match, so it is dropped
# gitleaks' template pieces, widened for JSON-encoded text, where a quote reads \" and any escape
# (\", \\, \u00e9, not just \n) ends a secret
_JSON_WIDENING = (
    # gitleaks' end of a secret, widened to tolerate trailing punctuation (``…signature.``, ``key)``)
    ("(?:[\\x60'\"\\s;]|", "(?:[\\x60'\"\\s;.,:!?)\\]}>|&]|"),
    (r"""[\s'"]{0,3}""", r"""(?:[\s'"]|\\+"){0,3}"""),
    (r"""[\x60'"\s=]{0,5}""", r"""(?:[\x60'"\s=]|\\+"){0,5}"""),
    (r"\\[nr]", r"\\[nrtu\"'\\/]"),
)
BOUNDARY = r"(?:\b|(?<=\\[nrt]))"  # \b, or just after an escaped newline or tab in JSON text


@dataclass(frozen=True)
class Allow:
    """A gitleaks allowlist: a finding is dropped when any regex or stopword hits."""

    target: str  # secret | match | line
    regexes: tuple[re.Pattern, ...]
    stopwords: tuple[str, ...] = ()

    def allows(self, secret: str, text: str, start: int, end: int) -> bool:
        """Whether the finding ``secret``, matched at ``text[start:end]``, is allowed."""
        if self.target == "secret":
            target = secret
        elif self.target == "match":
            target = text[start:end]
        else:
            target = text[text.rfind("\n", 0, start) + 1:text.find("\n", end) % (len(text) + 1)]
        low = secret.lower()
        return any(r.search(target) for r in self.regexes) or any(w in low for w in self.stopwords)


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str
    regex: re.Pattern | None
    keywords: tuple[str, ...] = ()
    entropy: float = 0.0
    secret_group: int = 0
    allow: tuple[Allow, ...] = ()
    required: tuple[str, ...] = ()
    accept: Callable[[re.Match], bool] | None = None  # our rules' own test of a match
    context: bool = False  # the leading context was dropped: rebuild it for match allowlists
    late: bool = False  # runs after structured-key redaction (NAME=value style rules)
    starts: tuple[str, ...] = ()  # lower-case literals, one of which opens every match (_STARTS)


# ---------------------------------------------------------------- porting RE2 to Python re

def port_re2(pattern: str) -> str:
    """A Go RE2 pattern rewritten as a Python ``re`` pattern with the same matches.

    Mid-pattern ``(?i)`` (Python takes flags only at the start) becomes ``(?i:...)`` over the
    rest of its group, alternative by alternative; ``\\z`` becomes ``\\Z``; named groups become
    non-capturing (gitleaks names them as documentation, and the secret is the first capture
    group); a leading ``\\b`` also accepts the spot just after an escaped newline in JSON text.
    """
    pattern = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    while (found := _mid_flags(pattern)) is not None:
        start, end, flags = found
        close, bars = _group_tail(pattern, end)
        alts = [pattern[a:b] for a, b in zip([end, *(i + 1 for i in bars)], [*bars, close])]
        pattern = pattern[:start] + "|".join(f"(?{flags}:{alt})" for alt in alts) + pattern[close:]
    out = ""
    for _, tok in _tokens(pattern):
        if tok == r"\z":
            tok = r"\Z"
        elif tok == r"\b" and re.search(r"(?:^|[(|:]|\(\?[a-z-]+\))$", out):  # a leading \b
            tok = BOUNDARY
        out += tok
    return out


def _tokens(pattern: str, start: int = 0):
    """(index, token) pairs; an escape and a whole character class are one token each."""
    i = start
    while i < len(pattern):
        j = i + 1
        if pattern[i] == "\\":
            j = i + 2
        elif pattern[i] == "[":
            j += (pattern[j:j + 1] == "^")
            j += (pattern[j:j + 1] == "]")  # a leading ] is literal
            while pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            j += 1
        yield i, pattern[i:j]
        i = j


def _mid_flags(pattern: str) -> tuple[int, int, str] | None:
    """(start, end, flags) of the first ``(?flags)`` group that is not at the pattern's start."""
    for i, tok in _tokens(pattern):
        if tok == "(" and i > 0 and (m := re.match(r"\(\?([a-z-]+)\)", pattern[i:])):
            return i, i + m.end(), m[1]
    return None


def _group_tail(pattern: str, start: int) -> tuple[int, list[int]]:
    """Where the group around ``start`` closes, and its top-level ``|`` after ``start``."""
    depth, bars = 0, []
    for i, tok in _tokens(pattern, start):
        if tok == ")" and depth == 0:
            return i, bars
        depth += (tok == "(") - (tok == ")")
        if tok == "|" and depth == 0:
            bars.append(i)
    return len(pattern), bars


# ---------------------------------------------------------------- loading gitleaks' rules

def _compile(pattern: str) -> re.Pattern:
    return re.compile(port_re2(pattern), re.ASCII)  # RE2's \w, \s and \b are ASCII


def _allowlists(specs) -> tuple[Allow, ...]:
    return tuple(
        Allow(a.get("regexTarget", "secret"), tuple(map(_compile, a.get("regexes", ()))),
               tuple(a.get("stopwords", ())))
        for a in specs
        # path-only allowlists, and those ANDed with a path, cannot apply to a log line
        if (a.get("regexes") or a.get("stopwords")) and not (a.get("paths") and a.get("condition") == "AND")
    )


def load_gitleaks() -> tuple[list[Rule], dict[str, str], tuple[Allow, ...]]:
    config = tomllib.loads(RULES_FILE.read_text(encoding="utf-8"))
    global_allow = _allowlists([config.get("allowlist", {})])
    rules, skipped = [], {}
    for spec in config["rules"]:
        rid = spec["id"]
        reason = (_DISABLED.get(rid) or ("no content regex" if "regex" not in spec else "")
                  or ("path-scoped" if "path" in spec else ""))
        if not reason:
            try:
                regex = _compile(functools.reduce(lambda p, fix: p.replace(*fix), _JSON_WIDENING,
                                                  _REGEX.get(rid, spec["regex"]).replace(_CONTEXT, "")))
                allow = _allowlists(spec.get("allowlists", ()))
            except re.error as exc:
                reason = f"cannot port: {exc}"
        if reason:
            skipped[rid] = reason
            continue
        allow += tuple(Allow(target, (re.compile(rx),)) for target, rx in _EXTRA_ALLOW.get(rid, ()))
        kind = next((k for prefix, k in _KINDS if rid.startswith(prefix)), rid.replace("-", "_"))
        rules.append(Rule(rid, kind, regex, tuple(k.lower() for k in spec.get("keywords", ())),
                           spec.get("entropy", 0.0), spec.get("secretGroup", 0), allow,
                           _REQUIRED.get(rid, ()), context=_CONTEXT in spec["regex"], starts=_STARTS.get(rid, ())))
    return rules, skipped, global_allow
