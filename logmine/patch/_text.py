"""Rust's string primitives, as Codex's apply-patch uses them, and its line-matching ladder.

Codex trims with Rust's ``str::trim`` (Unicode ``White_Space``) and splits with ``str::lines``.
Python's ``str.strip()`` and ``str.splitlines()`` differ at the edges (``\\x1c``–``\\x1f`` count as
space in Python; ``splitlines`` also breaks at ``\\x0b``, ``\\x0c``, ``\\u2028``…), so matching
Codex byte for byte needs these small re-implementations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

# Unicode White_Space, which is what Rust's char::is_whitespace tests.
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def trim(s: str) -> str:
    """Rust ``str::trim``."""
    return s.strip(RUST_WHITESPACE)


def trim_end(s: str) -> str:
    """Rust ``str::trim_end``."""
    return s.rstrip(RUST_WHITESPACE)


def rust_lines(s: str) -> list[str]:
    """Rust ``str::lines``: split at ``\\n``, drop one ``\\r`` before it, no empty last line."""
    if not s:
        return []
    parts = s.split("\n")
    if parts[-1] == "":
        parts.pop()
    if "\r" not in s:
        return parts
    return [p[:-1] if p.endswith("\r") else p for p in parts]


# Typographic punctuation a model tends to write as ASCII (seek_sequence.rs's last resort).
_PUNCTUATION_TO_ASCII = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)


def _normalise(s: str) -> str:
    return trim(s).translate(_PUNCTUATION_TO_ASCII)


def _identity(s: str) -> str:
    return s


# Codex's fuzz ladder, strictest first: the first level with any match wins.
_LADDER: tuple[Callable[[str], str], ...] = (_identity, trim_end, trim, _normalise)


def seek_sequence(lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool) -> int | None:
    """Index of the first run of ``pattern`` in ``lines`` at or after ``start``, else None.

    Each level of the ladder (exact, trailing whitespace ignored, both ends trimmed, then typographic
    punctuation normalised) scans the whole range before the next, looser one is tried. With ``eof``
    the only start tried is the one that puts ``pattern`` at the very end of ``lines`` -- ``start``
    is ignored, and there is no fall-back to an earlier position (Codex's comment promises one; its
    code has none, and this follows the code). An empty pattern matches at ``start``.
    """
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    n = len(pattern)
    first = len(lines) - n if eof else start
    last = len(lines) - n
    for canon in _LADDER:
        wanted = [canon(p) for p in pattern]
        seen = [canon(line) for line in lines]
        for i in range(first, last + 1):
            if seen[i] == wanted[0] and seen[i : i + n] == wanted:
                return i
    return None


# logmine's redaction placeholder (``logmine.redact``; spelled out here because this module also runs
# alone inside sandboxes): a patch read from a redacted log may hold it where the file holds a secret
REDACTED_MARK = "[REDACTED:"
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def redacted_pattern(line: str) -> re.Pattern[str] | None:
    """A pattern line holding redaction placeholders as a regex that any text matches in their place
    (compared trimmed, as the ladder's third level does); None when the line holds none."""
    if REDACTED_MARK not in line:
        return None
    parts = _PLACEHOLDER.split(trim(line))
    if len(parts) == 1:
        return None
    return re.compile(".+?".join(re.escape(p) for p in parts), re.S)


def seek_redacted(lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool) -> int | None:
    """:func:`seek_sequence`'s last resort, logmine's own: lines holding redaction placeholders match
    any text in their place, the others as trimmed text. None when no line of ``pattern`` is redacted."""
    regexes = [redacted_pattern(p) for p in pattern]
    if not any(regexes) or len(pattern) > len(lines):
        return None
    n = len(pattern)
    wanted = [trim(p) for p in pattern]
    for i in range(len(lines) - n if eof else start, len(lines) - n + 1):
        if all((rx.fullmatch(trim(lines[i + k])) if rx else trim(lines[i + k]) == wanted[k])
               for k, rx in enumerate(regexes)):
            return i
    return None
