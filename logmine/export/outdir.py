"""What every export's output directory shares: built aside, moved into place whole, and a card
whose counts are small Markdown tables."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path


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
