"""Apply parsed patches: to a string (:func:`apply_hunks`) and to a directory (:func:`apply_patch`).

The text algorithm is Codex's (``compute_replacements`` / ``apply_replacements`` /
``derive_new_contents_from_chunks`` in ``codex-rs/apply-patch/src/lib.rs``, default
"normalise to LF" mode). The file-system side differs from Codex on purpose in two ways: paths must
stay inside ``root``, and a call is all-or-nothing (Codex writes op by op and leaves earlier ops
applied when a later one fails).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ._model import FileOp, Hunk, PatchError
from ._text import REDACTED_MARK, seek_redacted, seek_sequence

Replacement = tuple[int, int, list[str]]  # (start index, lines removed, lines inserted)


def apply_hunks(original: str, path: str, hunks: Sequence[Hunk]) -> str:
    """The text of file ``path`` after applying ``hunks`` to its ``original`` text.

    Every line a hunk covers, context included, is rewritten as the patch spells it, so whitespace
    that only the fuzzy passes forgave takes the patch's form. Lines are ``\\n``-separated: a ``\\r``
    before ``\\n`` stays part of its line, so CRLF files still match (through the trailing-space
    pass) and rewritten lines end in bare ``\\n`` -- Codex's default, not its ``--preserve-crlf``
    mode. The result always ends with a newline; as in Codex, when the text already ends in blank
    lines one trailing newline is dropped (``"a\\n\\n"`` → ``"a\\n"``). Unlike Codex, when no level of
    the ladder finds a hunk whose lines hold redaction placeholders (``[REDACTED:kind]``: the patch was
    read from a redacted log), each placeholder matches any text, and a redacted context line keeps
    the file's text (:func:`._text.seek_redacted`).
    Raises :class:`PatchError` naming ``path`` when a header or hunk cannot be located.
    """
    lines = original.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline is not a line, as in `diff`
    for start, old_len, new in reversed(_compute_replacements(lines, path, hunks)):
        lines[start : start + old_len] = new
    if not lines or lines[-1] != "":
        lines.append("")
    return "\n".join(lines)


def _compute_replacements(lines: list[str], path: str, hunks: Sequence[Hunk]) -> list[Replacement]:
    """Locate every hunk, in order, each searched for after the previous one's match."""
    replacements: list[Replacement] = []
    line_index = 0
    for hunk in hunks:
        if hunk.header is not None:
            found = seek_sequence(lines, [hunk.header], line_index, False)
            if found is None:
                raise PatchError(f"Failed to find context '{hunk.header}' in {path}", path=path)
            line_index = found + 1
        old, new = hunk.old_lines, hunk.new_lines
        if not old:
            # Codex appends a pure addition at the end of the file (before a final blank line),
            # whatever its @@ header says.
            at_end = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
            replacements.append((at_end, 0, new))
            continue
        found = seek_sequence(lines, old, line_index, hunk.end_of_file)
        if found is None and old[-1] == "":
            # A trailing empty context line often stands for the file's final newline, which is
            # not in `lines`: retry without it.
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = seek_sequence(lines, old, line_index, hunk.end_of_file)
        if found is None:
            found = seek_redacted(lines, old, line_index, hunk.end_of_file)
            if found is not None:
                new = _unredacted(hunk, new, lines, found)
        if found is None:
            wanted = "\n".join(hunk.old_lines)
            raise PatchError(f"Failed to find expected lines in {path}:\n{wanted}", path=path)
        replacements.append((found, len(old), new))
        line_index = found + len(old)
    replacements.sort(key=lambda r: r[0])
    return replacements


def _unredacted(hunk: Hunk, new: list[str], lines: list[str], found: int) -> list[str]:
    """``new`` with each redacted context line put back as the file has it: a patch read from a
    redacted log changes only the lines it adds or removes, never the secret beside them."""
    new = list(new)
    i = j = 0  # positions in the hunk's old and new lines
    for line in hunk.lines:
        if line[0] == " ":
            if REDACTED_MARK in line and j < len(new) and found + i < len(lines):
                new[j] = lines[found + i]
            i, j = i + 1, j + 1
        elif line[0] == "-":
            i += 1
        else:
            j += 1
    return new


