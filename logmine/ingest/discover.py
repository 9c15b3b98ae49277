"""Find session files: the inputs' files and directories, expanded recursively.

The default inputs are the Codex home and Claude Code's ``projects/`` folder; a source filter
(``codex``, ``claude``, ``all``) keeps the files of one tool, told by their names: Claude Code names
its files ``<session uuid>.jsonl`` and ``agent-<id>.jsonl``, Codex ``rollout-<time>-<uuid>.jsonl``.

Standard library only: ``logmine ingest`` on unchanged input lists its files with this module and
nothing heavier (:mod:`.seen`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

SKIP_NAMES = frozenset({"session_index.jsonl", "catalog.json", "auth.json", "config.json", "requests.log"})
SOURCES = ("codex", "claude", "all")
_CLAUDE_NAME = re.compile(r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|agent-[0-9A-Za-z_-]+)\.jsonl")


@dataclass(frozen=True, slots=True)
class BadPath:
    """A path that could not be listed or opened (unreadable, broken link, symlink loop)."""

    path: str
    reason: str


def default_inputs(codex_home: str | None = None, source: str = "all") -> list[Path]:
    """Codex: ``$CODEX_HOME`` (else ``~/.codex``): ``sessions/``, ``archived_sessions/`` and
    ``history.jsonl``; Claude Code: ``$CLAUDE_CONFIG_DIR/projects`` (else ``~/.claude/projects``).
    Those of ``source`` (``codex``, ``claude`` or ``all``) that exist."""
    candidates = []
    if source != "claude":
        home = Path(codex_home or os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        candidates += [home / "sessions", home / "archived_sessions", home / "history.jsonl"]
    if source != "codex":
        candidates.append(Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "projects")
    return [p for p in candidates if p.exists()]


def is_claude_name(path: str) -> bool:
    """Is this the name Claude Code gives a session file (``<uuid>.jsonl``, ``agent-<id>.jsonl``)?"""
    return _CLAUDE_NAME.fullmatch(path.rsplit("/", 1)[-1]) is not None


def of_source(path: str, source: str) -> bool:
    """Does a file belong to ``source`` (``codex``, ``claude``, ``all``), by its name?"""
    return source == "all" or is_claude_name(path) == (source == "claude")


def is_session_file(name: str) -> bool:
    """Files inside an input directory that may hold sessions (explicit file arguments always count)."""
    if name in SKIP_NAMES or name.startswith("."):
        return False
    name = name.removesuffix(".gz").removesuffix(".zst")
    return name.endswith(".jsonl") or (name.endswith(".json") and "rollout" in name)


def discover(inputs: list[Path], source: str = "all") -> tuple[list[Path], list[BadPath]]:
    """Expand files and directories (recursively, following links, loop-safe) into session files,
    those of ``source`` only (:func:`of_source`)."""
    found: dict[str, Path] = {}
    bad: list[BadPath] = []
    for root in inputs:
        if root.is_dir():
            _walk(root, found, bad)
        elif root.is_file() or root.is_symlink() or not root.exists():
            found.setdefault(str(root.absolute()), root.absolute())
    return sorted(p for key, p in found.items() if of_source(key, source)), bad


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
