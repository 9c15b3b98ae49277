"""Files written into a rebuilt start as the session's own reads showed them.

The commit a session recorded is not always the tree the author had: uncommitted work left a file
older, or missing. Where the session's reads showed such a file whole before anything changed it
(:mod:`logmine.segment.shown`), that text is the author's, and :func:`write_shown` puts it into the
rebuilt tree — those of the session's start before the earlier tasks' work is redone, those of the
task's start after. A file whose text already matches (compared as the store holds text: redacted)
is left as the commit has it, byte for byte; so is one outside the repository, an agent's own file
(``.codex/``), a credential file, a file the repository ignores (``node_modules/``, ``.env``, build
output: never part of a start), a link, or a file that is not UTF-8.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from logmine.patch import within
from logmine.redact import Mask, Redactor
from logmine.redact.paths import credential_path
from logmine.segment.records import Shown

__all__ = ["agent_home", "shown_note", "write_shown"]


def agent_home(path: str) -> bool:
    """An agent's or the OS's own file in the work tree (``.codex/``, ``.claude/``, ``.DS_Store``):
    never the project's."""
    first = path.split("/", 1)[0]
    return first in (".codex", ".claude", ".agent", ".cursor", ".vscode", ".idea") or path.endswith(".DS_Store")


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


def _ignored(live: Path | None, paths: list[str]) -> set[str]:
    """Those of ``paths`` (relative to the repository's root) that the repository ``live`` ignores."""
    if live is None or not paths:
        return set()
    done = subprocess.run(["git", "-C", str(live), "check-ignore", "--no-index", "--stdin", "-z"],
                          input="\0".join(paths) + "\0", capture_output=True, text=True)
    return set(done.stdout.split("\0")) - {""} if done.returncode in (0, 1) else set()


def write_shown(shown: tuple[Shown, ...], tree: Path, root: str, *, at_task: bool, mask: Mask,
                live: Path | None = None) -> list[str]:
    """Write the files of ``shown`` (those ``at_task``, or those of the session's start) that lie in
    ``root`` and whose text ``tree`` does not hold; returns their root-relative paths. ``live``: the
    repository, whose ignore rules leave files out."""
    redactor = Redactor(mask=mask)
    wanted: dict[str, str] = {}
    for item in shown:
        rel = os.path.relpath(item.path, root) if item.at_task == at_task and within(item.path, root) else ".."
        if rel.startswith("..") or rel == "." or agent_home(rel) or credential_path(rel):
            continue
        target = tree / rel
        if not any(p.is_symlink() or p.is_file() for p in target.parents if tree in p.parents):
            wanted[rel] = item.text
    ignored = _ignored(live, list(wanted))
    written = []
    for rel, text in wanted.items():
        if rel not in ignored and _differs(tree / rel, text, redactor):
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_text(text)
            written.append(rel)
    return written


def shown_note(written: list[str], at_task: bool) -> list[str]:
    when = "the task" if at_task else "the session"
    return [f"{len(written)} file(s) differed from the commit as {when} began, written as the session's reads "
            f"showed them: " + ", ".join(written[:3])] if written else []
