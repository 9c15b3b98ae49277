"""The GRPO run's configuration: one frozen dataclass, filled from ``train/grpo-dppo.yaml`` and flags
(:func:`logmine.config.load_config` with ``kind=GrpoTrainConfig``; unknown keys are errors).
The rollout fields are those of :class:`logmine.agent.settings.RolloutSettings`, shared with filter and eval.

Defaults follow TMax's released recipe (centered advantages, DPPO binary-TV δ = 0.1, β = 0, zero-std
filtering with active sampling, constant LR, grad-norm 1.0, T = 1.0, 64 tool steps, 120 s per
command) scaled down for one machine: fewer prompts, a smaller group, shorter turns (``max_turns``
keeps TMax's 64 as its default; ``train/grpo-dppo.yaml`` sets fewer).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from logmine.agent.settings import RolloutSettings, check_rollout_settings
from logmine.config import ConfigError, check_choice, check_positive_ints
from logmine.train.rl_loss import ADVANTAGES, DIVERGENCES, IS_LEVELS, LOSSES, PolicyLossConfig

DTYPES = ("fp32", "bf16")
SCHEDULES = ("constant", "cosine")


@dataclass(frozen=True, slots=True)
class GrpoTrainConfig(RolloutSettings):  # the rollout fields are RolloutSettings'; the YAML keys are flat
    data: Path  # a `logmine export tmax` directory (data/*.parquet rows + tasks/<id>/ bundles)
    model: Path  # a local save_pretrained directory with its tokenizer (never downloaded)
    out: Path  # run directory: config.json, metrics.jsonl, rollouts.jsonl, checkpoints/, final/
    # --- batch
    max_steps: int = 20
    prompts_per_step: int = 4  # P groups per update (TMax: 8)
    group_size: int = 8  # G rollouts per prompt (TMax: 32)
    active_sampling: bool = True  # refill dropped zero-variance groups from further prompts
    max_draws_per_step: int = 0  # prompts one step may draw when refilling (0: 4 × prompts_per_step)
    # --- advantages and loss
    advantage: str = "centered"  # centered (r - mean, TMax) | standard ((r - mean) / std, GRPO)
    zero_std_eps: float = 1e-6  # groups whose reward std is below this are dropped
    loss: str = "dppo"  # dppo | grpo (clipped ratio, DAPO clip-higher)
    divergence: str = "tv"  # dppo: binary tv | kl
    delta: float = 0.1  # dppo threshold (TMax 0.1; the DPPO paper 0.15 for tv, 0.05 for kl)
    ratio_cap: float | None = None  # dppo: safety cap C on π/μ (None: none, as TMax)
    clip_low: float = 0.2
    clip_high: float = 0.28
    num_minibatches: int = 1  # optimizer steps per batch; 1 is exactly on-policy
    onpolicy_replace: bool = True  # with one minibatch, old log-probs := detached new ones (ratio exactly 1)
    rollout_is: str | None = None  # grpo only: truncated importance sampling, token | sequence (None: off)
    rollout_is_cap: float = 2.0
    rollout_mis: bool = False  # sequence masking: drop a rollout whose π_train/π_sampler lies outside [low, high]
    mis_low: float = 0.5
    mis_high: float = 2.0
    beta: float = 0.0  # KL-to-reference weight (k3)
    ref_kl: bool = True  # compute (and log) the KL to the initial policy even when beta is 0
    echo_weight: float = 0.0  # ECHO-style NLL on the observation tokens of the policy's own rollouts
    # --- optimisation
    lr: float = 1e-6
    weight_decay: float = 0.0
    max_grad_norm: float | None = 1.0
    schedule: str = "constant"
    warmup_steps: int = 0
    micro_batch_tokens: int = 8192  # padded tokens per forward/backward
    dtype: str = "fp32"  # fp32 | bf16 (autocast)
    fp32_lm_head: bool = True  # bf16: the LM head and its input in fp32 (TMax / the MiniMax fix)
    # --- bookkeeping
    save_every: int = 0
    resume: bool = False
    seed: int = 0
    log_every: int = 1
    save_rollouts: bool = True  # append every rollout (ids, reward, commands) to out/rollouts.jsonl

    def validate(self) -> None:
        check_rollout_settings(self)
        for value, name, allowed in ((self.advantage, "advantage", ADVANTAGES), (self.loss, "loss", LOSSES),
                                     (self.divergence, "divergence", DIVERGENCES), (self.dtype, "dtype", DTYPES),
                                     (self.schedule, "schedule", SCHEDULES)):
            check_choice(value, name, allowed)
        if self.rollout_is is not None:
            check_choice(self.rollout_is, "rollout_is", IS_LEVELS)
            if self.loss == "dppo":
                raise ConfigError("rollout_is applies to the grpo loss: dppo's ratio is already taken against the "
                                  "sampler (set rollout_is: null, or loss: grpo)")
        check_positive_ints(self, ("max_steps", "prompts_per_step", "group_size", "num_minibatches",
                                   "micro_batch_tokens", "log_every"))
        check_positive_ints(self, ("save_every", "warmup_steps", "max_draws_per_step"), minimum=0)
        if self.group_size < 2:
            raise ConfigError("group_size must be at least 2 (a group baseline needs two rollouts)")
        for name in ("lr", "delta", "rollout_is_cap"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in ("beta", "echo_weight", "weight_decay", "clip_low", "clip_high"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must not be negative, got {getattr(self, name)!r}")
        if self.top_p != 1:
            raise ConfigError("top_p must be 1 for training: the trainer's log-probs do not apply nucleus "
                              f"sampling, so the sampler's would not match (got {self.top_p})")
        if not 0 <= self.mis_low < self.mis_high:
            raise ConfigError(f"need 0 <= mis_low < mis_high, got {self.mis_low} and {self.mis_high}")
        if self.ratio_cap is not None and not self.ratio_cap > 1:
            raise ConfigError(f"ratio_cap must be above 1 or null, got {self.ratio_cap}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ConfigError(f"max_grad_norm must be positive or null, got {self.max_grad_norm}")

    def policy_loss(self) -> PolicyLossConfig:
        return PolicyLossConfig(loss=self.loss, divergence=self.divergence, delta=self.delta,
                                ratio_cap=self.ratio_cap, clip_low=self.clip_low, clip_high=self.clip_high,
                                beta=self.beta)

