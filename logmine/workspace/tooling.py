"""An agent's workflow tooling that the author's tree held and the session's commit does not.

Spec-kit (``.specify/``: the scripts ``/speckit.*`` prompts run, their templates, the constitution)
and BMAD (``_bmad/``, ``.bmad-core/``: agents and workflows the prompts read) are installed into a
project by a command, and authors often work with them for days before committing them, or never
commit them at all. A session that ran ``.specify/scripts/bash/setup-plan.sh`` on a commit without
``.specify/`` had them untracked: the start rebuilt from the commit alone lacks them, the script
fails at replay, and the task looks like one that began from uncommitted changes although no file of
the project differed.

When the session's commands name such a folder and the start lacks it, the folder is taken from the
repository's own history: the commit nearest in time to the task's start whose tree holds it (the
author usually commits the tooling a little after the session). What it makes at replay is checked
as any replayed edit is: the session's later patches of those files must apply, or the replay says it
diverged. The project's own files are never taken from another commit.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from logmine.redact import PLACEHOLDERS, Mask, Redactor, redact_tree
from logmine.segment.records import Action
from logmine.workspace.archive import extract_paths, git

__all__ = ["TOOLING", "restore_tooling", "tooling_used"]

#: The folders of agent workflow kits, by name, wherever they sit in the tree.
TOOLING = (".specify", "_bmad", ".bmad-core")

COMMITS_TRIED = 20  # commits holding the folder, nearest the task's start first

_NAMED = {name: re.compile(rf"(?:^|[\s'\"=/(]){re.escape(name)}/") for name in TOOLING}


def tooling_used(actions: Iterable[Action]) -> tuple[str, ...]:
    """The tooling folder names that the commands of ``actions`` name (``.specify``), in
    :data:`TOOLING`'s order."""
    commands = [a.command for a in actions if a.kind == "command" and a.command]
    return tuple(name for name, pattern in _NAMED.items() if any(pattern.search(c) for c in commands))


def restore_tooling(live: Path, commit: str, dest: Path, names: tuple[str, ...], started: datetime | None,
                    mask: Mask = PLACEHOLDERS) -> list[str]:
    """Write into ``dest`` (the start exported from ``commit``) the tooling folders named ``names`` that
    it lacks, from the commit of ``live`` nearest ``started`` that holds them; returns notes."""
    notes = []
    for name in names:
        if _folders(dest, name):
            continue
        found = _nearest(live, commit, name, started)
        if found is None:
            continue
        sha, when, folders = found
        _extract_redacted(live, sha, folders, dest, mask)
        notes.append(f"{', '.join(f + '/' for f in folders[:3])} (an agent's workflow tooling the session used, "
                     f"which {commit[:12]} lacks) taken from commit {sha[:12]} ({when:%Y-%m-%d})")
    return notes


def _folders(tree: Path, name: str) -> list[str]:
    """The folders named ``name`` in the exported ``tree``, at most three levels down."""
    return [str(p.relative_to(tree)) for depth in range(3)
            for p in tree.glob("/".join(["*"] * depth + [name])) if p.is_dir()]


def _nearest(live: Path, commit: str, name: str, started: datetime | None) -> tuple[str, datetime, list[str]] | None:
    """(sha, date, folders named ``name`` in its tree) of the commit nearest ``started`` (else the
    session's ``commit``'s date) whose tree holds such a folder."""
    listing = git(live, "log", "--all", "--format=%H %ct", "--", f":(glob)**/{name}/**")
    if not listing:
        return None
    if started is not None:
        when = int((started if started.tzinfo else started.replace(tzinfo=UTC)).timestamp())
    else:
        when = int(git(live, "show", "-s", "--format=%ct", commit) or 0)
    stamped = [(int(t), sha) for sha, t in (line.split() for line in listing.splitlines())]
    for stamp, sha in sorted(stamped, key=lambda st: abs(st[0] - when))[:COMMITS_TRIED]:
        dirs = git(live, "ls-tree", "-r", "-d", "--name-only", sha) or ""
        folders = [d for d in dirs.splitlines() if d.rsplit("/", 1)[-1] == name and d.count("/") < 3]
        if folders:
            return sha, datetime.fromtimestamp(stamp, UTC), folders
    return None


def _extract_redacted(live: Path, sha: str, folders: list[str], dest: Path, mask: Mask) -> None:
    """``folders`` of commit ``sha`` into ``dest``, redacted as the start's other files are."""
    with tempfile.TemporaryDirectory(prefix="logmine-tooling-") as scratch:
        where = Path(scratch)
        if extract_paths(live, sha, where, folders) is not None:
            return
        if mask.key:
            redact_tree(where, Redactor(mask=mask))
        for folder in folders:
            if (where / folder).is_dir() and not (dest / folder).exists():
                (dest / folder).parent.mkdir(parents=True, exist_ok=True)
                shutil.move(where / folder, dest / folder)
