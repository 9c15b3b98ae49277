"""``logmine eval``: pass@k over a TMax task set, with bootstrap intervals and the solved-task list.

n rollouts per task (the GRPO harness and sandbox); per task c = rollouts with reward 1 among the
scored ones, and pass@k is computed with the unbiased estimator on (scored n, c). Unscored rollouts
shrink a task's n; a task with fewer than k scored rollouts is left out of that k's mean and counted.
Writes ``out/eval.json`` and ``out/samples.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from logmine.evaluate.passk import bootstrap_ci, mean_pass_at_k
from logmine.evaluate.sampling import SampleConfig, SamplingError, sample_all
from logmine.executor import ExecutorConfig
from logmine.redact import write_text


def evaluate(config: SampleConfig, ks: tuple[int, ...], progress: Callable[[int, int], None] | None = None,
             executor: ExecutorConfig | None = None) -> dict:
    """The report (also written to ``out/eval.json``)."""
    bad = [k for k in ks if not 1 <= k <= config.samples]
    if bad:
        raise SamplingError(f"every k must be between 1 and n={config.samples}, got {', '.join(map(str, bad))}")
    tasks, samples = sample_all(config, progress, executor)
    counts = {t.task_id: (len(samples[t.task_id].scored), samples[t.task_id].correct) for t in tasks}
    report = {
        "model": str(config.model), "data": str(config.data), "tasks": len(tasks), "n": config.samples,
        "temperature": config.temperature,
        "unscored_rollouts": sum(len(s.rewards) - len(s.scored) for s in samples.values()),
        "pass_at_k": {},
        "solved": sorted(task for task, (_, c) in counts.items() if c > 0),
        "per_task": {task: {"n": n, "correct": c} for task, (n, c) in counts.items()},
    }
    for k in ks:
        values = list(counts.values())
        ci = bootstrap_ci(values, k, seed=config.seed)
        report["pass_at_k"][str(k)] = {"mean": mean_pass_at_k(values, k), "ci95": list(ci) if ci else None,
                                       "tasks": sum(n >= k for n, _ in values),
                                       "too_few_samples": sum(n < k for n, _ in values)}
    write_text(Path(config.out, "eval.json"), json.dumps(report, indent=2) + "\n", json=True)
    return report
