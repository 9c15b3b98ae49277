"""Find Codex session files and stream their lines with byte offsets.

Reading is bounded in memory: files are read in chunks, and a line longer than the limit is skipped
(reported, never loaded whole). A last line without its newline is returned as unterminated: a live
session may still be writing it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 22  # 4 MiB
SKIP_NAMES = frozenset({"session_index.jsonl", "catalog.json", "auth.json", "config.json", "requests.log"})


@dataclass(frozen=True, slots=True)
class BadPath:
    """A path that could not be listed or opened (unreadable, broken link, symlink loop)."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class Line:
    offset: int
    data: bytes | None  # None when the line was too long to load
    terminated: bool
    length: int  # bytes, without the newline


def default_inputs(codex_home: str | None = None) -> list[Path]:
    """``$CODEX_HOME`` (else ``~/.codex``): ``sessions/``, ``archived_sessions/`` and ``history.jsonl``."""
    home = Path(codex_home or os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    candidates = [home / "sessions", home / "archived_sessions", home / "history.jsonl"]
    return [p for p in candidates if p.exists()]


def is_session_file(name: str) -> bool:
    """Files inside an input directory that may hold sessions (explicit file arguments always count)."""
    if name in SKIP_NAMES or name.startswith("."):
        return False
    return name.endswith(".jsonl") or (name.endswith(".json") and "rollout" in name)


def discover(inputs: list[Path]) -> tuple[list[Path], list[BadPath]]:
    """Expand files and directories (recursively, following links, loop-safe) into session files."""
    found: dict[str, Path] = {}
    bad: list[BadPath] = []
    for root in inputs:
        if root.is_dir():
            _walk(root, found, bad)
        elif root.is_file() or root.is_symlink() or not root.exists():
            found.setdefault(str(root.absolute()), root.absolute())
    return sorted(found.values()), bad


def _walk(root: Path, found: dict[str, Path], bad: list[BadPath]) -> None:
    seen_dirs: set[tuple[int, int]] = set()

    def onerror(exc: OSError) -> None:
        bad.append(BadPath(str(exc.filename), f"cannot list directory: {exc.strerror}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=True):
        try:
            st = os.stat(dirpath)
        except OSError as exc:
            bad.append(BadPath(dirpath, f"cannot stat directory: {exc.strerror}"))
            dirnames[:] = []
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:  # a symlink loop (or a second link to a directory already read)
            bad.append(BadPath(dirpath, "symlink loop: directory already visited"))
            dirnames[:] = []
            continue
        seen_dirs.add(key)
        dirnames.sort()
        for name in filenames:
            if is_session_file(name):
                path = Path(dirpath, name).absolute()
                found.setdefault(str(path), path)


def iter_lines(handle, start: int, max_line: int) -> Iterator[Line]:
    """Lines of a binary file from byte ``start``; oversize lines come back with ``data=None``."""
    offset = start
    buf = b""
    skipping = 0  # bytes of an oversize line consumed so far
    handle.seek(start)
    while True:
        chunk = handle.read(CHUNK)
        if not chunk:
            break
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                skipping += len(chunk)
                continue
            yield Line(offset, None, True, skipping + nl)
            offset += skipping + nl + 1
            skipping = 0
            chunk = chunk[nl + 1:]
        buf = buf + chunk if buf else chunk
        pos = 0
        while True:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                break
            if nl - pos > max_line:
                yield Line(offset, None, True, nl - pos)
            else:
                yield Line(offset, buf[pos:nl], True, nl - pos)
            offset += nl - pos + 1
            pos = nl + 1
        buf = buf[pos:]
        if len(buf) > max_line:
            skipping, buf = len(buf), b""
    if skipping:
        yield Line(offset, None, False, skipping)
    elif buf:
        yield Line(offset, buf, False, len(buf))
