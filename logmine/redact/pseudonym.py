"""What a secret is replaced with: a consistent, format-preserving pseudonym, or a typed placeholder.

A :class:`Mask` turns (secret, kind) into its replacement. With a key (``style="pseudonym"``, the
default of a store) the replacement is derived from the secret with HMAC-SHA256 under that key:

- **consistent**: the same secret gets the same replacement wherever it occurs (a prompt, a shell
  command, a patch, a test's output, a replayed workspace, an export), so a password in a test and
  the same password in the server code stay equal, and replays stay coherent;
- **format-preserving**: same length; every ASCII letter and digit is replaced by one of its class
  (upper, lower, digit; a hex secret stays hex); everything else stays (``-``, ``_``, ``.``, ``/``,
  ``+``, ``=``, escapes such as ``\\n``, a PEM block's armour lines), and so does a well-known
  prefix (``AKIA``, ``ghp_``, ``sk-proj-``, ``AIza``, ``xoxb-``, ``eyJ``): a JWT stays three
  base64url parts, a PEM stays a PEM block;
- **recognisable, not reversible**: the last characters of a pseudonym are a keyed tag of the
  others (:meth:`Mask.recognises`), so redacting text that already holds pseudonyms leaves them as
  they are (idempotent re-ingest, a second pass at the store's gate), while nobody without the key
  can tell a pseudonym from a secret, nor get the secret back.

Without a key (``style="placeholder"``) a secret becomes ``[REDACTED:<kind>]``, as before. A value
with fewer than :data:`MIN_MAPPED` letters and digits (``!@#$``) becomes a placeholder in either
style: too little is left to hide it in.

The key of a store lives in ``STORE/redaction.json`` (mode 0600), made at its first ingest, never
exported (:func:`store_mask`).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import string
from dataclasses import dataclass
from pathlib import Path

from logmine.errors import LogmineError

PLACEHOLDER = "[REDACTED:{}]"
MARK = "[REDACTED:"
STYLES = ("pseudonym", "placeholder")
KEY_FILE = "redaction.json"
MIN_MAPPED = 4  # letters and digits a pseudonym needs (shorter values become placeholders)
TAG = 4  # characters of the tag at most (half the letters and digits of a short value)
_ATTEMPTS = 64  # draws of a pseudonym that must read as it was made (nearly always the first)

# Kept as they are: a well-known prefix at the start, PEM armour lines, escape sequences (``\n``,
# ``\\n``, ``\u00e9``), ``eyJ`` opening each part of a JWT, and every character that is not an ASCII
# letter or digit.
_PREFIX = (r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9]|AIza|gh[pousr]_|github_pat_|glpat-|gl[a-z]{2,4}-"
           r"|sk-(?:proj|svcacct|admin|ant-[a-z]{3,6}\d\d)-|sk-|[rsp]k_(?:live|test)_|whsec_"
           r"|xox[abposre]-|xapp-|npm_|hf_|SG\.|shp(?:at|ss|ca|pa)_|dop_v1_|pypi-|AGE-SECRET-KEY-)")
_KEPT = re.compile(rf"\A{_PREFIX}|-----[A-Z0-9 _-]*-----|\\+(?:u[0-9a-fA-F]{{4}}|[A-Za-z])"
                   r"|(?:(?<=\A)|(?<=\.))eyJ|[^A-Za-z0-9]")
_HEX_LOWER, _HEX_UPPER = re.compile(r"[0-9a-f]+"), re.compile(r"[0-9A-F]+")


class RedactionKeyError(LogmineError):
    """A store's redaction key file cannot be read or made."""


def _alphabets(mapped: str) -> dict[str, str]:
    """The replacement alphabet of each class: hex letters for a hex secret, else the whole class."""
    if mapped.isdigit() or not (_HEX_LOWER.fullmatch(mapped) or _HEX_UPPER.fullmatch(mapped)):
        return {"d": string.digits, "l": string.ascii_lowercase, "u": string.ascii_uppercase}
    return {"d": string.digits, "l": "abcdef", "u": "ABCDEF"}


def _classes(chars: str) -> str:
    return "".join("d" if c.isdigit() else "l" if c.islower() else "u" for c in chars)


def _mapped(value: str) -> list[int]:
    """The positions of ``value`` a pseudonym replaces: its letters and digits outside kept runs."""
    kept = bytearray(len(value))
    for m in _KEPT.finditer(value):
        kept[m.start():m.end()] = b"\1" * (m.end() - m.start())
    return [i for i, k in enumerate(kept) if not k]


