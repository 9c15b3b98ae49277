"""An agent's workflow tooling that the author's tree held and the session's commit does not.

Spec-kit (``.specify/``: the scripts ``/speckit.*`` prompts run, their templates, the constitution)
and BMAD (``_bmad/``, ``.bmad-core/``: agents and workflows the prompts read) are installed into a
project by a command, and authors often work with them for days before committing them — or commit
part of them (the templates, not the scripts). A session that ran ``.specify/scripts/bash/setup-plan.sh``
on a commit without it had it untracked: the start rebuilt from the commit alone lacks it, the script
fails at replay, and the task looks like one that began from uncommitted changes although no file of
the project differed.

When the session's commands name a file under such a folder that the start lacks, the folder's files
the start lacks are taken from the repository's own history: the commit nearest in time to the
task's start whose tree holds that file (the author usually commits the tooling a little after the
session). A file the start holds is never replaced. What the scripts make at replay is checked as
any replayed edit is: the session's later patches of those files must apply, or the replay says it
diverged. The project's own files are never taken from another commit.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from logmine.patch import within
from logmine.redact import PLACEHOLDERS, Mask, Redactor, redact_tree
from logmine.segment.records import Action, Listing
from logmine.workspace.archive import epoch, extract_paths, git

__all__ = ["TOOLING", "restore_tooling", "tooling_used"]

#: The folders of agent workflow kits, by name, wherever they sit in the tree.
TOOLING = (".specify", "_bmad", ".bmad-core")

COMMITS_TRIED = 20  # commits holding the file, nearest the task's start first

_NAMED = re.compile(r"(?:^|(?<=[\s'\"=(]))(?P<path>(?:[\w.-]+/)*(?:" + "|".join(re.escape(n) for n in TOOLING)
                    + r")/[\w./-]*)")


def tooling_used(actions: Iterable[Action], root: str, began: Iterable[Listing] = ()) -> tuple[str, ...]:
    """The root-relative paths under the tooling folders (:data:`TOOLING`) that the commands of
    ``actions`` name (``.specify/scripts/bash/setup-plan.sh``), in order, then those the session's
    listings as it began (``began``, :mod:`logmine.segment.listing`) show: a tooling folder listed, or
    a listed directory inside one."""
    found: dict[str, None] = {}
    for listing in began:
        if within(listing.path, root):
            rel = os.path.relpath(listing.path, root)
            if any(part in TOOLING for part in rel.split("/")):
                found[rel] = None
            found.update((os.path.normpath(os.path.join(rel, name)), None) for name in listing.names if name in TOOLING)
    for action in actions:
        if action.kind != "command" or not action.command:
            continue
        where = action.workdir or root
        for match in _NAMED.finditer(action.command):
            full = os.path.normpath(os.path.join(where, match.group("path")))
            if within(full, root) and full != root:
                found[os.path.relpath(full, root)] = None
    return tuple(found)


def restore_tooling(live: Path, commit: str, dest: Path, used: tuple[str, ...], started: datetime | None,
                    mask: Mask = PLACEHOLDERS) -> list[str]:
    """Write into ``dest`` (the start exported from ``commit``) the files of the tooling folders that
    ``used`` names and ``dest`` lacks, from the commit of ``live`` nearest ``started`` that holds the
    used file; returns notes."""
    notes, done = [], set()
    for rel in used:
        folder = _folder(rel)
        if folder in done or (dest / rel).exists() or (dest / rel).is_symlink():
            continue
        done.add(folder)
        found = _nearest(live, commit, rel.rstrip("/"), started)
        if found is None:
            continue
        sha, when = found
        added = _extract_missing(live, sha, folder, dest, mask)
        if added:
            notes.append(f"{added} file(s) of {folder}/ (an agent's workflow tooling the session used, which "
                         f"{commit[:12]} lacks) taken from commit {sha[:12]} ({when:%Y-%m-%d})")
    return notes


def _folder(rel: str) -> str:
    """The tooling folder ``rel`` lies in (``ship/.specify``)."""
    parts = rel.split("/")
    return "/".join(parts[:next(i for i, part in enumerate(parts) if part in TOOLING) + 1])


def _nearest(live: Path, commit: str, rel: str, started: datetime | None) -> tuple[str, datetime] | None:
    """(sha, date) of the commit nearest ``started`` (else the session's ``commit``'s date) whose
    tree holds ``rel``."""
    listing = git(live, "log", "--all", "--format=%H %ct", "--", rel)
    if not listing:
        return None
    when = epoch(started) if started is not None else int(git(live, "show", "-s", "--format=%ct", commit) or 0)
    stamped = [(int(t), sha) for sha, t in (line.split() for line in listing.splitlines())]
    for stamp, sha in sorted(stamped, key=lambda st: abs(st[0] - when))[:COMMITS_TRIED]:
        if git(live, "cat-file", "-e", f"{sha}:{rel}") is not None:
            return sha, datetime.fromtimestamp(stamp, UTC)
    return None


def _extract_missing(live: Path, sha: str, folder: str, dest: Path, mask: Mask) -> int:
    """The files of ``folder`` in commit ``sha`` that ``dest`` lacks, written there redacted as the
    start's other files are; returns how many."""
    added = 0
    with tempfile.TemporaryDirectory(prefix="logmine-tooling-") as scratch:
        where = Path(scratch)
        if extract_paths(live, sha, where, [folder]) is not None:
            return 0
        if mask.key:
            redact_tree(where, Redactor(mask=mask))
        for source in sorted((where / folder).rglob("*")):
            target = dest / source.relative_to(where)
            if source.is_file() and not source.is_symlink() and not target.exists() and not target.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
                added += 1
    return added
