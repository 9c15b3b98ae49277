"""What a session's own ``git status`` showed of the work tree.

Agents often begin with ``git status --short``; its output lists the author's uncommitted work. A
tracked file listed as modified, deleted or renamed that no step of the session before the call could
have changed was so when the session began: the recorded commit is not the author's start, and a
start rebuilt from the commit alone is known to differ unless something the log shows (a whole read,
a ``git diff``, an earlier session's edits) makes that file as the author had it. Untracked files
(``??``) and files only added to the index are left to the snapshot's and the patches' evidence.

Formats read: short (``-s``, ``--short``, ``-sb``; paths relative to the directory it ran in),
porcelain v1 (``--porcelain``; paths from the repository's top) and the long form (``modified:   x``,
relative to the directory). ``git -C DIR status`` and porcelain v2 are not read.
"""

from __future__ import annotations

import os
import re
import shlex

from logmine.commandline import simple_commands
from logmine.segment.records import Listed

__all__ = ["parse_status"]

_SHORT = re.compile(r"^(?P<code>[ MADRCTU]{2}) (?P<path>.+)$")
_LONG = re.compile(r"^\t(?P<what>modified|deleted|renamed|typechange|both modified):\s+(?P<path>.+)$")
_LONG_CODES = {"modified": " M", "deleted": " D", "renamed": "R ", "typechange": " T", "both modified": "UU"}


def _form(command: str) -> tuple[str, str | None] | None:
    """(``short``, ``porcelain`` or ``long``; the ``cd`` before it) for the one ``git status`` that
    ``command`` runs, else None."""
    runs = [c for c in simple_commands(command) if c.argv[:2] == ("git", "status")]
    if len(runs) != 1:
        return None
    flags = runs[0].argv[2:]
    if any(f.startswith("--porcelain=v2") or f == "--porcelain=2" or f in ("-z", "--null") for f in flags):
        return None
    if any(f.startswith("--porcelain") for f in flags):
        return "porcelain", runs[0].cd
    if any(f in ("--short", "-s") or (f.startswith("-") and not f.startswith("--") and "s" in f) for f in flags):
        return "short", runs[0].cd
    return "long", runs[0].cd


def _unquote(path: str) -> str:
    if path.startswith('"') and path.endswith('"'):
        try:
            return shlex.split(path)[0]
        except ValueError:
            return path.strip('"')
    return path


def parse_status(command: str, output: str, where: str, seq: int) -> list[Listed]:
    """The tracked files a ``git status`` that exited 0 listed as changed in the work tree (modified,
    deleted, renamed away, type-changed, unmerged); ``where``: the directory it ran in."""
    if "git" not in command or "status" not in command:
        return []
    found_form = _form(command)
    if found_form is None:
        return []
    form, cd = found_form
    base = os.path.normpath(os.path.join(where, cd or "."))
    listed = []
    for line in output.splitlines():
        if form == "long":
            found = _LONG.match(line)
            code = _LONG_CODES[found.group("what")] if found else ""
        else:
            found = _SHORT.match(line)
            code = found.group("code") if found else ""
        if not found or not any(c in "MDRTU" for c in code):
            continue
        path = found.group("path")
        if " -> " in path:  # a rename: the path the commit holds is the first
            path = path.split(" -> ", 1)[0]
        path = _unquote(path.strip())
        if form == "porcelain":
            listed.append(Listed(os.path.normpath(path), code, seq, from_top=True))
        else:
            listed.append(Listed(os.path.normpath(os.path.join(base, path)), code, seq))
    return listed
