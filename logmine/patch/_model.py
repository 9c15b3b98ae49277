"""Records for a parsed ``apply_patch`` patch: one :class:`FileOp` per file, made of :class:`Hunk` s.

These are the canonical, storable form of an agent's file edit. ``FileOp.to_dict`` / ``from_dict``
give the JSON-able shape kept in Parquet; ``render_patch`` in :mod:`._parse` turns ops back into
patch text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

try:
    from logmine.errors import LogmineError
except ImportError:  # inside a sandbox only logmine/patch is mounted (``python -m logmine.patch`` there)

    class LogmineError(Exception):  # type: ignore[no-redef]
        """Stand-in base where :mod:`logmine.errors` is not mounted."""

OPS = ("add", "delete", "update")
_LINE_PREFIXES = (" ", "-", "+")


class PatchError(LogmineError, ValueError):
    """A patch that cannot be parsed or applied. The message says what and where.

    Parse errors read like Codex's own (``invalid patch: …`` or ``invalid hunk at line N, …``) and
    carry ``line_number``, counted from 1 at ``*** Begin Patch`` (after any heredoc wrapper is
    removed, as Codex counts). Apply errors carry the patch ``path`` they concern.
    """

    def __init__(self, message: str, *, line_number: int | None = None, path: str | None = None):
        super().__init__(message)
        self.line_number = line_number
        self.path = path

    @classmethod
    def invalid_patch(cls, message: str) -> PatchError:
        """The patch as a whole is malformed (markers, environment id)."""
        return cls(f"invalid patch: {message}")

    @classmethod
    def invalid_hunk(cls, message: str, line_number: int) -> PatchError:
        """One file operation is malformed at ``line_number`` of the patch."""
        return cls(f"invalid hunk at line {line_number}, {message}", line_number=line_number)


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` chunk of an Update File operation.

    ``header`` is the text after ``"@@ "`` (a line to seek to before matching, e.g. ``def foo():``),
    or None for a bare ``@@`` or a first chunk written without one. Each entry of ``lines`` starts
    with ``' '`` (context), ``'-'`` (removed) or ``'+'`` (added); a blank line in the patch is stored
    as the context line ``' '``. ``end_of_file`` means the removed/context lines must end the file.
    """

    header: str | None
    lines: tuple[str, ...]
    end_of_file: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "lines", tuple(self.lines))
        bad = next((line for line in self.lines if not line.startswith(_LINE_PREFIXES)), None)
        if bad is not None:
            raise ValueError(f"hunk line must start with ' ', '-' or '+': {bad!r}")

    @property
    def old_lines(self) -> list[str]:
        """The lines this hunk expects in the file (context and removed), without prefixes."""
        return [line[1:] for line in self.lines if line[0] != "+"]

    @property
    def new_lines(self) -> list[str]:
        """The lines this hunk leaves in their place (context and added), without prefixes."""
        return [line[1:] for line in self.lines if line[0] != "-"]

    def to_dict(self) -> dict[str, Any]:
        return {"header": self.header, "lines": list(self.lines), "end_of_file": self.end_of_file}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hunk:
        return cls(data.get("header"), tuple(data["lines"]), bool(data.get("end_of_file", False)))


@dataclass(frozen=True, slots=True)
class FileOp:
    """One file operation of a patch: add, delete, or update (optionally moving the file).

    Invariants (checked on construction): ``op`` is one of ``"add" | "delete" | "update"``; only an
    add has ``content`` (the new file's full text, each line ending in ``\\n``); only an update has
    ``hunks`` (at least one, as Codex rejects an empty update) and may have ``move_to``.
    Paths are kept exactly as written in the patch; :func:`apply_patch` decides if they are safe.
    """

    op: str
    path: str
    move_to: str | None = None
    hunks: tuple[Hunk, ...] = field(default=())
    content: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "hunks", tuple(self.hunks))
        if self.op not in OPS:
            raise ValueError(f"op must be one of {OPS}, got {self.op!r}")
        if (self.op == "add") != (self.content is not None):
            raise ValueError("content is required for an add and only allowed there")
        if (self.op == "update") != bool(self.hunks):
            raise ValueError("hunks are required for an update and only allowed there")
        if self.move_to is not None and self.op != "update":
            raise ValueError("move_to is only allowed on an update")

    @property
    def target(self) -> str:
        """The path the file ends up at (``move_to`` when the update moves it)."""
        return self.move_to if self.move_to is not None else self.path

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: ``{"op", "path", "move_to", "hunks": [Hunk.to_dict()], "content"}``."""
        return {
            "op": self.op,
            "path": self.path,
            "move_to": self.move_to,
            "hunks": [hunk.to_dict() for hunk in self.hunks],
            "content": self.content,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileOp:
        """Inverse of :meth:`to_dict`."""
        return cls(
            op=data["op"],
            path=data["path"],
            move_to=data.get("move_to"),
            hunks=tuple(Hunk.from_dict(h) for h in data.get("hunks") or ()),
            content=data.get("content"),
        )


@dataclass(frozen=True, slots=True)
class ParsedPatch:
    """A whole parsed patch: its file operations and the optional 2026 ``*** Environment ID:``."""

    ops: tuple[FileOp, ...]
    environment_id: str | None = None
