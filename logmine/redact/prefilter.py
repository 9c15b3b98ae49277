"""Which rules can match where: the cheap first pass before any Python regex runs.

Two engines with one contract, :meth:`rules_in` (the rules that can match in a text) and
:meth:`rules_by_text` / :meth:`rules_by_data` (the same, for each of many texts, as ``str`` or as
UTF-8 bytes):

- :class:`HyperscanPrefilter` compiles every rule's regex in Hyperscan's *prefilter* mode (a
  superset of the regex's matches: it never misses one) into one database and scans many texts
  in one call, joined by newlines, at hundreds of MB/s; a hit belongs to the text it ends in. A
  rule whose regex Hyperscan cannot take stands in through its keywords, or runs on every text
  holding a hit when it has none. Base64 runs long enough to hold a key are found apart, with
  ``bytes.translate`` and ``bytes.find`` (:func:`base64_runs`): as a Hyperscan pattern the run
  cost two fifths of the whole scan.
- :class:`KeywordPrefilter`, the fallback when ``hyperscan`` is not installed: gitleaks' keyword
  scheme (a rule runs on a text holding one of its keywords), with an Aho-Corasick automaton
  (``pyahocorasick``) or, without it, one trie-shaped regex.

Lengths in the Hyperscan pass count UTF-8 bytes where Python counts characters; the two agree on
ASCII, which every secret format is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from pathlib import Path

from logmine.locations import cache_dir

# A base64 run long enough to hold a key: 64 characters (48 bytes) of the standard or URL-safe
# alphabet. A run of Fernet ciphertext (gAAAAA…, encrypted reasoning) does not count.
B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
B64_MIN = 64
_B64_MARKS = bytes(ord("A") if c in B64_ALPHABET else ord(".") for c in range(256))
_B64_NEEDLE = b"A" * B64_MIN
_FERNET = b"gAAAAA"
# Encrypted reasoning inside JSON text: its value is never scanned (see patterns.OPAQUE)
_OPAQUE_KEY = b'"encrypted_content"'
_OPAQUE_OPEN = re.compile(rb'\s*:\s*"')
_VERSION = 2  # of how the database is built: part of the cache key


def long_runs(data: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each maximal run of at least :data:`B64_MIN` base64 characters in ``data``.
    Two C passes over the data (translate, then find)."""
    marks = data.translate(_B64_MARKS)
    start = marks.find(_B64_NEEDLE)
    while start != -1:
        end = marks.find(b".", start + B64_MIN)
        if end == -1:
            yield start, len(data)
            return
        yield start, end
        start = marks.find(_B64_NEEDLE, end)


def base64_runs(data: bytes) -> Iterator[int]:
    """Start offsets of the runs of :func:`long_runs`, runs of Fernet ciphertext left out."""
    return (start for start, _ in long_runs(data) if data[start:start + 6] != _FERNET)


def mask_opaque(data: bytes) -> bytes:
    """JSON text with the values of ``"encrypted_content"`` cut out (they are never scanned): the
    value runs to the next quote and holds no backslash (as :data:`~logmine.redact.patterns.OPAQUE`
    reads it); found with ``bytes.find``, several times faster than a regex over the value."""
    key = data.find(_OPAQUE_KEY)
    if key == -1:
        return data
    pieces, at = [], 0
    while key != -1:
        opened = _OPAQUE_OPEN.match(data, key + len(_OPAQUE_KEY))
        if opened is None:
            key = data.find(_OPAQUE_KEY, key + 1)
            continue
        value = opened.end()
        end = data.find(b'"', value)
        if end == -1 or data.find(b"\\", value, end) != -1:
            break  # not the plain value OPAQUE masks: scanned like the rest
        pieces.append(data[at:value])
        at = end
        key = data.find(_OPAQUE_KEY, end)
    return b"".join([*pieces, data[at:]]) if pieces else data


def _trie(words) -> str:
    """One regex for the longest of ``words`` at a position; ``re`` runs it far faster than a
    flat alternation."""
    firsts = sorted({w[0] for w in words if w})
    alts = [re.escape(c) + _trie({w[1:] for w in words if w[:1] == c}) for c in firsts]
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    return "" if not alts else f"(?:{body})?" if "" in words else body


