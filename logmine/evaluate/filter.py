"""``logmine filter``: keep the tasks that give GRPO a learning signal for *this* policy.

K rollouts per task (:mod:`logmine.evaluate.sampling`, the GRPO harness and sandbox); a task's pass
rate is its correct share of the *scored* rollouts (unscored ones — infrastructure failures — are
left out, never counted as failures). Kept: ``low < pass_rate < high`` (default 0 < p < 1: a group
with both passes and failures has non-zero advantages). A task with no scored rollout has no rate
and is not kept.

Writes ``out/pass_rates.parquet`` (task_id, samples, scored, unscored, correct, pass_rate,
reward_mean, reward_var, kept) and ``out/filtered/`` — a TMax directory of the kept rows (the
input's rows unchanged) with their bundles — ready for ``logmine train grpo --data out/filtered``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from logmine.evaluate.sampling import SampleConfig, SamplingError, TaskSamples, sample_all
from logmine.executor import ExecutorConfig
from logmine.redact import write_table

PASS_RATES = pa.schema([("task_id", pa.string()), ("samples", pa.int32()), ("scored", pa.int32()),
                        ("unscored", pa.int32()), ("correct", pa.int32()), ("pass_rate", pa.float64()),
                        ("reward_mean", pa.float64()), ("reward_var", pa.float64()), ("kept", pa.bool_())])


@dataclass
class FilterSummary:
    tasks: int = 0
    kept: int = 0
    never: int = 0  # pass rate 0
    always: int = 0  # pass rate 1
    no_rate: int = 0  # every rollout unscored
    unscored: int = 0  # rollouts
    rates: list[float] = field(default_factory=list)
    out: Path | None = None


def filter_tasks(config: SampleConfig, low: float = 0.0, high: float = 1.0,
                 progress: Callable[[int, int], None] | None = None,
                 executor: ExecutorConfig | None = None) -> FilterSummary:
    if not 0 <= low < high <= 1:
        raise SamplingError(f"need 0 <= low < high <= 1, got low={low}, high={high}")
    tasks, samples = sample_all(config, progress, executor)
    rows = [_row(samples[t.task_id], low, high) for t in tasks]
    write_table(pa.Table.from_pylist(rows, schema=PASS_RATES), config.out / "pass_rates.parquet")
    kept = {r["task_id"] for r in rows if r["kept"]}
    _write_filtered(config.data, config.out / "filtered", kept)
    rates = [r["pass_rate"] for r in rows if r["pass_rate"] is not None]
    return FilterSummary(tasks=len(rows), kept=len(kept), never=sum(r == 0 for r in rates),
                         always=sum(r == 1 for r in rates), no_rate=len(rows) - len(rates),
                         unscored=sum(r["unscored"] for r in rows), rates=rates, out=config.out)


def _row(s: TaskSamples, low: float, high: float) -> dict:
    scored = s.scored
    rate = s.pass_rate
    return {"task_id": s.task_id, "samples": len(s.rewards), "scored": len(scored),
            "unscored": len(s.rewards) - len(scored), "correct": s.correct, "pass_rate": rate,
            "reward_mean": float(np.mean(scored)) if scored else None,
            "reward_var": float(np.var(scored)) if scored else None,
            "kept": rate is not None and low < rate < high}


def _write_filtered(data: Path, dest: Path, kept: set[str]) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "data").mkdir(parents=True)
    (dest / "tasks").mkdir()
    for i, file in enumerate(sorted((Path(data) / "data").glob("*.parquet"))):
        table = pq.read_table(file)
        table = table.filter(pc.is_in(table.column("ground_truth"), pa.array(sorted(kept), pa.string())))
        write_table(table, dest / "data" / f"train-{i:05d}.parquet")
    for task_id in sorted(kept):
        shutil.copytree(Path(data) / "tasks" / task_id, dest / "tasks" / task_id, symlinks=True)
