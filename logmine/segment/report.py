"""Reports of a segment run."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from logmine.segment.run import SegmentSummary


def segment_summary_dict(summary: SegmentSummary, store: Path) -> dict:
    return {
        "store": str(store),
        "sessions": {"seen": summary.sessions_seen, "segmented": summary.sessions_segmented},
        "sessions_without_task": dict(summary.no_task_reasons),
        "tasks": summary.tasks,
        "candidates": dict(summary.candidates),
        "fail_to_pass": summary.fail_to_pass,
        "tasks_without_candidate": dict(summary.without_candidate),
        "tasks_not_rebuildable": summary.not_rebuildable,
        "off_branch": dict(summary.off_branch),
        "elapsed_s": round(summary.elapsed_s, 3),
    }


def render_segment_summary(console: Console, summary: SegmentSummary, store: Path) -> None:
    table = Table(title="logmine segment", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    unchanged = summary.sessions_seen - summary.sessions_segmented
    table.add_row("sessions", f"{summary.sessions_seen} seen: {summary.sessions_segmented} segmented, "
                  f"{unchanged} unchanged")
    table.add_row("sessions without a task", _counts(summary.no_task_reasons))
    table.add_row("tasks", str(summary.tasks))
    table.add_row("candidates", _counts(summary.candidates))
    table.add_row("fail → pass", str(summary.fail_to_pass))
    table.add_row("tasks without a candidate", _counts(summary.without_candidate))
    table.add_row("tasks not rebuildable", str(summary.not_rebuildable))
    if summary.off_branch:
        off = summary.off_branch
        table.add_row("off the active branch", f"{off['sessions']} Claude Code sessions: {off['lines']} lines, "
                      f"{off['requests']} requests, {off['tool_calls']} tool calls (in no task)")
    table.add_row("store", str(store))
    console.print(table)


def _counts(counter) -> str:
    total = sum(counter.values())
    if not total:
        return "0"
    return f"{total} (" + ", ".join(f"{k} {v}" for k, v in counter.most_common()) + ")"
