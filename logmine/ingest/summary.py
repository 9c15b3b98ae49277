"""What one ``logmine ingest`` run did, and its report (a table, or JSON with ``--json``).

Standard library only at import, like :mod:`.discover` and :mod:`.seen`: a run on unchanged input
reports through here without importing pyarrow or DuckDB, and its JSON to a pipe without rich.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


@dataclass
class IngestSummary:
    """Counts of one run (only what this run added, except the store totals)."""

    files_seen: int = 0
    changes: Counter = field(default_factory=Counter)  # new/grown/rewritten/unchanged/empty/bad
    bad_files: list[tuple[str, str]] = field(default_factory=list)
    pending: list[tuple[str, int]] = field(default_factory=list)  # files with an incomplete last line
    sessions: int = 0
    events: int = 0
    quarantined: int = 0
    quarantine_reasons: Counter = field(default_factory=Counter)
    bytes_read: int = 0
    redactions: Counter = field(default_factory=Counter)
    formats: Counter = field(default_factory=Counter)
    elapsed_s: float = 0.0

    @property
    def readable(self) -> bool:
        """Did anything at all come out of the inputs (rows, or files already known)?"""
        return self.files_seen > len(self.bad_files)



def summary_dict(summary: IngestSummary, store: Path) -> dict:
    return {
        "store": str(store),
        "files": {"seen": summary.files_seen, **dict(summary.changes)},
        "bad_files": [{"path": p, "reason": r} for p, r in summary.bad_files],
        "pending_partial_lines": [{"path": p, "bytes": b} for p, b in summary.pending],
        "sessions": summary.sessions,
        "events": summary.events,
        "quarantined_lines": summary.quarantined,
        "quarantine_reasons": dict(summary.quarantine_reasons),
        "redactions": dict(summary.redactions),
        "formats": dict(summary.formats),
        "bytes_read": summary.bytes_read,
        "elapsed_s": round(summary.elapsed_s, 3),
    }


def print_summary(console: Console | None, summary: IngestSummary, store: Path, as_json: bool) -> None:
    """The run's report on stdout (``console``, else a new rich console): the table, or with
    ``as_json`` the JSON as rich's ``print_json`` lays it out (written directly when stdout is not a
    terminal: the same text, without importing rich)."""
    if as_json and not sys.stdout.isatty():
        sys.stdout.write(json.dumps(summary_dict(summary, store), indent=2, ensure_ascii=False) + "\n")
        return
    if console is None:
        from rich.console import Console

        console = Console()
    if as_json:
        console.print_json(json.dumps(summary_dict(summary, store)))
    else:
        render_summary(console, summary, store)


def render_summary(console: Console, summary: IngestSummary, store: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    changes = summary.changes
    table = Table(title="logmine ingest", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("files", f"{summary.files_seen} seen: {changes['new']} new, {changes['grown']} grown, "
                  f"{changes['rewritten']} rewritten, {changes['unchanged']} unchanged, "
                  + (f"{changes['empty']} empty, " if changes["empty"] else "") + f"{len(summary.bad_files)} bad")
    formats = ", ".join(f"{k} {v}" for k, v in sorted(summary.formats.items())) or "-"
    table.add_row("formats read", formats)
    table.add_row("sessions", str(summary.sessions))
    table.add_row("events", str(summary.events))
    reasons = ", ".join(f"{k} {v}" for k, v in summary.quarantine_reasons.most_common()) or ""
    table.add_row("quarantined lines", f"{summary.quarantined}" + (f" ({reasons})" if reasons else ""))
    redactions = ", ".join(f"{k} {v}" for k, v in summary.redactions.most_common()) or "none"
    table.add_row("redactions", f"{sum(summary.redactions.values())} ({redactions})" if summary.redactions else "none")
    mb = summary.bytes_read / 1e6
    rate = mb / summary.elapsed_s if summary.elapsed_s else 0.0
    table.add_row("read", f"{mb:.1f} MB in {summary.elapsed_s:.2f} s ({rate:.1f} MB/s)")
    table.add_row("store", str(store))
    console.print(table)
    for path, reason in summary.bad_files:
        console.print(f"[yellow]bad file[/] {escape(path)}: {escape(reason)}", highlight=False, soft_wrap=True)
    for path, size in summary.pending:
        console.print(f"[dim]waiting[/] {escape(path)}: last line incomplete ({size} bytes), read on the next run",
                      highlight=False, soft_wrap=True)
