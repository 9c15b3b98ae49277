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
# A marker line: the marker, with nothing but non-newline whitespace around it.
_BEGIN = re.compile(r"^[^\S\n]*(\*\*\* Begin Patch)[^\S\n]*$", re.M)
_END = re.compile(r"^[^\S\n]*(\*\*\* End Patch)[^\S\n]*$", re.M)
# The command word, as a whole word (also as the last part of a path like /usr/bin/apply_patch).
_INVOCATION = re.compile(r"(?:^|(?<=[\s;&|(){}`'\"/]))(?:apply_patch|applypatch)(?=[\s<'\"]|$)")
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
    for match in _INVOCATION.finditer(text):
        found = _after_invocation(text, match.end())
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
    body = []
    for line in text[heredoc.end() :].split("\n"):
        if strip_tabs:
            line = line.lstrip("\t")  # what bash does for `<<-`
        if line.rstrip("\r") == tag:
            break
        body.append(line)
    # An unterminated heredoc runs to the end of the script, as bash reads it.
    return _span("\n".join(body))


def _span(text: str) -> str | None:
    """From the first Begin marker line to the last End marker line after it."""
    begin = _BEGIN.search(text)
    if begin is None:
        return None
    ends = list(_END.finditer(text, begin.end()))
    if not ends:
        return None
    return text[begin.start(1) : ends[-1].end(1)]
