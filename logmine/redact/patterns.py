"""Our own rules, next to gitleaks': secrets as coding-agent logs hold them.

gitleaks scans source files; logs add prose (``AKIA… / <secret>``), shell commands
(``mysql -pPASSWORD``), nested JSON encodings (a quote reads ``\\"`` or ``\\\\\\"``, a newline
``\\n`` or ``\\\\n``) and truncated output (``head -4 key.pem``). Each rule is (id, kind,
pattern, keywords, literals required, accept); a group named ``secret``, else group 1, is what
gets replaced. Also here: the value heuristics the rules share and the JSON keys that name
secrets (structured-key redaction).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

from logmine.redact.gitleaks import BOUNDARY
from logmine.redact.pseudonym import MARK, PLACEHOLDERS, Mask

_PLACEHOLDER_VALUE = r"\$.*|<.*>|\{.*\}|%.*%|\*+|.*(?:\.\.\.|…).*|(?:.*[_-])?x{3,}"  # $VAR <token> sk-... ghp_xxx
PLACEHOLDER_RE = re.compile(_PLACEHOLDER_VALUE)
_NOT_A_VALUE = re.compile(rf"(?i){_PLACEHOLDER_VALUE}|[0-9]+|true|false|none|null|yes|no|changeme|test|guest"
                          r"|(?:my|your)?_?(?:pass(?:wd|word)?|pwd|secret|token|value)|user(?:name)?"
                          r"|(?-i:[A-Z_]+)")  # an upper-case meta-variable: KEY=VALUE, TOKEN=YOUR_TOKEN
_CODE_REF = re.compile(r"[A-Za-z_][A-Za-z_.]*(?:\(\)?)?")  # args.password, get_token(), form.pwd


def entropy(s: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    return -sum(c / len(s) * math.log2(c / len(s)) for c in Counter(s).values())


def is_value(secret: str) -> bool:
    """A literal secret: not a placeholder, a flag, a number, a meta-variable or a well-known
    default (``guest``). For the heuristic rules; a secret-named JSON key needs less."""
    return not (_NOT_A_VALUE.fullmatch(secret) or _NOT_A_VALUE.fullmatch(secret.rstrip(".,:")))


def _literal(m: re.Match) -> bool:
    """A literal value that is not a reference to code (``password=args.password``)."""
    value = m["secret"]
    return is_value(value) and not _CODE_REF.fullmatch(value) and not value.startswith(("/", "~", "-"))


def _random(m: re.Match) -> bool:
    """A machine-made secret: letters and digits mixed, and high entropy."""
    value = m["secret"]
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and entropy(value) > 3.0


_NOT_SECRET_NAME = re.compile(r"_(?:FILE|PATH|DIR|URL|URI|ENDPOINT|HOST|PORT|NAME|TYPE|ID|LENGTH|SIZE|COUNT|LIMIT"
                              r"|ENV|VAR|FORMAT|PREFIX|FIELD|HEADER|PARAM)$")


_PUBLIC = re.compile(r"(?:^|_)(?:PUBLIC|PUBLISHABLE)(?:_|$)")


def _env_name_ok(m: re.Match) -> bool:
    """The matched segment (``TOKEN``) must end a whole ``UPPER_SNAKE`` name that starts at a word
    boundary and does not name a file, URL or size; the value must be a literal."""
    text, start = m.string, m.start()
    head = re.search(r"[A-Z0-9_]*\Z", text[max(0, start - 64):start]).group()
    before = start - len(head)
    if (head and not head.endswith("_")) or _NOT_SECRET_NAME.search(m["name"]) or _PUBLIC.search(head + m["name"]):
        return False  # MONKEY=, TOKEN_URL=, NEXT_PUBLIC_MAPBOX_TOKEN= (shipped to every browser by design)
    if before > 0 and re.match(r"[\w$.\-]", text[before - 1]) and text[before - 2:before - 1] != "\\":
        return False  # the tail of an identifier, or a $NAME expansion
    value = m["secret"]
    if m["sep"] != "=" and not any(c.isdigit() for c in value):
        return False  # NAME: value and NAME = "value" are code as often (METADATA_KEY = 'x-meta')
    return is_value(value) and not value.startswith(("/", ".", "~"))


Q = r"(?:\\*[\"'])?"  # an optional quote, escaped (once or more) when the text is JSON-encoded
NL = r"(?:\\+[rn]|\r?\n)"  # a newline, raw or escaped at any depth of JSON encoding
_PEM_LINE = r"[A-Za-z0-9+/=]{1,100}"
_AWS_ID = r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"
_B64_40 = r"(?<![A-Za-z0-9/+])(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
_SEP = r"[ \t]*(?:=|:|=>)[ \t]*"

# Run before gitleaks' rules, so that the pair is seen whole before either half is replaced.
EARLY_RULES = (
    ("aws-key-pair", "aws_secret_access_key",  # AKIA… / <40 chars>, AKIA…:<secret>, "id AKIA… secret …"
     _AWS_ID + r"\b[^\n]{0,80}?" + _B64_40, ("akia", "asia", "abia", "acca", "a3t"), (), _random),
    ("pem-private-key-open", "private_key",  # a PEM block cut off before its END line (head -4 key.pem)
     r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:" + NL + r"+" + _PEM_LINE + r")*",
     ("-----begin",), (), None),
    ("pem-private-key-diff-line", "private_key",  # a body line as one JSON string of a diff's lines
     # (Claude Code's structuredPatch: "+MIIE…", "-…"), where no newline joins it to its BEGIN line
     r'(?:(?<=")|(?<="[-+ ]))(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})(?=\\*")',
     ("private key",), ("PRIVATE KEY",), _random),
    ("pem-private-key-tail", "private_key",  # the body and END line of a block whose BEGIN was cut off
     r"(?:(?:(?<![A-Za-z0-9+/=])|(?<=\\[rn]))[A-Za-z0-9+/=]{40,100}" + NL + r"+)+-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
     ("-----end",), (), None),
)
OWN_RULES = (
    ("openai-project-key", "openai_api_key", BOUNDARY + r"(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,})",
     ("sk-proj-", "sk-svcacct-", "sk-admin-"), (), None),
    ("anthropic-key", "anthropic_api_key", r"(sk-ant-[a-z]{3,6}\d\d-[A-Za-z0-9_-]{20,})", ("sk-ant-",), (), None),
    ("aws-access-key-id", "aws_access_key_id", BOUNDARY + r"(" + _AWS_ID + r")\b",
     ("akia", "asia", "abia", "acca", "a3t"), (), lambda m: not m.group(1).endswith("EXAMPLE")),
    ("aws-secret-access-key", "aws_secret_access_key", r"(?i)aws_?secret_?(?:access_?)?key" + Q
     + r"[ \t]*(?:=|:|=>)[ \t]*" + Q + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", ("secret",), (), None),
    ("jwt-any-end", "jwt",  # gitleaks' jwt wants a quote or space after it; prose puts a "." or ")"
     BOUNDARY + r"(ey[A-Za-z0-9_-]{10,}\.ey[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{8,})(?![A-Za-z0-9_-])",
     ("ey",), (".ey",), None),
    ("google-api-key-any-end", "google_api_key", BOUNDARY + r"(AIza[\w-]{35})(?![\w-])", ("aiza",), (), None),
    ("authorization-header", "authorization_header", r"(?i)authorization" + Q + r"[ \t]*[:=][ \t]*" + Q
     + r"[ \t]*(?:bearer|basic|token|bot|digest)[ \t]+([A-Za-z0-9._~+/\-]{8,}=*)",
     ("authorization",), (), lambda m: is_value(m.group(1))),
    ("bearer-token", "authorization_header", r"(?i)" + BOUNDARY + r"bearer[ \t]+([A-Za-z0-9._~+/\-]{20,}=*)", ("bearer",), (),
     lambda m: any(c.isdigit() for c in m.group(1)) and entropy(m.group(1)) > 3.0),
    ("url-password", "url_password",  # user:pass@, unless a default such as postgres:postgres
     r"://([^\s:/@\"'\\<>\[\]]{1,256}):(?P<secret>[^\s:/@\"'\\<>\[\]]{1,256})@",
     ("://",), (), lambda m: is_value(m["secret"]) and m["secret"] != m[1]),
    ("mysql-password-flag", "password",  # mysql -pPASS, mysqldump --password=PASS
     BOUNDARY + r"(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]{0,200}?[ \t](?:-p|--password=)"
     + Q + r"(?P<secret>[^\s'\"\\`|;&]{3,})", ("mysql", "mariadb"), (), _literal),
    ("django-secret-key", "secret_key",  # SECRET_KEY = 'django-insecure-…' ($, (, # and ! included)
     BOUNDARY + r"(?:DJANGO_)?SECRET_KEY[ \t]*[=:][ \t]*\\*[\"'](?P<secret>[^\s'\"\\]{12,})", ("secret_key",), (),
     lambda m: is_value(m["secret"]) and not m["secret"].startswith(("os.", "env"))),
    ("npm-auth-token", "npm_token", r"_auth(?:Token)?[ \t]*=[ \t]*" + Q + r"(?P<secret>[^\s'\"\\]{8,})",
     ("_auth",), (), lambda m: is_value(m["secret"])),
    ("azure-sas-signature", "azure_sas", r"(?i)[?&;]sig=(?P<secret>[A-Za-z0-9%+/=]{20,})", ("sig=",), (), None),
    ("gcp-private-key-id", "private_key_id", r"private_key_id" + Q + _SEP + Q + r"(?P<secret>[0-9a-f]{40})\b",
     ("private_key_id",), (), None),
)
ENV_RULE = (  # NAME=value, export NAME=value, NAME: value, NAME = "value"
    "env-secret", "env_secret",
    r"(?P<name>(?:SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|KEY|APIKEY|CREDENTIALS?)(?:_[A-Z0-9]+)*)"
    r"(?P<sep>=|:[ \t]+|[ \t]*=[ \t]*(?=\\*[\"']))" + Q + r"(?P<secret>[^\s\"'\\$`<>(){}\[\],;|&]{4,})",
    (), ("SECRET", "TOKEN", "PASSW", "PASSPHRASE", "KEY", "CREDENTIAL"), _env_name_ok,
)

# Run after NAME=value secrets and JSON keys: they catch what those did not name.
LATE_RULES = (
    ("password-assignment", "password",  # password=hunter2 in a command, URL query or config line
     r"(?i)(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))(?:pass(?:word|wd)?|pwd)" + Q + r"[ \t]*[=:][ \t]*" + Q
     + r"(?P<secret>[^\s'\"\\`&;,)(<>\[\]{}|]{4,})", ("pass", "pwd"), (), _literal),
    ("secret-in-prose", "generic_secret",  # "the API key is 4f9c…", "client secret: …", "token abc…"
     r"(?i)" + BOUNDARY + r"(?:secret|token|api[ _-]?key|access[ _-]?key|client[ _-]?secret)(?:[ \t]+(?:key|is|was|for \w+))*"
     r"[ \t]*[:=]?[ \t]+" + Q + r"(?P<secret>[A-Za-z0-9/+_\-.]{20,})", ("secret", "token", "key"), (), _random),
)

# ---------------------------------------------------------------- structured keys

_SECRET_KEY = re.compile(
    r"(?:^|_)(?:(?P<password>password|passwd|passphrase|pwd)|(?P<secret>secret|secret_key|secret_access_key)"
    r"|(?P<api_key>api_key|apikey)|(?P<private_key>private_key)|(?P<private_key_id>private_key_id)"
    r"|(?P<authorization_header>authorization)|(?P<credentials>credentials?)|(?P<token>token))$")
_NOT_SECRET_KEY = re.compile(r"(?:^|_)(?:eos|bos|pad|unk|sep|cls|mask|stop|special|page)_token$")
KEY_WORDS = ("pass", "pwd", "secret", "token", "key", "authorization", "credential")  # one is in every _KEYISH
_KEYISH = rf"[A-Za-z0-9_.\-]{{0,40}}(?i:{'|'.join(KEY_WORDS)})[A-Za-z0-9_.\-]{{0,40}}"
JSON_PAIRS = (  # "key": "value", \"key\": \"value\", and deeper: \\\"key\\\": \\\"value\\\"
    re.compile(rf'"({_KEYISH})"\s*:\s*"((?:[^"\\]|\\.)*)"', re.ASCII),
    re.compile(rf'\\"({_KEYISH})\\"\s*:\s*\\"((?:\\\\(?:\\.|[^"\\])|\\[^"\\]|[^"\\])*)\\"', re.ASCII),
    re.compile(rf'(?<!\\)(\\{{3,}})"({_KEYISH})\1"\s*:\s*\1"([^"\\]*)\1"', re.ASCII),
    re.compile(rf"'({_KEYISH})'\s*:\s*'([^'\\\n]*)'", re.ASCII),  # a Python dict or YAML flow map
)
# The same for the Hyperscan prefilter: each pattern's tail from the key's secret word on (a pattern's
# tail matches wherever the pattern does, so the prefilter still never misses a line), without the
# backreference, which Hyperscan approximates far too widely. Leading with the key's first 40
# characters cost a fifth of the whole scan: Hyperscan tried that run at every quote.
_KEY_TAIL = rf"(?i:{'|'.join(KEY_WORDS)})[A-Za-z0-9_.\-]{{0,40}}"
JSON_PAIRS_PREFILTER = (
    rf'{_KEY_TAIL}"\s*:\s*"(?:[^"\\]|\\.)*"',
    rf'{_KEY_TAIL}\\"\s*:\s*\\"(?:\\\\(?:\\.|[^"\\])|\\[^"\\]|[^"\\])*\\"',
    rf'{_KEY_TAIL}\\{{3,}}"\s*:\s*\\{{3,}}"[^"\\]*\\{{3,}}"',
    rf"{_KEY_TAIL}'\s*:\s*'[^'\\\n]*'",
)
# Encrypted reasoning (``"encrypted_content": "gAAAA..."``) is ciphertext: never a readable secret,
# and a quarter of a typical log's bytes, so its value is masked while the rest is scanned.
OPAQUE_KEY = '"encrypted_content"'
OPAQUE = re.compile(r'("encrypted_content"\s*:\s*")([^"\\]*)(")')
STRUCTURED_KEYWORDS = ("passw", "passphrase", "pwd", "secret", "key", "authorization", "credential", "token")


@functools.lru_cache(maxsize=4096)
def secret_key_kind(key: str) -> str | None:
    """The kind of a JSON key that names a secret (``clientSecret`` -> ``secret``), else None.

    Keys that count or configure tokens (``input_tokens``, ``total_token_usage``, ``eos_token``)
    do not name secrets.
    """
    norm = re.sub(r"[-.\s]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)).lower()
    m = None if _NOT_SECRET_KEY.search(norm) else _SECRET_KEY.search(norm)
    return m.lastgroup if m else None


def keyed_value(value: str, kind: str = "secret") -> bool:
    """Whether a string under a secret-naming key is a value to replace: one that looks like a
    secret of ``kind`` (:func:`plausible`) and is not already a replacement."""
    return bool(value) and MARK not in value and not PLACEHOLDER_RE.fullmatch(value) and plausible(value, kind)


def replace_spans(text: str, finds: list[tuple[int, int, str]], counts: Counter, mask: Mask = PLACEHOLDERS) -> str:
    """``text`` with each (start, end, kind) span, in order and not overlapping, replaced by ``mask``
    (a pseudonym, or a placeholder)."""
    if not finds:
        return text
    out, last = [], 0
    for s, e, kind, *_ in finds:
        out += (text[last:s], mask(text[s:e], kind))
        last = e
        counts[kind] += 1
    return "".join(out) + text[last:]


# ---------------------------------------------------------------- precision of context-based kinds

#: Kinds whose rules find a secret by its context (a name, a key, a flag) rather than by its format;
#: their values must also look like a secret (:func:`plausible`).
CONTEXT_KINDS = frozenset({"password", "secret", "secret_key", "credentials", "api_key", "token", "env_secret",
                           "generic_secret", "generic_api_key", "url_password", "npm_token", "authorization_header"})
_PASSWORD_KINDS = frozenset({"password", "url_password"})
_ANSI = re.compile(r"(?:\x1b|\\u001b|\\x1b|\\033)\[[0-9;]*[A-Za-z]")  # colours of grep --color around a value
_CHAIN = re.compile(r"[$@]?[A-Za-z_$][\w$]*(?:(?:\.|\?\.|::|->)[A-Za-z_$][\w$]*)+(?:\(.*\)|\[.*\])?;?"  # a.b.c, a.f(x)
                    r"|[A-Za-z_$][\w$]*(?:\(.*\)|\[.*\]);?")  # f(x), env["X"]
_CODE = re.compile(
    r"(?:process\.env|import\.meta\.env|os\.environ|os\.getenv|getenv|ENV|env|config|settings)(?:\.|\[|\(|::).*"
    r"|.*(?:\$\{.*\}|\{\{.*\}\}|\{%.*%\}|%\(\w+\)s|\$\([a-z][\w.-]*(?:\s[^()]*)?\)).*"  # ${VAR}, {{ var }}, {% tag %}, %(name)s, $(cmd …)
    r"|[\w.$]+\s*(?:\|\||\?\?|\bor\b)\s*.*")  # a fallback: env.X || "dev"
_WORDS = re.compile(r"[^\W\d_]{2,}[ \t]+[^\W\d_]{2,}")  # two words: a sentence, a label
_PLACEHOLDER_WORD = (r"your|my|the|some|dummy|example|sample|fake|test|placeholder|redacted|insert|enter|replace|put|set"
                     r"|change|generate|add|fill|paste|todo|tbd|none|null|nil|undefined|empty|secret|password|token"
                     r"|hidden|masked|default|xxx+")
_PLACEHOLDER = re.compile(  # your-api-key, YOUR_RESEND_API_KEY, <token>, change_me, replace-with-secret, xxx, ***, sk-...
    rf"(?i:[a-z]{{1,4}}\.)?[<\[{{(]?(?i:{_PLACEHOLDER_WORD})(?:[-_. ](?:[a-z]+|[A-Z]+))*[>\]}})]?"
    r"|(?i:changeme|n/?a)|x{3,}|\*{3,}|.*(?:\.{3}|…).*")
_PHRASE = re.compile(r"[a-z]+(?:[-_](?:[a-z]+|\d+))*|[A-Z][A-Z]*(?:_[A-Z]+)*"  # same-origin, dev-secret-32-chars, SOME_NAME
                     r"|[a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+(?:[A-Z][a-z]+)*")  # camelCase, PascalCase


def plausible(value: str, kind: str) -> bool:
    """Whether ``value``, found by its context as a secret of ``kind``, looks like one.

    Never a code expression (an attribute chain or call: ``Convert.ToBase64String(…)``,
    ``process.env.X``, ``os.environ[...]``, ``${VAR}``, a template placeholder, ``env.X || "dev"``),
    natural-language text (words separated by spaces, letters outside ASCII: an i18n catalogue's
    ``"password": "Mot de passe"``), or an obvious placeholder (``change_me``, ``your-api-key``,
    ``YOUR_RESEND_API_KEY``, ``<token>``, ``xxx``). A password may be a word (``hunter2``, ``admin``),
    not a phrase (``low-res``); any other kind must look machine-made: at least 8 characters and not a
    plain phrase or identifier (``include``, ``same-origin``, ``dev-secret-32-chars``)."""
    v = _ANSI.sub("", value).strip().strip("\"'`")
    if not v or _WORDS.search(v) or any(ord(c) > 127 for c in v) or _PLACEHOLDER.fullmatch(v) or _CODE.fullmatch(v):
        return False
    if _CHAIN.fullmatch(v) and not any(_token_part(part) for part in re.split(r"[^\w$]+", v)):
        return False
    if kind in _PASSWORD_KINDS:  # a word may be a password; its rules reject bare names of code (_literal)
        return len(v) >= 3 and not re.fullmatch(r"[a-z]+(?:-[a-z]+)+", v)
    return len(v) >= 8 and not _PHRASE.fullmatch(v)


def _token_part(part: str) -> bool:
    """A part of a dotted value that is a token, not a name: long, several digits, high entropy."""
    return len(part) >= 16 and sum(c.isdigit() for c in part) >= 3 and entropy(part) > 3.5
