"""K rollouts per task with one policy, resumable: what ``logmine filter`` and ``logmine eval`` share.

Results go to ``out/samples.jsonl``, one line per task once its K rollouts are done (task id,
rewards, unscored reasons, ends, turns). A rerun with the same ``out`` skips the tasks already
there, so an interrupted run continues where it stopped; a different K or model in the same
directory is refused (``config.json`` records them).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from logmine.agent.policy import PolicyError, load_policy, make_engine
from logmine.agent.rollout import run_rollouts
from logmine.agent.settings import RolloutSettings, check_rollout_settings, env_config, rollout_config
from logmine.agent.tasks import RlTask, TaskSetError, load_tasks
from logmine.config import check_positive_ints, config_dict
from logmine.errors import LogmineError
from logmine.executor import ExecutorConfig, make_executor, paths_unreadable
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
               executor: ExecutorConfig | None = None) -> tuple[list[RlTask], dict[str, TaskSamples]]:
    """Every task's K rollouts (from ``out/samples.jsonl`` when already done); returns (tasks, samples).

    With a Ray ``executor`` each task's K rollouts are one unit on the cluster: a worker loads the
    policy once (per process) and sends the task's results back; this process writes them.
    """
    try:
        tasks = load_tasks(config.data)
    except TaskSetError as exc:
        raise SamplingError(str(exc)) from exc
    done = _prepare(config)
    todo = [t for t in tasks if t.task_id not in done]
    if progress:
        progress(len(tasks) - len(todo), len(tasks))
    remote = executor is not None and executor.kind != "local"
    results = _sample_remote(config, todo, executor) if remote else _sample_here(config, todo, len(done))
    with JsonLines(config.out / SAMPLES) as sink:
        for count, result in enumerate(results, 1):
            done[result.task_id] = result
            sink.write(json.loads(result.line()))
            if progress:
                progress(len(tasks) - len(todo) + count, len(tasks))
    return tasks, {t.task_id: done[t.task_id] for t in tasks}


def _policy(config: SampleConfig):
    try:
        policy = load_policy(config.model, config.apply_patch)
        return policy, make_engine(config.engine, policy, config.model, config.seed)
    except PolicyError as exc:
        raise SamplingError(str(exc)) from exc


def _samples(task: RlTask, rollouts) -> TaskSamples:
    return TaskSamples(task.task_id, tuple(r.reward for r in rollouts), tuple(r.unscored for r in rollouts if r.unscored),
                       tuple(r.end for r in rollouts), tuple(r.turns for r in rollouts))


def _sample_here(config: SampleConfig, todo: list[RlTask], already: int) -> Iterator[TaskSamples]:
    """Batches of ``batch_tasks`` tasks rolled out together in this process."""
    policy, engine = _policy(config)
    for start in range(0, len(todo), config.batch_tasks):
        chunk = todo[start:start + config.batch_tasks]
        torch.manual_seed(config.seed * 1_000_003 + already + start)
        jobs = [(task, k) for task in chunk for k in range(config.samples)]
        rollouts = run_rollouts(jobs, engine, policy.fmt, rollout_config(config), env_config(config),
                                policy.max_context)
        for i, task in enumerate(chunk):
            yield _samples(task, rollouts[i * config.samples:(i + 1) * config.samples])


def _sample_remote(config: SampleConfig, todo: list[RlTask], executor: ExecutorConfig) -> Iterator[TaskSamples]:
    runner = make_executor(executor)
    try:
        runner.check_nodes(functools.partial(paths_unreadable, (str(config.model), str(config.data))))
        units = [(config, task, i) for i, task in enumerate(todo)]
        for done in runner.map(_sample_unit, units):
            if done.error is not None:
                raise SamplingError(f"sampling {todo[done.index].task_id} failed on {done.placement}: {done.error}")
            yield done.result
    finally:
        runner.close()


_WORKER_POLICIES: dict[tuple, tuple] = {}  # per worker process: the policy of each model loaded


def _worker_policy(config: SampleConfig):
    key = (str(config.model), config.apply_patch, config.engine, config.seed)
    if key not in _WORKER_POLICIES:
        _WORKER_POLICIES[key] = _policy(config)
    return _WORKER_POLICIES[key]


def _sample_unit(unit: tuple[SampleConfig, RlTask, int]) -> TaskSamples:
    """One task's K rollouts on an executor's worker (the policy loaded once per worker process)."""
    config, task, index = unit
    policy, engine = _worker_policy(config)
    torch.manual_seed(config.seed * 1_000_003 + index)
    rollouts = run_rollouts([(task, k) for k in range(config.samples)], engine, policy.fmt, rollout_config(config),
                            env_config(config), policy.max_context)
    return _samples(task, rollouts)


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
