"""The RL task set: a ``logmine export tmax`` directory (or any directory laid out the same way:
``data/*.parquet`` rows in TMax's schema, ``tasks/<task_id>/`` bundles)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from logmine.errors import LogmineError


class TaskSetError(LogmineError, ValueError):
    """The directory is not a TMax export (no rows, a row without its bundle)."""


@dataclass(frozen=True, slots=True)
class RlTask:
    task_id: str
    messages: tuple[dict, ...]  # [system, user] as in the row
    bundle: Path  # tasks/<task_id>: environment/seeds becomes /workspace, tests/ arrives at submission


def load_tasks(data: Path) -> list[RlTask]:
    """Every row of ``data/data/*.parquet`` (sorted by file, then row order) with its bundle."""
    files = sorted((Path(data) / "data").glob("*.parquet"))
    if not files:
        raise TaskSetError(f"no TMax rows in {data} (expected data/*.parquet from `logmine export tmax`)")
    tasks = []
    for file in files:
        try:
            rows = pq.read_table(file, columns=["messages", "ground_truth"]).to_pylist()
        except (OSError, ValueError, KeyError) as exc:  # pyarrow's errors derive from these
            raise TaskSetError(f"cannot read the TMax rows in {file}: {str(exc).splitlines()[0]}") from exc
        for row in rows:
            bundle = Path(data) / "tasks" / row["ground_truth"]
            if not (bundle / "tests" / "test.sh").is_file():
                raise TaskSetError(f"task {row['ground_truth']} has no bundle with tests/test.sh under "
                                   f"{data / 'tasks'}")
            messages = tuple({"role": m["role"], "content": m["content"]} for m in row["messages"])
            tasks.append(RlTask(row["ground_truth"], messages, bundle))
    if not tasks:
        raise TaskSetError(f"the TMax rows in {data} are empty")
    return tasks
