"""Files as a session's ``git diff`` showed them, checked against git's own object ids.

Agents run ``git diff -- F`` to see what they (or the author, before the session) changed. Each file's
part of that output names the blob it starts from and the blob of the work tree's file
(``index 1a2b3c4..5d6e7f8``), and its hunks turn the one into the other. With the start blob from the
repository, the hunks give the file's whole text at that moment, and the text is kept only when its
own blob id is the one git printed — so a cut output, a redacted line, an option that changed the
hunks (``-w``) or a shell that mangled whitespace can never yield a wrong file, only none.

Only diffs whose new side is the work tree count: ``git diff [REV] [-- PATHS]`` with any options but
``--cached``/``--staged``, ``-R`` and ``--no-index``, and without a second revision; a pipe into
``sed -n``/``head`` and a ``git status`` before it are allowed. New files (``index 0000000..``)
start from nothing; deleted, renamed, binary and mode-only parts are left out.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass

from logmine.segment.commands import executed, unwrap

__all__ = ["Diffed", "apply_hunks", "blob_id", "diff_command", "parse_diff"]

_HEADER = re.compile(r"^diff --git a/(.+) b/(.+)$")
_INDEX = re.compile(r"^index ([0-9a-f]{7,64})\.\.([0-9a-f]{7,64})(?: \d{6})?$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_TOTAL = re.compile(r"^Total output lines: \d+\n\n")
# Options after which the new side is not the work tree.
_NOT_WORKTREE = {"--cached", "--staged", "-R", "--reverse", "--no-index", "--merge-base"}
# What may run beside the diff in one command line: status and listings, a pager-like cut.
_BESIDE = re.compile(r"^(?:git (?:status|diff (?:--stat|--shortstat|--numstat|--name-only|--name-status))|"
                     r"pwd|ls|echo|printf|true|head|tail|sed -n)\b")
_SKIPPED_HEADERS = ("deleted file mode", "rename from", "rename to", "copy from", "copy to", "Binary files",
                    "GIT binary patch", "similarity index")


@dataclass(frozen=True, slots=True)
class Diffed:
    """One file's part of a ``git diff`` whose new side is the work tree."""

    path: str  # relative to the repository's top, as git names it
    base: str  # the (abbreviated) blob id the hunks apply to; all zeros: a new file
    after: str  # the (abbreviated) blob id of the work tree's file when the command ran
    hunks: str  # from the part's first ``@@`` line to its end


def _worktree_diff(words: list[str]) -> bool:
    """Is ``git [--no-pager] diff …`` one whose new side is the work tree?"""
    if words[:2] == ["git", "--no-pager"]:
        words = ["git", *words[2:]]
    if words[:2] != ["git", "diff"]:
        return False
    args = words[2:]
    revs = args[:args.index("--")] if "--" in args else args
    if any(a in _NOT_WORKTREE or a.startswith(("--stat", "--name-", "--numstat", "--shortstat", "--word-diff",
                                                "--color-words", "--exit-code", "--output")) for a in args):
        return False
    named = [a for a in revs if not a.startswith("-")]
    if "--" in args:
        return len(named) <= 1 and ".." not in "".join(named)
    looks_like_rev = [a for a in named if "." not in a and "/" not in a or a.startswith(("origin/", "upstream/"))]
    return len(looks_like_rev) <= 1 and not any(".." in a for a in named)


def diff_command(command: str) -> bool:
    """Does ``command`` print a ``git diff`` of the work tree (and nothing that could pass for one)?"""
    diffs = 0
    for part in executed(unwrap(command).command):
        try:
            words = shlex.split(part)
        except ValueError:
            return False
        if _worktree_diff(words):
            diffs += 1
        elif not _BESIDE.match(part):
            return False
    return diffs == 1


def _part(path: str, header: list[str], body: list[str]) -> Diffed | None:
    while body and body[-1] == "":  # the output's last newline, or a blank line after the diff
        body = body[:-1]
    index = next((m for line in header if (m := _INDEX.match(line))), None)
    if index is None or not body or any(line.startswith(_SKIPPED_HEADERS) for line in header):
        return None
    return Diffed(path, index.group(1), index.group(2), "\n".join(body) + "\n")


def parse_diff(command: str, output: str) -> list[Diffed]:
    """The files' parts of the output of a work-tree ``git diff`` (:func:`diff_command`); none for any
    other command."""
    if not diff_command(command):
        return []
    parts: list[Diffed] = []
    path: str | None = None
    header: list[str] = []
    body: list[str] = []
    for line in _TOTAL.sub("", output, count=1).split("\n"):
        head = _HEADER.match(line)
        if head:
            if path is not None and (part := _part(path, header, body)):
                parts.append(part)
            path = head.group(1) if head.group(1) == head.group(2) else None
            header, body = [], []
        elif path is not None and (body or line.startswith("@@")):
            body.append(line)
        elif path is not None:
            header.append(line)
    if path is not None and (part := _part(path, header, body)):
        parts.append(part)
    return parts


def apply_hunks(base: str, hunks: str) -> str | None:
    """``base`` with the unified-diff ``hunks`` applied where their line numbers say, or None when a
    line does not match, a hunk's counts do not add up or the text holds anything but hunk lines."""
    src = re.findall(r"[^\n]*\n|[^\n]+$", base)
    out: list[str] = []
    pos = 0
    lines = hunks.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            return None
        old_start, old_n = int(m.group(1)), int(m.group(2) or 1)
        new_n = int(m.group(4) or 1)
        start = old_start - 1 if old_n else old_start
        if start < pos or start > len(src):
            return None
        out += src[pos:start]
        pos = start
        body: list[list[str]] = []
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            if line.startswith("\\"):
                if not body or not body[-1][1].endswith("\n"):
                    return None
                body[-1][1] = body[-1][1][:-1]
            elif line[:1] in (" ", "+", "-") or line == "":
                body.append([line[:1] or " ", line[1:] + "\n"])
            else:
                return None
            i += 1
        if sum(tag != "+" for tag, _ in body) != old_n or sum(tag != "-" for tag, _ in body) != new_n:
            return None
        for tag, text in body:
            if tag != "+":
                if pos >= len(src) or src[pos] != text:
                    return None
                pos += 1
            if tag != "-":
                out.append(text)
    return "".join(out + src[pos:])


def blob_id(data: bytes) -> str:
    """Git's object id of a blob holding ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
