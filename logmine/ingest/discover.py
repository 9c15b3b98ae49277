"""Find Codex session files: the inputs' files and directories, expanded recursively.

Standard library only: ``logmine ingest`` on unchanged input lists its files with this module and
nothing heavier (:mod:`.seen`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SKIP_NAMES = frozenset({"session_index.jsonl", "catalog.json", "auth.json", "config.json", "requests.log"})


@dataclass(frozen=True, slots=True)
class BadPath:
    """A path that could not be listed or opened (unreadable, broken link, symlink loop)."""

    path: str
    reason: str


def default_inputs(codex_home: str | None = None) -> list[Path]:
    """``$CODEX_HOME`` (else ``~/.codex``): ``sessions/``, ``archived_sessions/`` and ``history.jsonl``."""
    home = Path(codex_home or os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    candidates = [home / "sessions", home / "archived_sessions", home / "history.jsonl"]
    return [p for p in candidates if p.exists()]


def is_session_file(name: str) -> bool:
    """Files inside an input directory that may hold sessions (explicit file arguments always count)."""
    if name in SKIP_NAMES or name.startswith("."):
        return False
    name = name.removesuffix(".gz").removesuffix(".zst")
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
