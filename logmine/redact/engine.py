"""The rule set and the :class:`Redactor` that runs it.

Detection builds on the vendored gitleaks rule set (``rules/gitleaks.toml``, MIT, see
``rules/README.md``), ported to Python ``re`` at load time (:mod:`logmine.redact.gitleaks`), plus
rules of our own and structured-key redaction (:mod:`logmine.redact.patterns`) and base64 runs
decoded and scanned again (:mod:`logmine.redact.encoded`). A prefilter
(:mod:`logmine.redact.prefilter`: Hyperscan, else keywords) picks the rules a text can need, so
the Python regexes run only where a match is possible.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import orjson

from logmine.redact import encoded
from logmine.redact.gitleaks import PREFILTER_PATTERNS, Rule, load_gitleaks
from logmine.redact.patterns import (
    CONTEXT_KINDS,
    EARLY_RULES,
    ENV_RULE,
    JSON_PAIRS,
    JSON_PAIRS_PREFILTER,
    KEY_WORDS,
    LATE_RULES,
    OPAQUE,
    OPAQUE_KEY,
    OWN_RULES,
    STRUCTURED_KEYWORDS,
    entropy,
    keyed_value,
    plausible,
    replace_spans,
    secret_key_kind,
)
from logmine.redact.pseudonym import PLACEHOLDERS, Mask

_STRUCTURED = Rule("structured-keys", "", None, STRUCTURED_KEYWORDS, late=True)


def _own(spec, late: bool = False) -> Rule:
    rid, kind, pattern, keywords, required, accept = spec
    regex = re.compile(pattern, re.ASCII)
    return Rule(rid, kind, regex, keywords, secret_group=regex.groupindex.get("secret", 0),
                 required=required, accept=accept, late=late)


def _prefilter(rules: list[Rule]):
    patterns = [list(JSON_PAIRS_PREFILTER) if r is _STRUCTURED
                else list(PREFILTER_PATTERNS.get(r.id, [r.regex.pattern])) for r in rules]
    keywords = [r.keywords for r in rules]
    try:
        from logmine.redact.prefilter import HyperscanPrefilter
        return HyperscanPrefilter(patterns, keywords, b64=len(rules))
    except ImportError:
        from logmine.redact.prefilter import KeywordPrefilter
        return KeywordPrefilter(keywords)


class Ruleset:
    """All rules in running order, and the prefilter that picks those a text needs."""

    def __init__(self, engine: str | None = None) -> None:
        gitleaks, self.skipped, self.allow = load_gitleaks()
        first = [r for r in gitleaks if r.id == "private-key"]  # before any rule can bite into a key
        generic = [r for r in gitleaks if r.id.startswith("generic")]
        # named secrets first; NAME=value rules catch only what neither they nor JSON keys named
        self.rules = [*first, *map(_own, EARLY_RULES), *(r for r in gitleaks if r not in first + generic),
                      *map(_own, OWN_RULES), _STRUCTURED, _own(ENV_RULE, late=True),
                      *(_own(spec, late=True) for spec in LATE_RULES),
                      *(replace(r, late=True) for r in generic)]
        self.b64 = len(self.rules)  # the id the prefilter reports for a long base64 run
        if engine == "keywords":
            from logmine.redact.prefilter import KeywordPrefilter
            self.prefilter = KeywordPrefilter([r.keywords for r in self.rules])
        else:
            self.prefilter = _prefilter(self.rules)

    def selected(self, found: frozenset[int]) -> list[Rule]:
        return [self.rules[i] for i in sorted(found) if i < self.b64]


def ruleset(engine: str | None = None) -> Ruleset:
    """The shared rule set, compiled on first use (``engine="keywords"``: without Hyperscan).

    ``ruleset()`` and ``ruleset(None)`` are one cache entry (``lru_cache`` keys them apart, and a
    process that warmed one compiled every rule again for the other)."""
    return _ruleset(engine)


@functools.lru_cache(maxsize=2)
def _ruleset(engine: str | None) -> Ruleset:
    return Ruleset(engine)


def skipped_rules() -> dict[str, str]:
    """The gitleaks rules that are not run, each with the reason."""
    return dict(ruleset().skipped)


def engine_name() -> str:
    """``hyperscan`` or ``keywords``: the prefilter this process runs."""
    return ruleset().prefilter.name


# ---------------------------------------------------------------- JSON-safe replacement

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


def matches(rule: Rule, text: str) -> Iterator[re.Match]:
    """``rule.regex.finditer(text)``; for a rule whose every match opens with one of
    :attr:`~logmine.redact.gitleaks.Rule.starts`, the regex is tried only where one of them begins
    (found with ``str.find`` on the lower-cased text: several times faster on long lines)."""
    low = text.lower() if rule.starts else None
    if low is None or len(low) != len(text):  # only U+0130 lower-cases to two characters
        yield from rule.regex.finditer(text)
        return
    yield from tried_at(rule.regex, text, occurrences(low, rule.starts))


def occurrences(low: str, words: Sequence[str]) -> list[int]:
    """Where each of ``words`` begins in ``low``, overlaps included."""
    at = []
    for word in words:
        i = low.find(word)
        while i != -1:
            at.append(i)
            i = low.find(word, i + 1)
    return at


def tried_at(regex: re.Pattern, text: str, starts: Iterable[int]) -> Iterator[re.Match]:
    """``regex.finditer(text)`` when every match can only begin at one of ``starts``: the leftmost
    match at or after the end of the previous one, trying the regex at those positions only."""
    end = 0
    for start in sorted(set(starts)):
        if start >= end and (m := regex.match(text, start)):
            yield m
            end = max(m.end(), start + 1)


def pair_starts(text: str, keys: list[int], form: int) -> list[int]:
    """Where a match of ``JSON_PAIRS[form]`` can begin, given where the key words begin (``keys``):
    at its opening delimiter, which lies at most 41 characters before a key word (a key has up to
    40 characters before its word). Forms: 0 ``"key"``, 1 ``\\"key\\"``, 2 ``\\\\\\"key…`` (a run of
    3 or more backslashes, from its first), 3 ``'key'``."""
    quote, out = "'" if form == 3 else '"', []
    for key in keys:
        q = text.find(quote, max(0, key - 41), key)
        while q != -1:
            if form in (0, 3):
                out.append(q)
            elif form == 1 and q and text[q - 1] == "\\":
                out.append(q - 1)
            elif form == 2:
                run = q
                while run and text[run - 1] == "\\":
                    run -= 1
                if q - run >= 3:
                    out.append(run)
            q = text.find(quote, q + 1, key)
    return out


# ---------------------------------------------------------------- the redactor

@dataclass(frozen=True)
class Finding:
    """One replacement, for :func:`~logmine.redact.scan.scan`'s report: what was found, by which
    rule, why it counted (``format``, or ``context + entropy 3.9``), and the text around it with the
    secret itself shortened (``hu…2`` and its length). ``digest``: the first 12 hex digits of the
    secret's SHA-256, to tell the same value apart in several findings (and to label it)."""

    kind: str
    rule: str
    why: str
    preview: str
    digest: str


