"""Human- and machine-readable reports of an ingest run and of a store's contents."""

from __future__ import annotations

from pathlib import Path

import duckdb
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from logmine.ingest.run import IngestSummary
from logmine.store import Store, StoreError, fetch_dicts

_STATS_SQL = """
WITH ev AS (
    SELECT source_path, session_id, count(*) AS events,
           count(*) FILTER (WHERE kind = 'tool_call') AS tool_calls,
           count(*) FILTER (WHERE kind = 'user_message' AND NOT is_injected
                            AND record_type IN ('response_item/message', 'chat/message', 'history')) AS user_messages
    FROM events GROUP BY ALL)
SELECT s.format, coalesce(s.cli_version, '') AS cli_version, count(*) AS sessions,
       coalesce(sum(ev.events), 0)::BIGINT AS events, coalesce(sum(ev.tool_calls), 0)::BIGINT AS tool_calls,
       coalesce(sum(ev.user_messages), 0)::BIGINT AS user_messages
FROM sessions s LEFT JOIN ev USING (source_path, session_id)
GROUP BY ALL ORDER BY s.format, cli_version
"""


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


def render_summary(console: Console, summary: IngestSummary, store: Path) -> None:
    changes = summary.changes
    table = Table(title="logmine ingest", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("files", f"{summary.files_seen} seen: {changes['new']} new, {changes['grown']} grown, "
                  f"{changes['rewritten']} rewritten, {changes['unchanged']} unchanged, {len(summary.bad_files)} bad")
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


def stats(store: Path) -> dict:
    """Sessions, events, tool calls and genuine user messages by format and CLI version."""
    with Store(store, read_only=True) as opened:
        try:
            rows = fetch_dicts(opened.con.execute(_STATS_SQL))
            quarantined = opened.con.execute("SELECT count(*) FROM quarantine").fetchone()[0]
        except duckdb.Error as exc:
            raise StoreError(f"cannot read store {store}: {exc}") from exc
    return {"by_version": rows, "quarantined_lines": quarantined}


def render_stats(console: Console, counts: dict, store: Path) -> None:
    table = Table(title=f"logmine store {store}", title_justify="left")
    for name in ("format", "cli version", "sessions", "events", "tool calls", "user messages"):
        table.add_column(name, justify="left" if name in ("format", "cli version") else "right")
    for row in counts["by_version"]:
        table.add_row(row["format"], row["cli_version"] or "-", str(row["sessions"]), str(row["events"]),
                      str(row["tool_calls"]), str(row["user_messages"]))
    console.print(table)
    console.print(f"quarantined lines: {counts['quarantined_lines']}")
