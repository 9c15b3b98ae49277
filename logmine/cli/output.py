"""Where the CLI writes: ``out`` (results, stdout) and ``err`` (progress, errors, stderr), and the
progress bars every long command shows on a terminal."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

out = Console()
err = Console(stderr=True)


def counting_progress(label: str, unit: str, show: bool) -> tuple[Progress, Callable[[int, int], None]]:
    """A progress bar over counted items and the ``(done, total)`` callback that drives it; drawn only
    when ``show`` and stderr is a terminal."""
    progress = Progress(TextColumn(label), BarColumn(), TextColumn(f"{{task.completed}}/{{task.total}} {unit}"),
                        TimeRemainingColumn(), console=err, disable=not (show and err.is_terminal), transient=True)
    task = progress.add_task(label, total=None)
    return progress, lambda done, total: progress.update(task, completed=done, total=total)


def bytes_progress(label: str, show: bool) -> tuple[Progress, Callable[[int], None], Callable[[int], None]]:
    """A progress bar over bytes, its ``(total)`` callback and its ``(bytes just done)`` callback."""
    progress = Progress(TextColumn(label), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                        TimeRemainingColumn(), console=err, disable=not (show and err.is_terminal), transient=True)
    task = progress.add_task(label, total=None)
    return progress, lambda n: progress.update(task, total=n), lambda n: progress.advance(task, n)


def num(value: float | None) -> str:
    """A metric in a table cell: four decimals, ``-`` when absent."""
    return "-" if value is None else f"{value:.4f}"