_DELIMITERS = frozenset(" \t\r\n'\"`\\")


def _token(text: str, s: int, e: int) -> str:
    """The run of characters around ``text[s:e]`` up to whitespace, a quote or a backslash: a
    pseudonym that a rule finds part of in a second pass (an earlier rule masked the whole)."""
    while s and text[s - 1] not in _DELIMITERS:
        s -= 1
    while e < len(text) and text[e] not in _DELIMITERS:
        e += 1
    return text[s:e]


def _short(secret: str) -> str:
    """The secret as a finding's preview shows it: its first two and last characters, its length."""
    return f"{secret[:2]}…{secret[-1:]} ({len(secret)} chars)" if len(secret) > 6 else f"… ({len(secret)} chars)"


def _preview(final: str, replacement: str, short: str) -> str:
    """Up to 40 characters (whole words) that precede ``replacement`` in the redacted ``final`` text
    (so no other secret shows), then the secret shortened."""
    at = final.find(replacement)
    before = final[max(0, at - 40):max(at, 0)]
    if at > 40:
        before = before[next((i + 1 for i, c in enumerate(before) if c.isspace()), len(before)):]
    return " ".join(f"{before}«{short}»".split())


class Redactor:
    """Replaces secrets with their pseudonyms (``mask``: :class:`~logmine.redact.pseudonym.Mask` with
    a store's key) or with ``[REDACTED:<kind>]`` (no key: the default); :attr:`counts` tallies
    replacements by kind, and :attr:`findings` (when ``findings=True``) lists each one.

    Cheap to make: all instances share the rules, compiled once per process.
    """

    def __init__(self, engine: str | None = None, mask: Mask = PLACEHOLDERS, findings: bool = False) -> None:
        self._rules = ruleset(engine)
        self.mask = mask
        self.counts: Counter[str] = Counter()
        self.findings: list[Finding] | None = [] if findings else None
        self._pending: list[tuple[Finding, str]] = []  # found in the text being redacted, previewed when it is done

    def redact(self, text: str) -> tuple[str, Counter[str]]:
        """``text`` (plain text: a line, a file, a chunk) redacted, and the replacements of this call by kind."""
        counts: Counter[str] = Counter()
        out = self.run(text, False, counts)
        self.counts.update(counts)
        return out, counts

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced (``text`` itself when it holds none)."""
        return self.redact(text)[0]

    def redact_json_line(self, line: str, found: frozenset[int] | None = None) -> str:
        """One JSON document's text (a JSONL line or a whole file), redacted in its encoding.

        A replacement never splits an escape sequence or crosses a string's quotes, and string
        values under secret-naming keys become placeholders, so valid JSON stays valid. Should a
        replacement break it all the same, the document is parsed, redacted as objects
        (:meth:`redact_obj`) and serialised again. Encrypted reasoning is opaque: not scanned.
        ``found``: the prefilter's rules for ``line``, when the caller has them already.
        """
        if found is None:
            found = self._rules.prefilter.rules_by_text([line], opaque=True).get(0)
            if not found:
                return line
        blobs: list[str] = []
        masked = OPAQUE.sub(lambda m: blobs.append(m[2]) or m[1] + m[3], line) if OPAQUE_KEY in line else line
        counts: Counter[str] = Counter()
        out = self.run(masked, True, counts, found)
        if not counts:
            return line
        if blobs:
            rest = iter(blobs)
            out = OPAQUE.sub(lambda m: m[1] + next(rest) + m[3], out)
        try:
            orjson.loads(out)
        except orjson.JSONDecodeError:
            try:
                return orjson.dumps(self.redact_obj(orjson.loads(line))).decode()
            except orjson.JSONDecodeError:
                pass  # it was no JSON to begin with: the text redaction stands
        self.counts.update(counts)
        return out

    def redact_jsonl(self, lines: Sequence[str], raw: Sequence[bytes] | None = None) -> list[str]:
        """Many JSON documents (JSONL lines, no newline in any) redacted as :meth:`redact_json_line`
        does, with one prefilter call for all of them: the fast path for a chunk of a log.
        ``raw``: the same lines as UTF-8 bytes, when the caller has them (saves encoding them)."""
        out = list(lines)
        prefilter = self._rules.prefilter
        by_line = (prefilter.rules_by_text(lines, opaque=True) if raw is None
                   else prefilter.rules_by_data(raw, opaque=True))
        for i, found in by_line.items():
            out[i] = self.redact_json_line(lines[i], found)
        return out

    def redact_many(self, texts: Sequence[str | None], json: bool = False) -> list[str | None]:
        """Many texts (None passes through) redacted with one prefilter pass over all of them;
        ``json``: each is a JSON document's text (:meth:`redact_json_line`), else plain text."""
        out = list(texts)
        present = [i for i, t in enumerate(texts) if t]
        found_for = self._rules.prefilter.rules_by_text([texts[i] for i in present], opaque=json)
        for k, found in found_for.items():
            i = present[k]
            out[i] = self.redact_json_line(texts[i], found) if json else self._plain(texts[i], found)
        return out

    def _plain(self, text: str, found: frozenset[int]) -> str:
        counts: Counter[str] = Counter()
        out = self.run(text, False, counts, found)
        self.counts.update(counts)
        return out

    def redact_obj(self, obj):
        """A copy of parsed JSON with every string redacted and secret-keyed strings replaced."""
        if isinstance(obj, str):
            return self.redact_text(obj)
        if isinstance(obj, list):
            return [self.redact_obj(v) for v in obj]
        if isinstance(obj, dict):
            return {k: v if k == OPAQUE_KEY[1:-1] else self._keyed(k, v) for k, v in obj.items()}
        return obj

    def _keyed(self, key, value):
        kind = secret_key_kind(key) if isinstance(key, str) and isinstance(value, str) else None
        if kind is None:
            return self.redact_obj(value)
        out = self.run(value, False, self.counts, named_only=True)
        if out is value and keyed_value(value, kind) and not self.mask.recognises(value):
            out = self._replace(value, [(0, len(value), kind, "structured-keys")], self.counts)
        return self._resolve(f"{key}: {out}")[len(key) + 2:] if self._pending else out

    def _replace(self, text: str, finds: list[tuple[int, int, str, str]], counts: Counter) -> str:
        """``text`` with the (start, end, kind, rule) spans masked, each logged when findings are kept."""
        if self.findings is not None:
            for s, e, kind, rule in finds:
                secret = text[s:e]
                context = kind in CONTEXT_KINDS or rule == "structured-keys" or rule.startswith("generic")
                why = f"context + entropy {entropy(secret):.1f}" if context else "format"
                digest = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:12]
                self._pending.append((Finding(kind, rule, why, _short(secret), digest), self.mask(secret, kind)))
        return replace_spans(text, finds, counts, self.mask)

    def _resolve(self, final: str) -> str:
        """Log the findings of the text that became ``final``, each previewed in it; returns ``final``."""
        for finding, replacement in self._pending:
            self.findings.append(replace(finding, preview=_preview(final, replacement, finding.preview)))
        self._pending.clear()
        return final

    def run(self, text: str, json: bool, counts: Counter, found: frozenset[int] | None = None,
            named_only: bool = False, depth: int = 0) -> str:
        """``text`` redacted by the rules in ``found`` (by default, the prefilter's pick), counting
        into ``counts``. ``json``: ``text`` is JSON text, redacted in its encoding."""
        if found is None:
            found = self._rules.prefilter.rules_in(text)
        masked: list[tuple[int, int]] = []  # pseudonyms found in this text: a rule never bites into one
        for rule in self._rules.selected(found):
            if rule.late and named_only:
                break
            before = len(text)
            if rule is _STRUCTURED:
                text = self._structured(text, counts)
            elif not rule.required or any(r in text for r in rule.required):
                text = self._apply(rule, text, json, counts, masked)
            if len(text) != before:  # a placeholder moved what follows: the spans no longer hold
                masked.clear()
        if depth < 2 and (self._rules.b64 in found or self._rules.prefilter.name == "keywords"):
            text = encoded.redact_base64(text, counts, lambda decoded: self._decoded_kind(decoded, depth),
                                         self._replace, self.mask.recognises)
        return self._resolve(text) if depth == 0 and self._pending else text

    def _decoded_kind(self, decoded: str, depth: int) -> str | None:
        """The kind of the first secret in a decoded base64 run, if it holds any."""
        counts: Counter[str] = Counter()
        pending, self._pending = self._pending, []  # the secret inside is the block's: one finding
        try:
            self.run(decoded, False, counts, depth=depth + 1)
        finally:
            self._pending = pending
        return next(iter(counts), None)

    def _apply(self, rule: Rule, text: str, json: bool, counts: Counter, masked: list[tuple[int, int]]) -> str:
        """``text`` with ``rule``'s secrets masked. A match that is a pseudonym already is recorded in
        ``masked``, and no later rule's match overlapping one is taken (a rule for the tail of a PEM
        block inside the pseudonym of the whole block): a second pass changes nothing."""
        finds = []
        for m in matches(rule, text):
            s, e = _secret_span(m, rule.secret_group)
            if json:
                s, e = _json_safe(text, s, e, rule.kind == "private_key")
            if text[s:s + 1] in ("n", "r", "t") and _escaped(text, s):
                s += 1  # a secret never starts with the letter of an escape (\n) that precedes it
            if s >= e or any(s < b and a < e for a, b in masked):
                continue
            if self.mask.key and (self.mask.recognises(text[s:e]) or self.mask.recognises(_token(text, s, e))):
                masked.append((s, e))
            elif self._keep(rule, text[s:e], m):
                finds.append((s, e, rule.kind, rule.id))
        if self.mask.key:  # what this rule masks no later rule masks again (pseudonyms keep the length)
            masked += [(s, e) for s, e, *_ in finds]
        return self._replace(text, finds, counts)

    def _keep(self, rule: Rule, secret: str, m: re.Match) -> bool:
        """gitleaks' filters (entropy, a digit in generic secrets, allowlists), then our rule's own."""
        if self.mask.recognises(secret) or (rule.entropy and entropy(secret) <= rule.entropy):
            return False
        if rule.kind in CONTEXT_KINDS or rule.id.startswith("generic"):
            named = m.groupdict().get("name") or ""
            if not plausible(secret, "password" if "PASS" in named else rule.kind):  # DB_PASSWORD=admin
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
        """Values under secret-naming keys (:data:`JSON_PAIRS`), each form tried only at the
        delimiters just before a key word: trying it at every quote of a long line cost more than
        all other rules together."""
        seen, keys = None, []
        for form, pairs in enumerate(JSON_PAIRS):
            key, value = (2, 3) if pairs.groups == 3 else (1, 2)
            if text is not seen:  # the first form, or a replacement changed the text
                seen, low = text, text.lower()
                keys = occurrences(low, KEY_WORDS) if len(low) == len(text) else None
            found = (pairs.finditer(text) if keys is None
                     else tried_at(pairs, text, pair_starts(text, keys, form)))
            finds = [(m.start(value), m.end(value), kind, "structured-keys") for m in found
                     if (kind := secret_key_kind(m[key])) and keyed_value(m[value], kind)
                     and not self.mask.recognises(m[value])]
            text = self._replace(text, finds, counts)
        return text


def default_redactor(mask: Mask = PLACEHOLDERS) -> Redactor:
    """A new :class:`Redactor`, counts at zero, over the shared rules (compiled on first use)."""
    return Redactor(mask=mask)
