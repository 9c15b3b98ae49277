"""Secrets inside base64: decode a run long enough to hold a key, scan it, redact the whole run.

A Kubernetes secret holds its TLS key as ``tls.key: LS0tLS1CRUdJTi…`` (a PEM, base64-encoded);
a CI log may print a service account's JSON the same way. A *block* is one base64 run of 64 or
more characters, or several separated by newlines (raw or JSON-escaped: a PEM wrapped at 76
columns). A block whose decoding is mostly printable text is scanned with the same rules; if it
holds a secret, the block becomes one placeholder of that secret's kind.

A block cut at an arbitrary character (the tail of a long output kept as an excerpt) is decoded
from each of the four alignments until one gives text: only the right one does.
"""

from __future__ import annotations

import binascii
import re
from collections import Counter
from collections.abc import Callable

from logmine.redact.prefilter import long_runs

_RUN = r"[A-Za-z0-9+/_-]{16,}={0,2}"
_SEP = r"(?:\\+[nr]|\r?\n)+"
_BLOCK = re.compile(r"(?:(?<![A-Za-z0-9+/_\\-])|(?<=\\[nrt]))(?=[A-Za-z0-9+/_-]{64})" + _RUN
                    + rf"(?:{_SEP}(?:{_RUN}|[A-Za-z0-9+/_-]{{2,15}}={{1,2}}))*", re.ASCII)
_SEPARATORS = re.compile(_SEP)
_FERNET = "gAAAAA"  # encrypted reasoning: ciphertext, never a readable secret
_PRINTABLE = bytes([*range(32, 127), 9, 10, 13])


def decode(block: str, skip: int = 0) -> str | None:
    """The text a base64 block encodes (standard or URL-safe alphabet), its first ``skip``
    characters left out, or None when it decodes to binary (an image, ciphertext, a hash, or text
    decoded out of alignment) rather than text."""
    data = _SEPARATORS.sub("", block).rstrip("=").replace("-", "+").replace("_", "/")[skip:]
    rest = len(data) % 4  # the last quantum, its padding stripped: 2 or 3 characters still hold bytes
    data = data[:-1] if rest == 1 else data + "=" * (-rest % 4)
    try:
        raw = binascii.a2b_base64(data)
    except binascii.Error:
        return None
    sample = raw[:256]
    if not sample or len(sample) - len(sample.translate(None, _PRINTABLE)) < 0.95 * len(sample):
        return None
    return raw.decode("utf-8", "replace")


def redact_base64(text: str, counts: Counter, kind_of: Callable[[str], str | None],
                  replace: Callable[[str, list, Counter], str], masked: Callable[[str], bool]) -> str:
    """``text`` with each base64 block whose decoding holds a secret replaced (``replace``: the
    redactor's masking of spans) as one secret of that kind; ``kind_of(decoded)`` names the first
    secret in a decoded text, else None; ``masked(block)``: the block is a replacement already."""
    finds = []
    for m in _blocks(text):
        if m.group().startswith(_FERNET) or masked(m.group()):
            continue
        decoded = next((d for skip in range(4) if (d := decode(m.group(), skip)) is not None), None)
        if decoded is not None and (kind := kind_of(decoded)):
            finds.append((m.start(), m.end(), kind, "base64"))
    return replace(text, finds, counts)


def _blocks(text: str):
    """``_BLOCK.finditer(text)``, with the block regex tried only where a block can start: at the
    start of a run of 64 or more base64 characters (not just after a backslash), or one character
    into it when the run follows a ``\\n``/``\\r``/``\\t`` escape. Trying it at every character
    of a long line costs more than the rest of the base64 check."""
    end = 0
    for first, last in _long_runs(text):
        if first and text[first - 1] == "\\":
            if text[first] not in "nrt":
                continue
            first += 1
        if first >= end and last - first >= 64 and (m := _BLOCK.match(text, first)):
            yield m
            end = m.end()


def _long_runs(text: str):
    """(start, end) of the maximal base64 runs of 64 characters or more, found in the text's UTF-8
    bytes; a run is ASCII, so only its start needs converting from bytes to characters."""
    if text.isascii():
        yield from long_runs(text.encode("ascii"))
        return
    data = text.encode("utf-8", "surrogatepass")
    byte, char = 0, 0
    for start, end in long_runs(data):
        char += len(data[byte:start].decode("utf-8", "surrogatepass"))
        byte = start
        yield char, char + end - start
