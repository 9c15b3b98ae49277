"""What a session's own ``ls`` showed of a directory.

An agent often begins by listing its working directory (``ls``, ``ls -la``). Before the session has
changed anything, that output is what the directory held as it began. It is the evidence for a start
the repository's history cannot give: a session that ran before the project's first commit (a new
project, ``git init`` only later) began in a directory holding only what its listing shows
(:mod:`logmine.workspace.start`).

Read: one ``ls`` (after any ``cd``) of one directory or of none (the one it ran in), plain,
one name per line as a tool's non-terminal output has it, or long (``-l``); ``-F``/``-p`` marks are
taken off. A recursive, directory-only or multi-path listing, or one piped or chained to another
command, is not read.
"""

from __future__ import annotations

import os
import re

from logmine.commandline import simple_commands
from logmine.segment.records import Listing

__all__ = ["parse_listing"]

_SHORT_FLAGS = set("1aAlFphGtSrUchknos")
_LONG_FLAGS = ("--all", "--almost-all", "--classify", "--color", "--human-readable", "--group-directories-first")
# mode, links, owner, group, size, then the date (``Jan 29 09:00``, ``29 janv. 2025``) and the name
_LONG_LINE = re.compile(r"^[-dlcbps][-rwxsStT]{9}[@+.]?\s+\d+\s.*?\s(?:[^\W\d]{3,5}\.?\s+\d{1,2}|\d{1,2}\s+[^\W\d]{3,5}\.?)"
                        r"\s+(?:\d{1,2}:\d{2}|\d{4})\s(?P<name>.+)$")
_TOTAL = re.compile(r"^total \d+")


def _flags_read(flags: list[str]) -> bool:
    """Do ``flags`` keep the output one name (or one long entry) per line, of one directory?"""
    for flag in flags:
        if flag.startswith("--"):
            if not flag.startswith(_LONG_FLAGS):
                return False
        elif not set(flag[1:]) <= _SHORT_FLAGS:
            return False
    return True


def _names(lines: list[str], long: bool, marked: bool) -> tuple[str, ...] | None:
    """The names ``lines`` show, else None when a long entry does not read as one."""
    names = []
    for line in lines:
        if long:
            if _TOTAL.match(line):
                continue
            found = _LONG_LINE.match(line)
            if not found:
                return None
            line = found.group("name").split(" -> ", 1)[0]
        if marked and line[-1:] in "/*@=|":
            line = line[:-1]
        if line not in (".", ".."):
            names.append(line)
    return tuple(names)


def parse_listing(command: str, output: str, where: str, seq: int) -> Listing | None:
    """The directory an ``ls`` that exited 0 listed and the names it showed, else None; ``where``: the
    directory it ran in. ``output``: without the shell's own noise before it."""
    if "ls" not in command:
        return None
    runs = simple_commands(command)
    if len(runs) != 1 or runs[0].argv[0] != "ls":
        return None
    words = list(runs[0].argv[1:])
    flags = [w for w in words if w.startswith("-")]
    paths = [w for w in words if not w.startswith("-")]
    if len(paths) > 1 or not _flags_read(flags) or any(c in "*?[" for p in paths for c in p):
        return None
    letters = "".join(f[1:] for f in flags if not f.startswith("--"))
    long = "l" in letters or "o" in letters
    marked = "F" in letters or "p" in letters or "--classify" in flags
    lines = [line for line in output.splitlines() if line.strip()]
    if not long and any(line.endswith(":") for line in lines):  # headed sections: more than one directory
        return None
    names = _names(lines, long, marked)
    if names is None:
        return None
    base = os.path.normpath(os.path.join(where, runs[0].cd or ".", paths[0] if paths else "."))
    return Listing(base, names, seq)