@dataclass(frozen=True)
class Mask:
    """Makes a secret's replacement: a pseudonym under ``key``, else a placeholder. Picklable."""

    key: bytes | None = None

    @property
    def style(self) -> str:
        return "pseudonym" if self.key else "placeholder"

    def __call__(self, secret: str, kind: str) -> str:
        if self.key is None:
            return PLACEHOLDER.format(kind)
        return _pseudonym(self.key, secret) or PLACEHOLDER.format(kind)

    def recognises(self, value: str) -> bool:
        """Whether ``value`` is already a replacement: holds a placeholder, or is a pseudonym made
        with this key (its tag checks out)."""
        if MARK in value:
            return True
        return bool(self.key) and _recognised(self.key, value)


def _stream(key: bytes, label: bytes, data: str, n: int) -> bytes:
    seed = hmac.new(key, label + data.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    return hashlib.shake_256(seed).digest(n)


def _fill(chars: str, stream: bytes, alphabets: dict[str, str]) -> str:
    return "".join((a := alphabets[c])[b % len(a)] for c, b in zip(_classes(chars), stream))


def _tag(key: bytes, body: str, like: str, alphabets: dict[str, str]) -> str:
    return _fill(like, _stream(key, b"logmine-tag\0", body, len(like)), alphabets)


@functools.lru_cache(maxsize=8192)
def _pseudonym(key: bytes, secret: str) -> str | None:
    at = _mapped(secret)
    if len(at) < MIN_MAPPED:
        return None
    mapped = "".join(secret[i] for i in at)
    alphabets = _alphabets(mapped)
    t = min(TAG, len(at) // 2)
    for attempt in range(_ATTEMPTS):
        # derived from the letters and digits alone: a PEM block with raw or escaped newlines is one secret
        label = b"logmine-pseudonym\0" + (bytes([attempt]) if attempt else b"")
        body = _fill(mapped[:-t], _stream(key, label, mapped, len(at) - t), alphabets)
        new = body + _tag(key, body, mapped[-t:], alphabets)
        out = list(secret)
        for i, c in zip(at, new):
            out[i] = c
        made = "".join(out)
        # a pseudonym that reads differently (its start became a known prefix such as ``glxyz-``, its
        # letters all hex) would not be recognised: draw again, deterministically
        if _mapped(made) == at and _alphabets(new) == alphabets:
            return made
    return None


@functools.lru_cache(maxsize=8192)
def _recognised(key: bytes, value: str) -> bool:
    at = _mapped(value)
    if len(at) < MIN_MAPPED:
        return False
    mapped = "".join(value[i] for i in at)
    t = min(TAG, len(at) // 2)
    return hmac.compare_digest(_tag(key, mapped[:-t], mapped[-t:], _alphabets(mapped)), mapped[-t:])


PLACEHOLDERS = Mask()


def store_mask(root: Path, style: str | None = None, create: bool = False) -> Mask:
    """The mask of the store at ``root``, from ``root/redaction.json``.

    ``create``: make the file when there is none (a new key, ``style`` or ``pseudonym``); ``style``
    given: record it as the store's style (``placeholder`` keeps the key, unused, so that switching
    back gives the same pseudonyms). A store without the file (made before pseudonyms, or opened
    read-only) masks with placeholders."""
    path = Path(root) / KEY_FILE
    try:
        data = json.loads(path.read_text()) if path.exists() else None
    except (OSError, ValueError) as exc:
        raise RedactionKeyError(f"cannot read the redaction key {path}: {exc}",
                        hint="restore it from a backup, or remove it to start a new key (docs/redaction.md)") from exc
    if style is not None and style not in STYLES:
        raise RedactionKeyError(f"unknown redaction style {style!r}", hint=f"one of: {', '.join(STYLES)}")
    if data is None and not create:
        return PLACEHOLDERS
    if data is None or (style is not None and data.get("style") != style):
        data = {"style": style or "pseudonym", "key": (data or {}).get("key") or secrets.token_hex(32)}
        _write_private(path, json.dumps(data, indent=2) + "\n")
    if data.get("style") != "pseudonym":
        return PLACEHOLDERS
    try:
        return Mask(bytes.fromhex(data["key"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise RedactionKeyError(f"the redaction key in {path} is malformed", hint="docs/redaction.md: rotating the key") from exc


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
