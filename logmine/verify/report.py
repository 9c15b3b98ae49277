"""Reports of a verify run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from logmine.verify.records import STATUSES
from logmine.verify.run import VerifySummary


def verify_summary_dict(summary: VerifySummary, store: Path) -> dict:
    by_kind: dict[str, dict[str, int]] = {}
    for (kind, status), n in summary.statuses.items():
        by_kind.setdefault(kind, {})[status] = n
    return {
        "store": str(store),
        "tasks": summary.tasks,
        "rebuilt": summary.rebuilt,
        "not_rebuilt": dict(summary.not_rebuilt),
        "candidates": by_kind,
        "validated": sum(n for (_, status), n in summary.statuses.items() if status == "validated"),
        "elapsed_s": round(summary.elapsed_s, 3),
    }


def render_verify_summary(console: Console, summary: VerifySummary, store: Path) -> None:
    table = Table(title="logmine verify", title_justify="left")
    table.add_column("candidates")
    for status in STATUSES:
        table.add_column(status.replace("_", " "), justify="right")
    kinds = sorted({kind for kind, _ in summary.statuses})
    for kind in kinds:
        table.add_row(kind, *(str(summary.statuses[(kind, s)]) for s in STATUSES))
    console.print(table)
    console.print(f"tasks: {summary.tasks} verified, {summary.rebuilt} rebuilt"
                  + (f"; not rebuilt: {_counts(summary.not_rebuilt)}" if summary.not_rebuilt else ""),
                  highlight=False, soft_wrap=True)
    console.print(f"store: {store}  ({summary.elapsed_s:.1f} s)", highlight=False, soft_wrap=True)


def _counts(counter: Counter) -> str:
    return ", ".join(f"{reason} ({n})" for reason, n in counter.most_common())
