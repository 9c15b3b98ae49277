"""``logmine train grpo``: multi-turn GRPO with DPPO masking on TMax tasks, rollouts in the sandbox.

    summary = train_grpo(load_config(Path("train/grpo-dppo.yaml"), {"data": D, "model": M, "out": OUT},
                                     kind=GrpoTrainConfig))

One step: draw ``prompts_per_step`` tasks → ``group_size`` rollouts each (:mod:`logmine.agent`: a
``bash`` agent in a bubblewrap sandbox, graded by the bundle's hidden tests at submission) → group
advantages over the scored rollouts → drop zero-variance groups and, with ``active_sampling``, draw
further tasks until the batch is full or ``max_draws_per_step`` is reached → ``num_minibatches``
optimizer steps on the policy loss (:mod:`logmine.train.rl_loss`) → the engine samples from the new
weights.

Departures from textbook GRPO (each a config key):

- The loss is DPPO by default (TMax): ratio π/μ against the *sampler's* log-probs, no clip, tokens
  masked only when outside the binary-TV region and moving further out. ``loss: grpo`` is the clipped
  PPO surrogate (DAPO clip-higher) against π_old.
- Advantages are centered (r − mean, no std division, TMax/Dr.GRPO); ``standard`` divides by the std.
- Multi-turn: the loss covers only the tokens the policy sampled; tool observations are in the
  sequence (context) but masked out. Token-mean over the minibatch's sampled tokens; DPPO-masked
  tokens stay in the denominator.
- Unscored rollouts (sandbox or grader infrastructure failures) are not rewards of 0: they are out of
  the baseline and the loss, and counted (``unscored``).
- On-policy replacement: with one minibatch the old log-probs are the detached live ones (ratio ≡ 1).
  With more minibatches, π_old comes from one no-grad pass before the first update.
- Rollout correction for the grpo loss: truncated IS (token or sequence) against the sampler, and/or
  sequence masking (MIS); metrics always report the sampler–trainer log-prob mismatch.
- Optional k3 KL to the initial policy (β, default 0, always logged) and an ECHO-style observation
  prediction loss (``echo_weight``, default 0).
- Sampling temperature is applied to the trainer's logits too, so μ and π are the same distribution.

Run directory: ``config.json``; ``metrics.jsonl`` (one row per step); ``rollouts.jsonl`` (every
rollout: task, reward, end, turns, commands, token ids); ``checkpoints/step-N/`` (``model/`` plus
``trainer_state.pt``: optimizer, scheduler, RNG, the task sampler's position); ``final/`` (model +
tokenizer). ``resume`` continues from the latest checkpoint. Single process (no DDP for GRPO yet). The
run directory's handling is shared with SFT (:mod:`logmine.train.run_dir`); the policy and its
engine come from :mod:`logmine.agent.policy`, as for ``filter`` and ``eval``.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from logmine.agent.policy import Policy, PolicyError, load_policy, make_engine
from logmine.agent.rollout import Rollout, run_rollouts
from logmine.agent.settings import env_config, rollout_config
from logmine.agent.tasks import RlTask, TaskSetError, load_tasks
from logmine.train.grpo_config import GrpoTrainConfig
from logmine.train.rl_batch import collate, micro_batches, sequences, token_logprobs
from logmine.train.rl_loss import group_advantages, kl_k3, policy_loss, sequence_is_keep, truncated_is_weights
from logmine.train.run_dir import (
    METRICS,
    JsonlLog,
    TrainError,
    claim_run_dir,
    latest_state,
    lr_schedule,
    restore_rng,
    rng_state,
    save_checkpoint,
    truncate_logs,
)

ROLLOUTS = "rollouts.jsonl"


@dataclass
class GrpoSummary:
    steps: int = 0
    resumed_from: int = 0
    rollouts: int = 0
    unscored: int = 0
    rewards: list[float] = field(default_factory=list)  # mean reward per step of this invocation
    out: Path | None = None
    elapsed_s: float = 0.0


class TaskSampler:
    """Tasks in a fresh seeded permutation per epoch; ``drawn`` (the position) is the resumable state."""

    def __init__(self, tasks: list[RlTask], seed: int, drawn: int = 0) -> None:
        self.tasks, self.seed, self.drawn = tasks, seed, drawn

    def draw(self, n: int) -> list[RlTask]:
        out = []
        for _ in range(n):
            epoch, index = divmod(self.drawn, len(self.tasks))
            order = list(range(len(self.tasks)))
            random.Random(self.seed * 7919 + epoch).shuffle(order)
            out.append(self.tasks[order[index]])
            self.drawn += 1
        return out


def train_grpo(config: GrpoTrainConfig, on_metrics: Callable[[dict], None] | None = None) -> GrpoSummary:
    """Run ``config.max_steps`` GRPO steps; see the module docstring."""
    started = time.monotonic()
    torch.manual_seed(config.seed)
    try:
        tasks = load_tasks(config.data)
    except TaskSetError as exc:
        raise TrainError(str(exc)) from exc
    try:
        policy = load_policy(config.model, config.apply_patch)
        model = policy.model.to("cuda" if torch.cuda.is_available() else "cpu")
        engine = make_engine(config.engine, policy, config.model, config.seed)
    except PolicyError as exc:
        raise TrainError(str(exc)) from exc
    reference = copy.deepcopy(model).eval().requires_grad_(False) if config.beta > 0 or config.ref_kl else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_schedule(config))
    sampler = TaskSampler(tasks, config.seed)
    start = _start(config, model, optimizer, scheduler, sampler)
    if start:
        engine.sync(model)
    summary = GrpoSummary(resumed_from=start, out=config.out)
    with (JsonlLog(config.out / METRICS) as metrics,
          JsonlLog(config.out / ROLLOUTS) if config.save_rollouts else nullcontext() as rollouts_log):
        for step in range(start + 1, config.max_steps + 1):
            torch.manual_seed(config.seed * 1_000_003 + step)  # a resumed run samples what the original would
            t0 = time.monotonic()
            groups, drawn, all_rollouts, timings = _collect(config, engine, policy, sampler)
            rollout_s = time.monotonic() - t0
            if rollouts_log:
                rollouts_log.write(*({"step": step, **_rollout_row(r)} for r in all_rollouts))
            t1 = time.monotonic()
            update = _update(config, model, reference, optimizer, scheduler, groups, policy.tokenizer.pad_token_id)
            engine.sync(model)
            row = _metrics(step, all_rollouts, drawn, groups, update, rollout_s, time.monotonic() - t1,
                           scheduler, started)
            row.update({k: round(v, 4) for k, v in timings.items()})
            summary.steps, summary.rollouts = step, summary.rollouts + len(all_rollouts)
            summary.unscored += row["unscored"]
            summary.rewards.append(row["reward_mean"])
            if step % config.log_every == 0 or step == config.max_steps:
                metrics.write(row)
                if on_metrics:
                    on_metrics(row)
            if config.save_every and step % config.save_every == 0:
                save_checkpoint(config.out / "checkpoints" / f"step-{step}", model, {
                    "step": step, "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
                    "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                    "drawn": sampler.drawn, "rng": rng_state()})
        final = config.out / "final"
        model.save_pretrained(str(final))
        policy.tokenizer.save_pretrained(str(final))
    summary.elapsed_s = time.monotonic() - started
    return summary


@dataclass
class _Group:
    rollouts: list[Rollout]
    advantages: list[float]


def _collect(config: GrpoTrainConfig, engine, policy: Policy, sampler: TaskSampler):
    """Roll out groups until ``prompts_per_step`` carry signal (or the draw limit): (kept groups, drawn, all)."""
    limit = config.max_draws_per_step or 4 * config.prompts_per_step
    kept: list[_Group] = []
    all_rollouts: list[Rollout] = []
    drawn = 0
    timings: dict[str, float] = {}
    while len(kept) < config.prompts_per_step and drawn < limit:
        want = min(config.prompts_per_step - len(kept), limit - drawn)
        tasks = sampler.draw(want)
        drawn += want
        jobs = [(task, g) for task in tasks for g in range(config.group_size)]
        rollouts = run_rollouts(jobs, engine, policy.fmt, rollout_config(config), env_config(config),
                                policy.max_context, timings=timings)
        all_rollouts += rollouts
        rewards = torch.tensor([[r.reward if r.scored else 0.0 for r in rollouts[i:i + config.group_size]]
                                for i in range(0, len(rollouts), config.group_size)], dtype=torch.float64)
        scored = torch.tensor([[r.scored for r in rollouts[i:i + config.group_size]]
                               for i in range(0, len(rollouts), config.group_size)])
        advantages, keep = group_advantages(rewards, scored, config.advantage, config.zero_std_eps)
        for g, ok in enumerate(keep.tolist()):
            if ok:
                kept.append(_Group(rollouts[g * config.group_size:(g + 1) * config.group_size],
                                   advantages[g].tolist()))
        if not config.active_sampling:
            break
    return kept[:config.prompts_per_step], drawn, all_rollouts, timings


def _update(config: GrpoTrainConfig, model, reference, optimizer, scheduler, groups: list[_Group], pad_id: int) -> dict:
    seqs = sequences(groups)
    stats: dict[str, list[float]] = {}
    grad_norms = []
    if not seqs:
        return {"grad_norm": None, "sequences": 0, "sampled_tokens": 0}
    device = next(model.parameters()).device
    fp32_head = config.dtype == "bf16" and config.fp32_lm_head
    random.Random(config.seed).shuffle(seqs)
    minibatches = [seqs[i::config.num_minibatches] for i in range(config.num_minibatches)]
    replace = config.num_minibatches == 1 and config.onpolicy_replace
    old = None if replace else _old_logprobs(config, model, minibatches, pad_id, device, fp32_head)
    for m, minibatch in enumerate(minibatches):
        if not minibatch:
            continue
        total = sum(sum(s.sampled) for s in minibatch)
        observed = sum(len(s.sampled) - sum(s.sampled) for s in minibatch)
        for micro in micro_batches(minibatch, config.micro_batch_tokens):
            batch = collate(micro, pad_id, device)
            with _autocast(config, device):
                new, entropy, plain = token_logprobs(model, batch, config.temperature, fp32_head, True,
                                                     with_plain=config.echo_weight > 0)
            trainer = new.detach() if replace else old[(m, id(micro[0]))]
            mask = batch.mask
            weights = None
            if config.rollout_mis:
                mask = mask & sequence_is_keep(trainer, batch.sampler, batch.mask, config.mis_low,
                                               config.mis_high).unsqueeze(-1)
            if config.rollout_is:
                weights = truncated_is_weights(trainer, batch.sampler, mask, config.rollout_is_cap, config.rollout_is)
            ref = None
            if reference is not None:
                with torch.no_grad(), _autocast(config, device):
                    ref, _, _ = token_logprobs(reference, batch, config.temperature, fp32_head)
            loss, metrics = policy_loss(new, trainer, batch.sampler, batch.advantages, mask, config.policy_loss(),
                                        is_weights=weights, ref_logprobs=ref if config.beta > 0 else None,
                                        denominator=float(total))
            if config.echo_weight > 0 and observed:  # mean NLL over the minibatch's observation tokens
                loss = loss - config.echo_weight * plain[batch.observation].sum() / observed
            loss.backward()
            n = int(batch.mask.sum())
            for key, value in metrics.items():
                stats.setdefault(key, []).append((float(value), n))
            stats.setdefault("entropy", []).append((float(entropy[batch.mask].mean()) if n else 0.0, n))
            diff = (trainer - batch.sampler)[batch.mask].abs()
            stats.setdefault("sampler_diff_mean", []).append((float(diff.mean()) if n else 0.0, n))
            stats.setdefault("sampler_diff_max", []).append((float(diff.max()) if n else 0.0, n))
            if ref is not None:
                kl = float(kl_k3(new.detach(), ref)[batch.mask].mean()) if n else 0.0
                stats.setdefault("kl_ref", []).append((kl, n))
            stats.setdefault("loss", []).append((float(loss.detach()), 1))
        max_norm = config.max_grad_norm if config.max_grad_norm is not None else math.inf
        grad_norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    scheduler.step()  # the schedule counts GRPO steps, whatever the number of minibatches
    return {"grad_norm": max(grad_norms), "sequences": len(seqs),
            "sampled_tokens": sum(sum(s.sampled) for s in seqs), **_reduce(stats)}


def _old_logprobs(config, model, minibatches, pad_id, device, fp32_head: bool):
    """π_old for off-policy minibatches: one no-grad pass over every micro-batch before any update."""
    saved = {}
    with torch.no_grad():
        for m, minibatch in enumerate(minibatches):
            for micro in micro_batches(minibatch, config.micro_batch_tokens):
                batch = collate(micro, pad_id, device)
                with _autocast(config, device):
                    saved[(m, id(micro[0]))], _, _ = token_logprobs(model, batch, config.temperature, fp32_head)
    return saved


def _autocast(config: GrpoTrainConfig, device):
    """bf16 autocast when ``dtype: bf16`` (policy, π_old and reference passes alike), else a no-op."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=config.dtype == "bf16")


