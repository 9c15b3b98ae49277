"""A rebuilt start checked against what the session's own ``git status`` showed as it began.

A tracked file that ``git status`` listed as changed before the session changed anything
(:mod:`logmine.segment.status`) held the author's uncommitted work. A start rebuilt from the
session's commit has that file as the commit has it, unless what the log shows made it the author's:
the session's whole reads or a ``git diff`` (written into the start), the edits of earlier sessions
at the same commit (the chain), or earlier sessions' patches of untracked files. Any other such file
is a start known to differ, :class:`~logmine.workspace.edits.StartDiffered`, even when no patch of the
task fails on it: the task must never be validated on it.

Documentation (``.md``, ``.rst``, ``.adoc``; BMAD's planning output ``_bmad-output/``), an agent's
own files (``.codex/``) and credential files (``.env``, which no start ever holds) are no code a test
runs: they are noted, not refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from logmine.patch import PatchError, rooted, within
from logmine.redact.paths import credential_path
from logmine.segment.records import Action, Listed
from logmine.workspace.edits import StartDiffered, agent_home

__all__ = ["check_listed", "touched_by"]

_DOCS = (".md", ".markdown", ".rst", ".adoc")
_PLANNING = frozenset({"_bmad-output"})  # folders an agent workflow writes its planning documents to


def _document(rel: str) -> bool:
    """Documentation, or a planning artifact of an agent's workflow (BMAD's ``_bmad-output/``: PRDs,
    stories, ``sprint-status.yaml``), which no test runs."""
    return rel.lower().endswith(_DOCS) or any(part in _PLANNING for part in rel.split("/")[:-1])


def touched_by(actions: Iterable[Action], root: str) -> set[str]:
    """The root-relative paths that ``actions`` patch, and the base names their commands name (a
    command may have changed a file it names)."""
    paths: set[str] = set()
    for action in actions:
        if action.kind == "patch":
            try:
                ops = rooted(action.ops, action.workdir or root, root)
            except PatchError:  # a path outside the repository: no file of the start
                continue
            paths.update(path for op in ops for path in (op.path, op.move_to) if path)
        elif action.command:
            paths.update(word.rsplit("/", 1)[-1] for word in action.command.split() if "." in word)
    return paths


def check_listed(listed: Sequence[Listed], root: str, explained: set[str]) -> list[str]:
    """Raise :class:`StartDiffered` for the first code file of ``listed`` that the rebuilt start does not
    hold as the author had it (not in ``explained``: root-relative paths, or base names a command
    named); return a note on the documentation, agent and credential files left as the commit has
    them."""
    left: list[str] = []
    for item in listed:
        if item.from_top:
            rel = item.path
        elif within(item.path, root):
            rel = os.path.relpath(item.path, root)
        else:
            continue
        if rel in explained or os.path.basename(rel) in explained:
            continue
        if _document(rel) or agent_home(rel) or credential_path(rel):
            left.append(rel)
            continue
        raise StartDiffered(rel, listed_at=item.seq)
    return [f"{len(left)} documentation, agent or credential file(s) that `git status` showed changed as the "
            f"session began are as the commit has them: " + ", ".join(left[:3])] if left else []