def apply_patch(ops: Sequence[FileOp], root: Path) -> list[tuple[str, str]]:
    """Apply ``ops`` to the files under directory ``root``; returns Codex's summary entries.

    The result lists ``("A", path)`` for added files, then ``("M", path)`` for updated ones (the
    destination when moved), then ``("D", path)`` for deleted ones, paths as written in the patch:
    Codex prints it as ``Success. Updated the following files:`` followed by ``A path`` lines.

    Ops apply in order, each seeing the previous ones' result. As in Codex, Add File overwrites an
    existing file, Move to overwrites its destination, Delete needs an existing non-directory, and
    Update needs an existing UTF-8 file. Unlike Codex, absolute paths and paths that leave ``root``
    (by ``..`` or through a symlink) are refused, and nothing is written until every op has been
    computed; if writing then fails, files already written are restored. Raises
    :class:`PatchError` (``No files were modified.`` for an empty patch).
    """
    if not ops:
        raise PatchError("No files were modified.")
    plan = _Plan(Path(root))
    summary: dict[str, list[str]] = {"A": [], "M": [], "D": []}
    for op in ops:
        letter, shown = plan.stage(op)
        summary[letter].append(shown)
    plan.commit()
    return [(letter, path) for letter in "AMD" for path in summary[letter]]


class _Plan:
    """The files a patch will leave behind, computed in memory before anything is written."""

    def __init__(self, root: Path):
        if not root.is_dir():
            raise PatchError(f"patch root is not a directory: {root}")
        self.root = os.path.realpath(root)
        self.files: dict[str, str | None] = {}  # absolute path -> final text, None when deleted
        self.dirs: set[str] = set()  # directories that the planned files need
        self.shown: dict[str, str] = {}  # absolute path -> path as the patch wrote it

    def stage(self, op: FileOp) -> tuple[str, str]:
        """Compute one op's effect; returns its summary letter and the path to show."""
        source = self._resolve(op.path)
        if op.op == "add":
            self._put(source, op.content or "", op.path)
            return "A", op.path
        if op.op == "delete":
            kind = self._kind(source)
            if kind != "file":
                reason = "Is a directory" if kind == "dir" else "No such file or directory"
                raise PatchError(f"Failed to delete file {op.path}: {reason}", path=op.path)
            self.files[source] = None
            return "D", op.path
        new_text = apply_hunks(self._read(source, op.path), op.path, op.hunks)
        if op.move_to is None:
            self._put(source, new_text, op.path)
            return "M", op.path
        self._put(self._resolve(op.move_to), new_text, op.move_to)
        # Codex writes the destination, then removes the source -- even when they are the same
        # file, which therefore ends up deleted. Kept for replay fidelity.
        self.files[source] = None
        return "M", op.move_to

    def _resolve(self, rel: str) -> str:
        """Absolute path for patch path ``rel``; refuses anything that is not inside the root."""
        if not rel or "\0" in rel:
            raise PatchError(f"invalid path {rel!r}", path=rel)
        if os.path.isabs(rel):
            raise PatchError(f"refusing absolute path {rel!r}: paths must be relative", path=rel)
        lexical = os.path.normpath(os.path.join(self.root, rel))
        # Directory symlinks are resolved so that two spellings of one file are one key; the last
        # component is not, so that deleting a symlink removes the link, as Codex does.
        parent, name = os.path.split(lexical)
        resolved = os.path.join(os.path.realpath(parent), name)
        for candidate in (lexical, resolved, os.path.realpath(lexical)):
            if candidate == self.root or os.path.commonpath([self.root, candidate]) != self.root:
                raise PatchError(f"refusing path {rel!r}: it leaves the patch root", path=rel)
        return resolved

    def _kind(self, path: str) -> str | None:
        """``"file"``, ``"dir"`` or None, as the file system will be once staged ops are done."""
        if path in self.dirs:
            return "dir"
        if path in self.files:
            return None if self.files[path] is None else "file"
        if os.path.isdir(path):
            return "dir"
        return "file" if os.path.lexists(path) else None

    def _read(self, path: str, shown: str) -> str:
        if path in self.files and self.files[path] is not None:
            return self.files[path]  # type: ignore[return-value]
        kind = self._kind(path)
        if kind != "file":
            reason = "Is a directory" if kind == "dir" else "No such file or directory"
            raise PatchError(f"Failed to read file to update {shown}: {reason}", path=shown)
        try:
            with open(path, "rb") as fh:
                return fh.read().decode("utf-8")
        except UnicodeDecodeError:
            raise PatchError(
                f"Failed to read file to update {shown}: stream did not contain valid UTF-8", path=shown
            ) from None
        except OSError as exc:
            raise PatchError(f"Failed to read file to update {shown}: {exc.strerror}", path=shown) from None

    def _put(self, path: str, text: str, shown: str) -> None:
        """Plan ``path`` to hold ``text``, creating its parent directories as Codex would."""
        if self._kind(path) == "dir":
            raise PatchError(f"Failed to write file {shown}: Is a directory", path=shown)
        parent = os.path.dirname(path)
        needed = []
        while parent != self.root:
            if self._kind(parent) == "file":
                raise PatchError(
                    f"Failed to create parent directories for {shown}: Not a directory", path=shown
                )
            needed.append(parent)
            parent = os.path.dirname(parent)
        self.dirs.update(needed)
        self.files[path] = text
        self.shown[path] = shown

    def commit(self) -> None:
        """Write the plan: deletions first (a deleted file may make room for a directory)."""
        payloads: dict[str, bytes | None] = {}
        for path, text in self.files.items():
            try:
                payloads[path] = None if text is None else text.encode("utf-8")
            except UnicodeEncodeError as exc:
                shown = self.shown[path]
                raise PatchError(
                    f"Failed to write file {shown}: not valid UTF-8 ({exc.reason})", path=shown
                ) from None
        journal = _Journal()
        try:
            for path, data in payloads.items():
                if data is None and os.path.lexists(path):
                    journal.remove(path)
            for path, data in payloads.items():
                if data is not None:
                    journal.write(path, data)
        except OSError as exc:
            journal.rollback()
            raise PatchError(f"Failed to write {exc.filename or 'file'}: {exc.strerror}") from None


