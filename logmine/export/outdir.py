"""What the exports share about their output: the directory built aside and moved into place whole,
a card whose counts are small Markdown tables, and the bookkeeping of tasks not exported."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def staged(out: Path, error: Callable[[str], Exception]) -> Iterator[Path]:
    """A new directory beside ``out`` to write an export into: moved into place as ``out`` when the
    block ends without an exception (:func:`move_into_place`), removed in any case. An ``OSError``
    (making it, writing it, moving it) becomes ``error(message)``."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    except OSError as exc:
        raise error(f"cannot write to {out.parent}: {exc.strerror}") from exc
    try:
        yield staging
        move_into_place(staging, out)
    except OSError as exc:
        raise error(f"cannot write {out}: {exc.strerror or exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def move_into_place(staging: Path, out: Path) -> None:
    """Replace ``out`` by the finished ``staging`` directory (its sibling): an export interrupted
    before this leaves the previous output, or none, never a partial one. Raises ``OSError``."""
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
        staging.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(out)


def markdown_table(header: str, rows: Iterable[Iterable[object]]) -> str:
    """``rows`` under ``header`` (``"| a | b |"``) as a Markdown table; ``"a: none"`` when empty."""
    rows = list(rows)
    if not rows:
        return f"{header.strip('| ').split(' |')[0]}: none\n"
    cells = ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |\n" for row in rows]
    return header + "\n" + "|---" * (header.count("|") - 1) + "|\n" + "".join(cells)


NOT_CHOSEN = ("no validated verifier", "no verifier candidate")  # never meant for an export


def note_skip(summary: Any, task_id: str, reason: str, rejected: tuple[str, ...]) -> None:
    """Count a task not exported under its reason's head (before the first ``:``) in
    ``summary.skipped``; a reason starting with one of ``rejected`` (the export's own checks failed)
    also goes to ``summary.rejects``, and any task chosen for the export to ``summary.not_exported``."""
    summary.skipped[reason.split(":")[0]] += 1
    if reason.startswith(rejected):
        summary.rejects.append((task_id, reason))
    if not reason.startswith(NOT_CHOSEN):
        summary.not_exported.append((task_id, reason))