class KeywordPrefilter:
    """gitleaks' keyword scheme: a rule runs on a text that holds one of its keywords."""

    name = "keywords"

    def __init__(self, keywords: Sequence[Sequence[str]]) -> None:
        """``keywords[i]``: rule i's lower-case keywords; a rule with none runs on every text."""
        words = {k for ks in keywords for k in ks}
        self._find = re.compile(_trie(words) or r"(?!)")
        self._automaton = _automaton(words)
        self._always = frozenset(i for i, ks in enumerate(keywords) if not ks)
        # a keyword found stands for every keyword inside it ("sk_live" holds "sk"), and the scan,
        # reporting the longest keyword at each start without overlaps, looks again wherever
        # another keyword could start inside one found and run past its end
        self._rules_for = {k: frozenset(i for i, ks in enumerate(keywords) if any(w in k for w in ks)) for k in words}
        self._overlaps = {k: [o for o in range(1, len(k)) if any(w.startswith(k[o:]) and len(w) > len(k) - o
                                                                 for w in words)] for k in words}

    def rules_in(self, text: str) -> frozenset[int]:
        low = text.lower()
        if self._automaton is not None:  # every occurrence, overlaps included, in one C pass
            found = {keyword for _, keyword in self._automaton.iter(low)}
        else:
            found = self.scan_keywords(low)
        return self._always.union(*(self._rules_for[k] for k in found))

    def rules_by_text(self, texts: Sequence[str], opaque: bool = False) -> dict[int, frozenset[int]]:
        """``opaque`` is taken and ignored: keywords inside encrypted reasoning only cost time."""
        return {i: rules for i, text in enumerate(texts) if (rules := self.rules_in(text))}

    def rules_by_data(self, datas: Sequence[bytes], opaque: bool = False) -> dict[int, frozenset[int]]:
        """:meth:`rules_by_text` for texts given as UTF-8 bytes."""
        return self.rules_by_text([data.decode("utf-8", "surrogatepass") for data in datas])

    def scan_keywords(self, low: str) -> set[str]:
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


def hyperscan_pattern(pattern: str) -> bytes:
    """A Python ``re`` pattern of ours as Hyperscan reads it: named groups unnamed, the JSON-aware
    leading boundary dropped, and the text's start and end anchors (``\\A``, ``\\Z``) made line
    anchors, since texts are scanned joined by newlines (a prefilter may match more, never less)."""
    from logmine.redact.gitleaks import BOUNDARY

    pattern = pattern.replace(BOUNDARY, "")
    pattern = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    pattern = re.sub(r"(?<!\\)((?:\\\\)*)\\([AZz])", lambda m: m[1] + ("^" if m[2] == "A" else "$"), pattern)
    return pattern.encode()