class _Journal:
    """File-system changes made so far, with what is needed to undo them."""

    def __init__(self) -> None:
        self.undo: list[tuple[str, str, tuple | None]] = []  # (action, path, saved state)

    def remove(self, path: str) -> None:
        self.undo.append(("restore", path, _snapshot(path)))
        os.unlink(path)

    def write(self, path: str, data: bytes) -> None:
        target = os.path.realpath(path)  # write through a symlink, like Codex's fs::write
        self._make_parents(os.path.dirname(target))
        self.undo.append(("restore", target, _snapshot(target)))
        mode = os.stat(target).st_mode & 0o7777 if os.path.isfile(target) else None
        tmp = os.path.join(os.path.dirname(target), f".apply_patch-{secrets.token_hex(8)}.tmp")
        # 0o666 lets the umask decide a new file's mode, as fs::write does.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            if mode is not None:
                os.chmod(tmp, mode)  # keep an executable script executable
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def _make_parents(self, directory: str) -> None:
        missing = []
        while not os.path.isdir(directory):
            missing.append(directory)
            directory = os.path.dirname(directory)
        for d in reversed(missing):
            os.mkdir(d)
            self.undo.append(("rmdir", d, None))

    def rollback(self) -> None:
        """Best effort: put every touched path back as it was, newest change first."""
        for action, path, saved in reversed(self.undo):
            try:
                if action == "rmdir":
                    os.rmdir(path)
                else:
                    _restore(path, saved)
            except OSError:
                pass


def _snapshot(path: str) -> tuple | None:
    if os.path.islink(path):
        return ("link", os.readlink(path))
    if os.path.isfile(path):
        with open(path, "rb") as fh:
            return ("file", fh.read(), os.stat(path).st_mode & 0o7777)
    return None


def _restore(path: str, saved: tuple | None) -> None:
    if os.path.lexists(path):
        os.unlink(path)
    if saved is None:
        return
    if saved[0] == "link":
        os.symlink(saved[1], path)
        return
    _, data, mode = saved
    with open(path, "wb") as fh:
        fh.write(data)
    os.chmod(path, mode)


def within(path: str | None, root: str) -> bool:
    """Is ``path`` the directory ``root`` or below it?"""
    return path is not None and (path == root or path.startswith(root.rstrip("/") + "/"))


def rooted(ops: Sequence[FileOp], workdir: str, root: str) -> tuple[FileOp, ...]:
    """``ops`` with every path relative to the repository ``root``: a relative path is taken from
    ``workdir`` (the call's working directory, inside ``root``), an absolute one inside ``root`` is made
    relative to it. Raises :class:`PatchError` for an absolute path outside the repository."""
    base = os.path.relpath(workdir, root) if within(workdir, root) else "."

    def fix(path: str) -> str:
        if os.path.isabs(path):
            if within(os.path.normpath(path), root):
                return os.path.relpath(os.path.normpath(path), root)
            raise PatchError(f"patch names a path outside the repository: {path}", path=path)
        joined = os.path.normpath(os.path.join(base, path))
        if joined == ".." or joined.startswith("../"):
            raise PatchError(f"patch names a path outside the repository: {path}", path=path)
        return joined

    return tuple(replace(op, path=fix(op.path), move_to=None if op.move_to is None else fix(op.move_to)) for op in ops)
