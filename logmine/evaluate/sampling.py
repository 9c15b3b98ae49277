"""K rollouts per task with one policy, resumable: what ``logmine filter`` and ``logmine eval`` share.

Results go to ``out/samples.jsonl``, one line per task once its K rollouts are done (task id,
rewards, unscored reasons, ends, turns). A rerun with the same ``out`` skips the tasks already
there, so an interrupted run continues where it stopped; a different K or model in the same
directory is refused (``config.json`` records them).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from logmine.agent.policy import PolicyError, load_policy, make_engine
from logmine.agent.rollout import run_rollouts
from logmine.agent.settings import RolloutSettings, check_rollout_settings, env_config, rollout_config
from logmine.agent.tasks import RlTask, TaskSetError, load_tasks
from logmine.config import check_positive_ints, config_dict
from logmine.errors import LogmineError
from logmine.redact import JsonLines, redact_value, write_text

SAMPLES = "samples.jsonl"


class SamplingError(LogmineError, RuntimeError):
    """The run cannot start: no tasks, no model, an output directory of another run."""


@dataclass(frozen=True, slots=True)
class SampleConfig(RolloutSettings):  # the rollout fields are RolloutSettings', shared with train grpo
    data: Path  # a TMax directory (`logmine export tmax` output)
    model: Path  # a local model directory with its tokenizer
    out: Path
    samples: int = 8  # rollouts per task
    seed: int = 0
    batch_tasks: int = 8  # tasks rolled out together (their K rollouts each)

    def validate(self) -> None:
        check_rollout_settings(self)
        check_positive_ints(self, ("samples", "batch_tasks"))


@dataclass(frozen=True, slots=True)
class TaskSamples:
    task_id: str
    rewards: tuple[float | None, ...]  # None: unscored
    unscored: tuple[str, ...]  # the reasons, one per unscored rollout
    ends: tuple[str, ...]
    turns: tuple[int, ...]

    @property
    def scored(self) -> list[float]:
        return [r for r in self.rewards if r is not None]

    @property
    def correct(self) -> int:
        return sum(r >= 1.0 for r in self.scored)

    @property
    def pass_rate(self) -> float | None:
        return self.correct / len(self.scored) if self.scored else None

    def line(self) -> str:
        """The task's line of ``samples.jsonl``."""
        return json.dumps({"task_id": self.task_id, "rewards": self.rewards, "unscored": self.unscored,
                           "ends": self.ends, "turns": self.turns}) + "\n"

    @classmethod
    def from_line(cls, line: str) -> TaskSamples:
        """Raises json.JSONDecodeError for a line cut by an interruption."""
        row = json.loads(line)
        return cls(row["task_id"], tuple(row["rewards"]), tuple(row["unscored"]), tuple(row["ends"]),
                   tuple(row["turns"]))


def sample_all(config: SampleConfig, progress: Callable[[int, int], None] | None = None,
               ) -> tuple[list[RlTask], dict[str, TaskSamples]]:
    """Every task's K rollouts (from ``out/samples.jsonl`` when already done); returns (tasks, samples)."""
    try:
        tasks = load_tasks(config.data)
    except TaskSetError as exc:
        raise SamplingError(str(exc)) from exc
    done = _prepare(config)
    try:
        policy = load_policy(config.model, config.apply_patch)
        engine = make_engine(config.engine, policy, config.model, config.seed)
    except PolicyError as exc:
        raise SamplingError(str(exc)) from exc
    todo = [t for t in tasks if t.task_id not in done]
    if progress:
        progress(len(tasks) - len(todo), len(tasks))
    with JsonLines(config.out / SAMPLES) as sink:
        for start in range(0, len(todo), config.batch_tasks):
            chunk = todo[start:start + config.batch_tasks]
            torch.manual_seed(config.seed * 1_000_003 + len(done))
            jobs = [(task, k) for task in chunk for k in range(config.samples)]
            rollouts = run_rollouts(jobs, engine, policy.fmt, rollout_config(config), env_config(config),
                                    policy.max_context)
            for i, task in enumerate(chunk):
                mine = rollouts[i * config.samples:(i + 1) * config.samples]
                result = TaskSamples(task.task_id, tuple(r.reward for r in mine),
                                     tuple(r.unscored for r in mine if r.unscored), tuple(r.end for r in mine),
                                     tuple(r.turns for r in mine))
                done[task.task_id] = result
                sink.write(json.loads(result.line()))
            if progress:
                progress(len(tasks) - len(todo) + start + len(chunk), len(tasks))
    return tasks, {t.task_id: done[t.task_id] for t in tasks}


def _prepare(config: SampleConfig) -> dict[str, TaskSamples]:
    """Create ``out`` (or check it belongs to this run) and read the tasks already sampled."""
    # every setting that changes what a rollout is (not where results go, nor how many run at once)
    key = redact_value({k: v for k, v in config_dict(config).items() if k not in ("out", "rollout_workers")})
    marker = config.out / "config.json"
    if marker.exists():
        recorded = json.loads(marker.read_text())
        if {k: recorded.get(k) for k in key} != key:
            raise SamplingError(f"{config.out} holds a run with other settings "
                                f"({', '.join(k for k in key if recorded.get(k) != key[k])} differ); use another --out")
    else:
        config.out.mkdir(parents=True, exist_ok=True)
        write_text(marker, json.dumps(key, indent=2) + "\n", json=True)
    done = {}
    path = config.out / SAMPLES
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                samples = TaskSamples.from_line(line)
            except json.JSONDecodeError:  # a line cut by an interruption: that task is sampled again
                continue
            done[samples.task_id] = samples
        write_text(path, "".join(s.line() for s in done.values()))
    return done
