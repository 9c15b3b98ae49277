"""A start from nothing: a session that ran before the repository's first commit.

Many projects begin with an agent: the first sessions run in a new directory, and ``git init`` and
the first commit come hours or days later. No commit holds such a session's start, but the session
may show it: an ``ls`` of its directory before it changed anything (:mod:`logmine.segment.listing`)
lists everything the directory held. The start is then rebuilt from nothing: an empty tree, the
agent's workflow tooling the commands use taken from the repository's history (:mod:`.tooling`),
the files the session's reads showed whole, and the edits of the earlier sessions in the same
directory that recorded no commit either (the chain, :mod:`logmine.segment.chain`).

Every name the listing showed must then be in the rebuilt tree (:func:`check_began`), else the start
is known to differ (:class:`~logmine.workspace.edits.StartDiffered`) and the task is never validated
on it; the task's own patches check the files' contents as for any start. A session that never
listed its directory before changing it gives no evidence: its tasks stay without a start.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from logmine.patch import within
from logmine.redact.paths import credential_path
from logmine.segment.records import Listing
from logmine.workspace.archive import git
from logmine.workspace.edits import NotRebuilt, StartDiffered, agent_home
from logmine.workspace.shown import ignored

__all__ = ["EMPTY", "check_began", "first_commit", "started_empty"]

EMPTY = "an empty directory"  # what a start from nothing differed from, in a reason
# Names a listing shows that are no part of a project's start: the repository itself, an OS's and an
# editor's own files.
_NOT_PROJECT = frozenset({".git", ".DS_Store", "Thumbs.db", ".idea", ".vscode"})


def first_commit(live: Path) -> tuple[str, datetime] | None:
    """(sha, date) of the oldest commit of ``live`` on any ref, else None."""
    listing = git(live, "log", "--all", "--format=%ct %H")
    stamped = sorted((int(t), sha) for t, sha in (line.split() for line in (listing or "").splitlines()))
    return (stamped[0][1], datetime.fromtimestamp(stamped[0][0], UTC)) if stamped else None


def _at_root(began: tuple[Listing, ...], root: str) -> Listing | None:
    return next((listing for listing in began if os.path.normpath(listing.path) == os.path.normpath(root)), None)


def started_empty(began: tuple[Listing, ...], root: str, first: str, started: str | None, live: Path) -> str:
    """The note for a start rebuilt from nothing (``first``: the repository's first commit, made after
    the session ``started``); :class:`NotRebuilt` when no listing of ``root`` shows what it held."""
    listing = _at_root(began, root)
    if listing is None:
        raise NotRebuilt(f"no commit recorded for the session, and the repository at {live} has none made before it "
                         f"began ({started}), nor did the session list its directory before changing anything (a "
                         "start from nothing needs that)")
    held = ", ".join(listing.names[:4]) + (", …" if len(listing.names) > 4 else "") if listing.names else "nothing"
    return (f"no commit before the session began ({started}): started from nothing, as its `ls` at seq "
            f"{listing.seq} showed the directory holding {held}; the repository's first commit {first[:12]} came after")


def check_began(began: tuple[Listing, ...], root: str, tree: Path, live: Path | None) -> None:
    """Raise :class:`StartDiffered` for the first name a listing in ``began`` showed (of ``root`` or a
    directory in it) that ``tree`` lacks, leaving out what no start holds: files the repository ignores
    (``node_modules``, ``.venv``), an agent's own, credential files, and an OS's or an editor's."""
    for listing in began:
        if not within(listing.path, root):
            continue
        rel = os.path.relpath(listing.path, root)
        missing = [os.path.normpath(os.path.join(rel, name)) for name in listing.names if name not in _NOT_PROJECT]
        missing = [p for p in missing if not (tree / p).exists() and not (tree / p).is_symlink()
                   and not agent_home(p) and not credential_path(p)]
        if not missing:
            continue
        left_out = ignored(live, [*missing, *(p + "/" for p in missing)])
        for path in missing:
            if path not in left_out and path + "/" not in left_out:
                raise StartDiffered(path, EMPTY, listed_in=listing.seq)
