"""Parse Codex ``apply_patch`` text into :class:`FileOp` s, and render ops back into text.

Follows ``codex-rs/apply-patch/src/parser.rs`` in its default (lenient) mode:

* the text is trimmed; its first line must trim to ``*** Begin Patch`` and its last to
  ``*** End Patch``, otherwise, if it is wrapped as ``<<EOF`` / ``<<'EOF'`` / ``<<"EOF"`` … ``…EOF``
  (the argv heredoc GPT-4.1 writes), the wrapper is dropped and the check repeated;
* file headers may carry surrounding whitespace; Add File takes every following line that starts
  with ``+`` and stops at the first that does not (which must then be a file header);
* in an Update, the first chunk may omit ``@@``; blank lines between chunks are skipped; inside a
  chunk an empty line is an empty context line; a chunk ends at the first line not starting with
  ``' '``, ``'+'`` or ``'-'`` (or after ``*** End of File``);
* an optional ``*** Environment ID: <id>`` may follow ``*** Begin Patch`` (2026 Codex).

Line numbers in errors count from 1 at ``*** Begin Patch``, as Codex's do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ._model import FileOp, Hunk, ParsedPatch, PatchError
from ._text import rust_lines, trim, trim_end

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
ENVIRONMENT = "*** Environment ID:"
_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')
_BAD_HEADER = (
    "is not a valid hunk header. Valid hunk headers: "
    "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
)
_HUNK_LINE = frozenset(("", " ", "+", "-"))  # what a chunk's line starts with (its first character)
_BAD_LINE = "Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"


def parse_patch(text: str) -> list[FileOp]:
    """The file operations of a patch, in order. Raises :class:`PatchError` if it is malformed.

    ``text`` is the patch itself, as Codex's ``apply_patch`` receives it (a heredoc-wrapped argv
    body is accepted). To pull a patch out of a shell command first, use :func:`extract_patch`.
    A patch with no operations parses to ``[]``; applying it is what fails.
    """
    return list(parse_patch_document(text).ops)


def parse_patch_document(text: str) -> ParsedPatch:
    """Like :func:`parse_patch`, also returning the ``*** Environment ID:`` if there is one."""
    lines = _patch_lines(rust_lines(trim(text)))
    body = lines[1:-1]
    i, environment_id = _environment_id(body)
    ops: list[FileOp] = []
    while i < len(body):
        op, used = _parse_file_op(body, i)
        ops.append(op)
        i += used
    return ParsedPatch(tuple(ops), environment_id)


def _patch_lines(lines: list[str]) -> list[str]:
    """The lines from Begin to End, unwrapping a GPT-4.1 style heredoc argv if needed."""
    try:
        _check_markers(lines)
        return lines
    except PatchError:
        if len(lines) >= 4 and lines[0] in _HEREDOC_OPENERS and lines[-1].endswith("EOF"):
            inner = lines[1:-1]
            _check_markers(inner)
            return inner
        raise


def _check_markers(lines: Sequence[str]) -> None:
    if not lines or trim(lines[0]) != BEGIN:
        raise PatchError.invalid_patch("The first line of the patch must be '*** Begin Patch'")
    if len(lines) < 2 or trim(lines[-1]) != END:
        raise PatchError.invalid_patch("The last line of the patch must be '*** End Patch'")


def _environment_id(body: Sequence[str]) -> tuple[int, str | None]:
    """Consume the 2026 ``*** Environment ID:`` preamble; returns (lines used, id or None)."""
    i, found = 0, None
    while i < len(body) and trim(body[i]).startswith(ENVIRONMENT):
        if found is not None:
            raise PatchError.invalid_patch("apply_patch environment_id cannot be specified more than once")
        found = trim(trim(body[i])[len(ENVIRONMENT) :])
        if not found:
            raise PatchError.invalid_patch("apply_patch environment_id cannot be empty")
        i += 1
    return i, found


def _line_number(i: int) -> int:
    # body[0] is the line after "*** Begin Patch", which is line 2.
    return i + 2


def _parse_file_op(body: Sequence[str], i: int) -> tuple[FileOp, int]:
    """Parse the file operation whose header is ``body[i]``; returns it and the lines it used."""
    header = trim(body[i])
    if header.startswith(ADD):
        j = i + 1
        # Codex stops at the first line without '+': a blank line inside an added file is an error
        # (reported as a bad header on that line), which models do hit in real logs.
        end = next((k for k in range(j, len(body)) if not body[k].startswith("+")), len(body))
        content = "".join(line[1:] + "\n" for line in body[j:end])
        return FileOp("add", header[len(ADD) :], content=content), end - i
    if header.startswith(DELETE):
        return FileOp("delete", header[len(DELETE) :]), 1
    if header.startswith(UPDATE):
        return _parse_update(body, i, header[len(UPDATE) :])
    raise PatchError.invalid_hunk(f"'{header}' {_BAD_HEADER}", _line_number(i))


def _parse_update(body: Sequence[str], i: int, path: str) -> tuple[FileOp, int]:
    j = i + 1
    move_to = None
    if j < len(body) and trim(body[j]).startswith(MOVE):
        move_to = trim(body[j])[len(MOVE) :]
        j += 1
    hunks: list[Hunk] = []
    while j < len(body):
        if not trim(body[j]):
            j += 1  # blank lines may separate chunks
            continue
        if body[j].startswith("*"):
            break  # the next file header (or a stray marker, reported by the caller)
        hunk, used = _parse_hunk(body, j, first=not hunks)
        hunks.append(hunk)
        j += used
    if not hunks:
        raise PatchError.invalid_hunk(f"Update file hunk for path '{path}' is empty", _line_number(i))
    return FileOp("update", path, move_to=move_to, hunks=tuple(hunks)), j - i


def _parse_hunk(body: Sequence[str], i: int, first: bool) -> tuple[Hunk, int]:
    """Parse one chunk starting at ``body[i]``; only the first chunk may omit its ``@@`` line."""
    opener = trim_end(body[i])
    if opener == "@@":
        header, j = None, i + 1
    elif opener.startswith("@@ "):
        header, j = opener[3:], i + 1
    elif first:
        header, j = None, i
    else:
        raise PatchError.invalid_hunk(
            f"Expected update hunk to start with a @@ context marker, got: '{body[i]}'", _line_number(i)
        )
    if j >= len(body):
        raise PatchError.invalid_hunk("Update hunk does not contain any lines", _line_number(j))
    # The chunk's lines run to the first that is not context, added or removed (an empty line is
    # empty context: models drop its space, Codex allows it).
    end = next((k for k in range(j, len(body)) if body[k][:1] not in _HUNK_LINE), len(body))
    lines = [line or " " for line in body[j:end]]
    end_of_file = False
    if end < len(body):
        if trim_end(body[end]) == END_OF_FILE:
            if not lines:
                raise PatchError.invalid_hunk("Update hunk does not contain any lines", _line_number(end))
            end_of_file = True
            end += 1
        elif not lines:
            raise PatchError.invalid_hunk(
                f"Unexpected line found in update hunk: '{body[end]}'. {_BAD_LINE}", _line_number(end)
            )
    j = end
    return Hunk(header, tuple(lines), end_of_file), j - i


def render_patch(ops: Iterable[FileOp], environment_id: str | None = None) -> str:
    """Patch text for ``ops`` that :func:`parse_patch` reads back as the same ops.

    An added file's content is written one ``+`` line per line; content not ending in a newline
    comes back with one (Codex's Add File always ends lines with ``\\n``).
    """
    out = [BEGIN]
    if environment_id is not None:
        out.append(f"{ENVIRONMENT} {environment_id}")
    for op in ops:
        if op.op == "add":
            out.append(ADD + op.path)
            lines = (op.content or "").split("\n")
            if lines[-1] == "":
                lines.pop()
            out.extend("+" + line for line in lines)
        elif op.op == "delete":
            out.append(DELETE + op.path)
        else:
            out.append(UPDATE + op.path)
            if op.move_to is not None:
                out.append(MOVE + op.move_to)
            for hunk in op.hunks:
                out.append("@@" if hunk.header is None else f"@@ {hunk.header}")
                out.extend(hunk.lines)
                if hunk.end_of_file:
                    out.append(END_OF_FILE)
    out.append(END)
    return "\n".join(out) + "\n"
