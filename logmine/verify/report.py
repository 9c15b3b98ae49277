"""Reports of a verify run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from logmine.store import Store, fetch_dicts
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


def environment_counts(store: Store) -> dict:
    """Verified tasks by how their environment was provided, and by language (``logmine stats``)."""
    con = store.con
    modes = dict(con.execute("SELECT coalesce(mode, 'none'), count(*) FROM environments GROUP BY ALL ORDER BY 2 DESC")
                 .fetchall())
    languages = dict(con.execute("SELECT lang, count(*) FROM (SELECT unnest(languages) AS lang FROM environments) "
                                 "GROUP BY ALL ORDER BY 2 DESC").fetchall())
    return {"by_mode": modes, "by_language": languages}


def environment_of(store: Store, task_id: str) -> dict | None:
    """The ``environments`` row of ``task_id`` (its latest verification), or None."""
    rows = fetch_dicts(store.con.execute(
        "SELECT * FROM environments WHERE task_id = ? ORDER BY verify_gen DESC LIMIT 1", [task_id]))
    return rows[0] if rows else None


def render_environment(console: Console, row: dict) -> None:
    """One task's environment: what it needs (detected) and how verify provided it."""
    table = Table("field", "value", title=f"environment of {row['task_id']}", title_justify="left")
    for name in ("languages", "manifests", "tools", "interpreters", "venvs", "runners"):
        table.add_row(name, ", ".join(row[name] or []) or "-")
    table.add_row("versions", row["versions"] or "{}")
    table.add_row("mode", f"{row['mode']} ({row['mode_reason']})" if row["mode_reason"] else str(row["mode"]))
    if row["recipe_key"]:
        table.add_row("recipe", f"{row['recipe_key']} on {row['base_image']}"
                      + (" (cached)" if row["cached"] else f", built in {row['provide_s'] or 0:.1f} s"))
    for bind in row["binds"] or []:
        table.add_row("bind", bind)
    for note in row["notes"] or []:
        table.add_row("note", note)
    console.print(table)
