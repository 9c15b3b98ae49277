"""Human- and machine-readable reports of an ingest run and of a store's contents."""

from __future__ import annotations

from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from logmine.store import Store, StoreError, fetch_dicts

_STATS_SQL = """
WITH ev AS (
    SELECT source_path, session_id, count(*) AS events,
           count(*) FILTER (WHERE kind = 'tool_call') AS tool_calls,
           count(*) FILTER (WHERE kind = 'user_message' AND NOT is_injected AND copied_from IS NULL
                            AND record_type IN ('response_item/message', 'chat/message', 'history', 'user/text')) AS user_messages
    FROM events GROUP BY ALL)
SELECT s.format, coalesce(s.cli_version, '') AS cli_version, count(*) AS sessions,
       coalesce(sum(ev.events), 0)::BIGINT AS events, coalesce(sum(ev.tool_calls), 0)::BIGINT AS tool_calls,
       coalesce(sum(ev.user_messages), 0)::BIGINT AS user_messages
FROM sessions s LEFT JOIN ev USING (source_path, session_id)
GROUP BY ALL ORDER BY s.format, cli_version
"""


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
