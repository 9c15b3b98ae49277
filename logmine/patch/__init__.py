"""Codex's ``apply_patch`` format: parse it (for ingest) and apply it (for the replay sandbox).

One implementation serves both sides, so an edit that ingest reads is the edit the sandbox makes.
Behaviour follows ``codex-rs/apply-patch`` (parser.rs, seek_sequence.rs, lib.rs); where this
module departs from Codex, the function's docstring says so.

    ops = parse_patch(extract_patch(command))   # ingest: a shell command or tool input
    apply_patch(ops, Path(workdir))              # sandbox: -> [("M", "calc.py")]

``python -m logmine.patch`` is the ``apply_patch`` command itself (see :func:`main`).
"""

from ._apply import apply_hunks, apply_patch, rooted, within
from ._cli import main
from ._extract import extract_patch
from ._model import FileOp, Hunk, ParsedPatch, PatchError
from ._parse import parse_patch, parse_patch_document, render_patch
from ._text import REDACTED_MARK, seek_sequence

__all__ = [
    "REDACTED_MARK",
    "FileOp",
    "Hunk",
    "ParsedPatch",
    "PatchError",
    "apply_hunks",
    "apply_patch",
    "extract_patch",
    "main",
    "parse_patch",
    "parse_patch_document",
    "render_patch",
    "rooted",
    "seek_sequence",
    "within",
]