def _reduce(stats: dict[str, list[tuple[float, int]]]) -> dict[str, float]:
    out = {}
    for key, values in stats.items():
        if key.endswith("_max"):
            out[key] = max(v for v, _ in values)
        elif key.endswith("_min"):
            out[key] = min(v for v, _ in values)
        elif key == "loss":
            out[key] = sum(v for v, _ in values)
        else:
            weight = sum(n for _, n in values)
            out[key] = sum(v * n for v, n in values) / weight if weight else 0.0
    return out


def _metrics(step, rollouts: list[Rollout], drawn: int, groups: list[_Group], update: dict, rollout_s, update_s,
             scheduler, started) -> dict:
    scored = [r for r in rollouts if r.scored]
    rewards = [r.reward for r in scored]
    return {
        "step": step,
        "reward_mean": float(np.mean(rewards)) if rewards else None,
        "solve_rate": float(np.mean([r.solved for r in scored])) if scored else None,
        "rollouts": len(rollouts), "unscored": len(rollouts) - len(scored),
        "prompts_drawn": drawn, "groups_kept": len(groups),
        "zero_std_frac": 1 - len(groups) / drawn if drawn else None,
        "masked_frac": update.get("masked_frac"), "clip_frac": update.get("clip_frac"),
        "is_ratio_min": update.get("ratio_min"), "is_ratio_mean": update.get("ratio_mean"),
        "is_ratio_max": update.get("ratio_max"),
        "sampler_diff_mean": update.get("sampler_diff_mean"), "sampler_diff_max": update.get("sampler_diff_max"),
        "kl_ref": update.get("kl_ref"), "entropy": update.get("entropy"), "loss": update.get("loss"),
        "grad_norm": update.get("grad_norm"), "lr": scheduler.get_last_lr()[0],
        "response_tokens": float(np.mean([len(r.response_ids) for r in rollouts])) if rollouts else 0.0,
        "sampled_tokens": update.get("sampled_tokens", 0),
        "turns": float(np.mean([r.turns for r in rollouts])) if rollouts else 0.0,
        "ends": {end: sum(r.end == end for r in rollouts) for end in sorted({r.end for r in rollouts})},
        "rollout_s": rollout_s, "update_s": update_s, "elapsed_s": time.monotonic() - started,
    }


def _rollout_row(r: Rollout) -> dict:
    return {"task_id": r.task_id, "sample": r.sample, "reward": r.reward, "unscored": r.unscored, "end": r.end,
            "turns": r.turns, "commands": r.commands, "observations": r.observations, "seconds": round(r.seconds, 3),
            "prompt_tokens": len(r.prompt_ids), "response_ids": r.response_ids, "sampled": r.sampled}


def _start(config: GrpoTrainConfig, model, optimizer, scheduler, sampler: TaskSampler) -> int:
    """Claim the run directory; on resume, restore the latest checkpoint (and cut the logs to it) and
    return its step."""
    if not config.resume:
        claim_run_dir(config)
        return 0
    state = latest_state(config.out)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    sampler.drawn = state["drawn"]
    restore_rng(state["rng"])
    truncate_logs(config.out, int(state["step"]), (METRICS, ROLLOUTS))
    return int(state["step"])
