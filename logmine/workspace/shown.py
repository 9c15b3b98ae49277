"""Files written into a rebuilt start as the session's own reads showed them.

The commit a session recorded is not always the tree the author had: uncommitted work left a file
older, or missing. Where the session's reads showed such a file whole before anything changed it
(:mod:`logmine.segment.shown`), that text is the author's, and :class:`ShownFiles` puts it into the
rebuilt tree: the files of the session's start before the earlier tasks' work is redone, those known
before one of its steps just before that step (a command that could not be replayed here, such as
``npx expo install`` without a network, left the file otherwise), those of the task's start after.
A file a ``git diff`` showed is its hunks applied to the start blob the diff names, kept only when
the result has the blob id the diff names for the work tree's file. A file whose text already
matches (compared as the store holds text: redacted) is left as the commit has it, byte for byte; so is one outside the repository, an agent's own file
(``.codex/``), a credential file, a file the repository ignores (``node_modules/``, ``.env``, build
output: never part of a start), a link, or a file that is not UTF-8.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from logmine.patch import within
from logmine.redact import Mask, Redactor
from logmine.redact.paths import credential_path
from logmine.segment.gitdiff import apply_hunks, blob_id
from logmine.segment.records import Shown
from logmine.workspace.edits import agent_home

__all__ = ["ShownFiles", "ignored", "write_shown"]


def _differs(held: Path, text: str, redactor: Redactor) -> bool:
    """Does ``held`` (a regular file, or none) hold other text than ``text``?"""
    if held.is_symlink() or (held.exists() and not held.is_file()):
        return False
    if not held.exists():
        return True
    try:
        now = held.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    return text not in (now, redactor.redact_text(now)) and text.rstrip("\n") != now.rstrip("\n")


def ignored(live: Path | None, paths: list[str]) -> set[str]:
    """Those of ``paths`` (relative to the repository's root) that the repository ``live`` ignores."""
    if live is None or not paths:
        return set()
    done = subprocess.run(["git", "-C", str(live), "check-ignore", "--no-index", "--stdin", "-z"],
                          input="\0".join(paths) + "\0", capture_output=True, text=True)
    return set(done.stdout.split("\0")) - {""} if done.returncode in (0, 1) else set()


def _diffed(item: Shown, live: Path | None) -> str | None:
    """The text a ``git diff`` showed: its hunks applied to blob ``base`` of the repository ``live``,
    kept only when the result is blob ``after`` (:mod:`logmine.segment.gitdiff`)."""
    if live is None:
        return None
    if set(item.base) == {"0"}:
        base = b""
    else:
        done = subprocess.run(["git", "-C", str(live), "cat-file", "blob", item.base], capture_output=True)
        if done.returncode != 0:
            return None
        base = done.stdout
    try:
        text = apply_hunks(base.decode(), item.text)
    except UnicodeDecodeError:
        return None
    return text if text is not None and blob_id(text.encode()).startswith(item.after) else None


def write_shown(shown: Iterable[Shown], tree: Path, root: str, *, mask: Mask, live: Path | None = None) -> list[str]:
    """Write the files of ``shown`` that lie in ``root`` and whose text ``tree`` does not hold;
    returns their root-relative paths. ``live``: the repository, whose ignore rules leave files out."""
    redactor = Redactor(mask=mask)
    wanted: dict[str, str] = {}
    for item in sorted(shown, key=lambda s: not s.base):  # a read of a file wins over a diff of it
        if item.base:
            rel = os.path.normpath(item.path)
        else:
            rel = os.path.relpath(item.path, root) if within(item.path, root) else ".."
        if rel.startswith("..") or rel == "." or agent_home(rel) or credential_path(rel):
            continue
        target = tree / rel
        if any(p.is_symlink() or p.is_file() for p in target.parents if tree in p.parents):
            continue
        text = _diffed(item, live) if item.base else item.text
        if text is not None:
            wanted[rel] = redactor.redact_text(text) if item.base and mask.key else text
    left_out = ignored(live, list(wanted))
    written = []
    for rel, text in wanted.items():
        if rel not in left_out and _differs(tree / rel, text, redactor):
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_text(text)
            written.append(rel)
    return written


_WHEN = {"start": "differed from the commit as the session began", "replay": "differed during the earlier "
         "tasks' replay", "task": "differed as the task began"}


class ShownFiles:
    """A task's files as the session's reads showed them (:func:`logmine.segment.shown.shown_for_task`),
    written into a tree as its rebuild reaches each point: :meth:`write` before the step ``before``
    names (-1: right after the export), :meth:`write_after` once the earlier work is redone."""

    def __init__(self, shown: tuple[Shown, ...], root: str, mask: Mask, live: Path | None):
        self.shown, self.root, self.mask, self.live = shown, root, mask, live
        self.written: dict[str, list[str]] = {"start": [], "replay": [], "task": []}

    def write(self, before: int, tree: Path) -> None:
        items = [s for s in self.shown if s.before == before]
        self.written["start" if before == -1 else "replay"] += write_shown(items, tree, self.root, mask=self.mask,
                                                                           live=self.live)

    def write_after(self, last: int, tree: Path) -> None:
        """Write the files as the task began: those known after ``last``, the earlier work's last step."""
        items = [s for s in self.shown if s.before > last]
        self.written["task"] += write_shown(items, tree, self.root, mask=self.mask, live=self.live)

    def forget(self) -> None:
        """The tree was exported again (a later commit): what was written is gone."""
        self.written = {when: [] for when in self.written}

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for paths in self.written.values() for p in paths))

    def notes(self) -> list[str]:
        return [f"{len(set(paths))} file(s) {_WHEN[when]}, written as the session's reads showed them: "
                + ", ".join(list(dict.fromkeys(paths))[:3]) for when, paths in self.written.items() if paths]
