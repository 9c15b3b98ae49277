"""A start from a commit the author made during the session.

When a task's start rebuilt from the session's commit is shown not to be the author's (the earlier
work does not replay, or the task's own patch fails on a file nothing replayed changed), the author
may have committed their work while the session ran: the newest commit made after the session's
commit and before the task began on which every one of the task's patches applies is its start.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from logmine.patch import FileOp
from logmine.redact import PLACEHOLDERS, Mask
from logmine.workspace.archive import blob, epoch, export_commit, git
from logmine.workspace.edits import FailedEdit, NotRebuilt, StartDiffered, failing_path

__all__ = ["LATER_COMMITS_TRIED", "LaterCommit", "later_commit", "start_later"]

LATER_COMMITS_TRIED = 40  # commits made between the session's commit and a dirty task's start, newest first


@dataclass(frozen=True, slots=True)
class LaterCommit:
    sha: str
    when: datetime


def unchanged(live: Path, commit: str, tree: Path, path: str, mask: Mask = PLACEHOLDERS) -> bool:
    """Is ``tree/path`` still the file ``commit`` holds (nothing replayed changed it)?"""
    held = blob(live, commit, path, mask)
    return held is not None and (tree / path).is_file() and (tree / path).read_bytes() == held


def later_commit(live: Path, commit: str, started: datetime | None, ops: tuple[FileOp, ...],
                 mask: Mask = PLACEHOLDERS) -> LaterCommit | None:
    """The newest commit of ``live`` (any ref) made after ``commit`` and no later than ``started`` on
    which all of ``ops`` apply in order, else None. Only a task that changes an existing file can show
    that a commit is its start: ``ops`` must update, move or delete one."""
    if started is None or not any(op.op != "add" for op in ops):
        return None
    since = git(live, "show", "-s", "--format=%ct", commit)
    until = epoch(started)
    listing = git(live, "log", "--all", "--format=%H %ct", f"--since={int(since or 0) + 1}", f"--until={until}")
    found = sorted(((int(t), sha) for sha, t in (line.split() for line in (listing or "").splitlines())),
                   reverse=True)[:LATER_COMMITS_TRIED]
    for when, sha in found:
        def text(rel: str, sha: str = sha) -> str | None:
            held = blob(live, sha, rel, mask)
            try:
                return None if held is None else held.decode()
            except UnicodeDecodeError:
                return None
        if failing_path(ops, text) is None:
            return LaterCommit(sha, datetime.fromtimestamp(when, UTC))
    return None


def start_later(live: Path, commit: str, started: datetime | None, ops: tuple[FileOp, ...], dest: Path,
                unreplayed: NotRebuilt | None, failed: list[FailedEdit], mask: Mask = PLACEHOLDERS,
                shown: tuple[str, ...] = ()) -> tuple[LaterCommit, list[str]] | None:
    """When the start rebuilt in ``dest`` from ``commit`` is shown not to be the author's — the earlier
    work did not replay (``unreplayed``), or one of the task's ``ops`` fails on a file nothing replayed
    changed, or on one written as the session's reads showed it (``shown``: a step between the read
    and the task changed it, and the log does not show how) — export the commit
    :func:`later_commit` finds into ``dest`` instead and return it with its notes; else None, ``dest``
    untouched."""
    path = failing_path(ops, dest) if unreplayed is None and ops else None
    evidence = unreplayed
    blamed = [str(f) for f in failed if path and f.may_have_made(path)]
    if path and blamed:  # as explain says it: the failed edit may be the one the patch expected
        evidence = NotRebuilt(f"a patch of {path} does not apply after an earlier shell edit failed at replay "
                              f"({', '.join(blamed[:3])})")
    elif path and unchanged(live, commit, dest, path, mask):
        evidence = StartDiffered(path)
    elif path and path in shown:  # written as the session's reads showed it, and the task's patch still fails
        evidence = NotRebuilt(f"a patch of {path} does not apply to it as the session's reads showed it")
    later = later_commit(live, commit, started, ops, mask) if evidence else None
    if later is None:
        return None
    shutil.rmtree(dest)
    dest.mkdir()
    exported = export_commit(live, later.sha, dest, mask)
    why = (f"the author's tree had differed from the session's commit {commit[:12]} at {evidence.path}"
           if isinstance(evidence, StartDiffered) else
           f"the earlier work did not replay on the session's commit {commit[:12]}: {str(evidence)[:160]}")
    return later, [f"started from later commit {later.sha[:12]} (made {later.when:%Y-%m-%d %H:%M} UTC, before the "
                   f"task began; every patch op of the task applies to it): {why}", *exported]
