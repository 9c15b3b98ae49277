"""Find the patch text inside whatever a tool call carried.

An ``apply_patch`` edit reaches a log in several shapes: the bare patch (freeform tool input, or a
function call's ``{"input": patch}``), an argv ``["apply_patch", patch]`` whose body may be wrapped
as ``<<'EOF' … EOF``, or a shell script that runs ``apply_patch`` with a heredoc, possibly after
``cd <dir> &&`` and with the heredoc left unterminated (bash then reads to end of script, which
Codex accepts too: real logs show it succeeding with a bash warning).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

_APPLY_PATCH_NAMES = ("apply_patch", "applypatch")
BEGIN_MARKER = "*** Begin Patch"
END_MARKER = "*** End Patch"
# The command word, as a whole word (also as the last part of a path like /usr/bin/apply_patch).
_INVOCATION = re.compile(r"(?:^|(?<=[\s;&|(){}`'\"/]))(?:apply_patch|applypatch)(?=[\s<'\"]|$)")
_COMMAND_WORD = re.compile(r"appl(?:y_patch|ypatch)")  # where _INVOCATION can match
# `<<TAG`, `<<'TAG'`, `<<"TAG"`, `<<-TAG`, spaces allowed after `<<` (real logs use `<< 'PATCH'`).
_HEREDOC = re.compile(r"[^\S\n]*<<(-?)[^\S\n]*(['\"]?)([^\s'\"<>;&|()]+)\2[^\n]*\n")


def extract_patch(command_or_text: str | Sequence[str]) -> str | None:
    """The patch text, from ``*** Begin Patch`` to ``*** End Patch`` inclusive, else None.

    Accepts a bare patch (optionally heredoc-wrapped), a JSON arguments string ``{"input": …}``,
    a shell command string that invokes ``apply_patch``/``applypatch`` (heredoc or quoted
    argument, possibly after ``cd x &&``), or an argv list of either kind. A shell command that
    merely mentions a patch without running ``apply_patch`` (``cat > x.diff <<EOF``) gives None.

    Within a heredoc the patch ends at the last ``*** End Patch`` line of the heredoc body, so
    anything after it there is dropped; Codex would have rejected such a body outright.
    """
    if not isinstance(command_or_text, str):
        return _from_argv(list(command_or_text))
    text = command_or_text
    stripped = text.strip()
    if stripped.startswith("{"):
        from_json = _from_json(stripped)
        if from_json is not None:
            return from_json
    if stripped.startswith((BEGIN_MARKER, "<<")):
        return _span(text)
    for candidate in _COMMAND_WORD.finditer(text):  # a literal scan; the full pattern checks each hit
        match = _INVOCATION.match(text, candidate.start())
        found = _after_invocation(text, match.end()) if match else None
        if found is not None:
            return found
    return None


def _from_argv(argv: list) -> str | None:
    argv = [str(a) for a in argv]
    if not argv:
        return None
    if len(argv) == 2 and argv[0].rsplit("/", 1)[-1] in _APPLY_PATCH_NAMES:
        return extract_patch(argv[1]) if argv[1].strip().startswith((BEGIN_MARKER, "<<")) else None
    # `bash -lc SCRIPT`, `powershell -NoProfile -Command SCRIPT`, …: the script comes last.
    return extract_patch(argv[-1]) if len(argv) >= 3 else None


def _from_json(text: str) -> str | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    for key in ("input", "patch", "command", "cmd"):
        value = obj.get(key)
        if isinstance(value, (str, list)):
            found = extract_patch(value)
            if found is not None:
                return found
    return None


def _after_invocation(text: str, pos: int) -> str | None:
    """The patch ``apply_patch`` reads when invoked at ``pos``: from its heredoc, else its argument."""
    heredoc = _HEREDOC.match(text, pos)
    if heredoc is None:
        # A quoted argument (`apply_patch '*** Begin Patch…'`): markers need not start a line.
        begin = text.find(BEGIN_MARKER, pos)
        end = text.rfind(END_MARKER, begin)
        return text[begin : end + len(END_MARKER)] if begin >= 0 and end >= 0 else None
    strip_tabs, tag = heredoc.group(1) == "-", heredoc.group(3)
    rest = text[heredoc.end() :]
    if not strip_tabs:
        at = _tag_line(rest, tag)
        # An unterminated heredoc runs to the end of the script, as bash reads it.
        return _span(rest if at is None else rest[: max(at - 1, 0)])
    body = []
    for line in rest.split("\n"):
        line = line.lstrip("\t")  # what bash does for `<<-`
        if line.rstrip("\r") == tag:
            break
        body.append(line)
    return _span("\n".join(body))


def _tag_line(text: str, tag: str) -> int | None:
    """Where the first line of ``text`` that is ``tag`` (and carriage returns) starts, else None."""
    at = text.find(tag)
    while at >= 0:
        stop = text.find("\n", at)
        line_end = len(text) if stop < 0 else stop
        if (at == 0 or text[at - 1] == "\n") and not text[at + len(tag) : line_end].strip("\r"):
            return at
        at = text.find(tag, at + 1)
    return None


def _span(text: str) -> str | None:
    """From the first Begin marker line to the last End marker line after it."""
    begin = _marker_line(text, BEGIN_MARKER, first=True)
    if begin is None:
        return None
    end = _marker_line(text, END_MARKER, first=False, after=begin[1])
    return None if end is None else text[begin[0] : end[0] + len(END_MARKER)]


def _marker_line(text: str, marker: str, first: bool, after: int = 0) -> tuple[int, int] | None:
    r"""(where ``marker`` starts, where its line ends) for the first (else the last, at or after
    ``after``) marker line: the marker with nothing but non-newline whitespace around it. Looked for
    with ``str.find``; the regex ``^[^\S\n]*MARKER[^\S\n]*$`` (multi-line) finds the same lines but
    tries every position of the text (tests/patch/test_extract_scan.py holds the two equal)."""
    at = text.find(marker, after) if first else text.rfind(marker, after)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        stop = text.find("\n", at + len(marker))
        stop = len(text) if stop < 0 else stop
        before, rest = text[start:at], text[at + len(marker) : stop]
        if (not before or before.isspace()) and (not rest or rest.isspace()):
            return at, stop
        at = text.find(marker, at + 1) if first else text.rfind(marker, after, at + len(marker) - 1)
    return None