class HyperscanPrefilter:
    """All rule regexes in one Hyperscan database, scanned once per chunk."""

    name = "hyperscan"

    def __init__(self, patterns: Sequence[Sequence[str]], keywords: Sequence[Sequence[str]], b64: int) -> None:
        """``patterns[i]``: the regexes (Python syntax) whose matches rule i can find; ``keywords[i]``
        stand in for any that Hyperscan cannot compile; ``b64`` is the id reported for a base64 run."""
        import hyperscan

        self._b64 = b64
        self._hyperscan, self._local = hyperscan, threading.local()  # one scratch space per thread
        cache = _cache_file(hyperscan, patterns, keywords, b64)
        if (cached := _load(hyperscan, cache)) is not None:
            self._db, self._always = cached
            return
        self._db = hyperscan.Database()
        try:
            self._always = self._compile(hyperscan, patterns, keywords, lambda _: True)
        except hyperscan.error:  # find the patterns Hyperscan cannot take, one by one
            self._always = self._compile(hyperscan, patterns, keywords, lambda p: _compiles(hyperscan, p))
        _save(hyperscan, cache, self._db, self._always)

    def _compile(self, hyperscan, patterns, keywords, takes) -> set[int]:
        """Compile the database; returns the rules that must run on every text with any hit."""
        exprs, ids, flags, always = [], [], [], set()
        base = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE
        for i, pats in enumerate(patterns):
            for pattern in map(hyperscan_pattern, pats):
                if takes(pattern):
                    exprs.append(pattern), ids.append(i), flags.append(base)
                elif keywords[i]:
                    for word in keywords[i]:
                        exprs.append(re.escape(word).encode()), ids.append(i)
                        flags.append(hyperscan.HS_FLAG_CASELESS)
                else:
                    always.add(i)
        self._db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
        return always

    def _scratch(self):
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hyperscan.Scratch(self._db)
        return scratch

    def rules_in(self, text: str) -> frozenset[int]:
        return self.rules_by_text([text]).get(0, frozenset())

    def rules_by_text(self, texts: Sequence[str], opaque: bool = False) -> dict[int, frozenset[int]]:
        """{index: rules that can match in ``texts[index]``}, for the texts with any.

        The texts are scanned in one call, joined by newlines; a hit belongs to the text it ends in.
        A match within one text is found in the joined data too, at the same end (the patterns'
        text anchors are line anchors here, :func:`hyperscan_pattern`); a match across the joint
        only makes its text run the rules for nothing. ``opaque``: the texts are JSON, whose
        encrypted-reasoning values are not scanned (the redactor masks them too).
        """
        return self.rules_by_data([text.encode("utf-8", "surrogatepass") for text in texts], opaque)

    def rules_by_data(self, datas: Sequence[bytes], opaque: bool = False) -> dict[int, frozenset[int]]:
        """:meth:`rules_by_text` for texts given as UTF-8 bytes."""
        if not datas:
            return {}
        if opaque:
            datas = [mask_opaque(data) for data in datas]
        starts, at = [], 0
        for data in datas:
            starts.append(at)
            at += len(data) + 1
        joined = b"\n".join(datas)
        hits: dict[int, set[int]] = {}

        def found(rule: int, _start: int, end: int, _flags: int, _ctx) -> None:
            index = bisect_right(starts, end - 1) - 1
            (hits.get(index) or hits.setdefault(index, set())).add(rule)

        self._db.scan(joined, match_event_handler=found, scratch=self._scratch())
        for start in base64_runs(joined):  # a run never crosses a newline
            index = bisect_right(starts, start) - 1
            (hits.get(index) or hits.setdefault(index, set())).add(self._b64)
        always = self._always
        return {index: frozenset(rules | always) for index, rules in hits.items()}


# -- the compiled database, cached on disk: compiling takes about a second, loading a millisecond

def _cache_file(hyperscan, patterns, keywords, b64: int) -> Path | None:
    """Where the database of these patterns is cached (``$LOGMINE_CACHE``, else the user's cache
    directory), named by a digest of everything it is compiled from; None when caching is off
    (``LOGMINE_CACHE=off``)."""
    root = cache_dir()
    if root is None:
        return None
    spec = [getattr(hyperscan, "__version__", ""), [list(p) for p in patterns], [list(k) for k in keywords], b64,
            _VERSION, os.uname().machine]
    digest = hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:32]
    return Path(root) / f"hyperscan-{digest}.db"


def _load(hyperscan, path: Path | None):
    """(database, rules that run on every text with a hit) from the cache; None when it has none
    that this machine can run (missing, corrupt, or built for another CPU)."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
        head, _, blob = data.partition(b"\n")
        always = set(json.loads(head))
        db = hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
        hyperscan.Scratch(db)  # a database this CPU cannot run fails here
    except (OSError, ValueError, TypeError, hyperscan.error):
        return None
    return db, always


def _save(hyperscan, path: Path | None, db, always: set[int]) -> None:
    """Write the cache atomically; a cache that cannot be written is no error (the next run compiles)."""
    if path is None:
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".hyperscan-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(json.dumps(sorted(always)).encode() + b"\n" + hyperscan.dumpb(db))
        os.replace(tmp, path)
    except (OSError, hyperscan.error):
        if tmp:
            Path(tmp).unlink(missing_ok=True)


def _compiles(hyperscan, pattern: bytes) -> bool:
    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE
    try:
        hyperscan.Database().compile(expressions=[pattern], ids=[0], elements=1, flags=[flags])
    except hyperscan.error:
        return False
    return True
