"""Policy-gradient losses for GRPO/DPPO: advantages, the DPPO trust-region mask, rollout correction.

Pure torch functions on (B, T) per-token tensors; a trainer owns the model, batching and logging.
Three policies appear: the sampler μ (the inference engine's log-probs, recorded at rollout time),
π_old (a trainer forward pass before the update, GRPO only) and π_θ (the trainer's live log-probs).

Advantages (``group_advantages``, open-instruct ``data_loader.py``). Per prompt group, over the
*scored* rollouts only: a rollout whose verifier could not run is unscored, not a 0.0 reward, so it
is left out of the baseline and gets advantage 0. ``centered`` is r - mean (TMax, Dr.GRPO);
``standard`` is (r - mean)/(std + 1e-8) (GRPO). Groups with < 2 scored rollouts or zero reward
variance carry no signal and are dropped (open-instruct ``filter_zero_std_samples``).

DPPO (Qi et al., *Rethinking the Trust Region in LLM RL*, arXiv:2602.04879; open-instruct
``grpo_utils.py`` as used by TMax; sail-sg/Stable-RL ``core_algos.py``). The ratio is anchored on the
sampler, r = π_θ/μ ("bypass mode": no recomputed π_old), there is no ratio clip, and the per-token
loss is -A·r·M. M drops a token only when the binary divergence between μ and π (TV |μ-π| or
binary KL, both from the two probabilities of the sampled token) exceeds δ *and* the update would
push it further out: A > 0 with π > μ, or A < 0 with π < μ. Tokens moving back towards μ are always
kept; A = 0 is kept (zero gradient either way). Masked tokens stay in the token-mean denominator,
as in open-instruct. An optional safety cap C gives the gradient -A·min(r, C)·∇log π (Stable-RL
default 10, verl/TRL 20; open-instruct and TMax use none).

GRPO: the PPO clipped surrogate max(-A·r, -A·clip(r, 1-ε_low, 1+ε_high)) with r = π_θ/π_old and
DAPO's clip-higher (TMax's baseline: 0.2/0.272, vLLM log-probs as π_old).

Rollout correction (Yao et al., *Your Efficient RL Framework Secretly Brings You Off-Policy RL
Training*, 2025; verl ``docs/algo/rollout_corr.md``). Sampler and trainer disagree numerically, so
"on-policy" data is slightly off-policy. TIS weights the loss by the detached min(π_train/μ, C),
per token or per sequence (product of token ratios); MIS (verl Seq-MIS) instead drops whole
sequences whose sequence ratio leaves [low, high]. Ratios are formed in log space so long
sequences do not overflow.

On-policy replacement (LinkedIn, *Unlocking Agentic RL Training for GPT-OSS*, Hugging Face blog,
Jan 2026, in verl): with one mini-batch per batch the update is exactly on-policy, yet a separate
π_old forward pass can differ from the live one (MoE routing, kernels), giving ratios ≠ 1 and
spurious clipping. ``on_policy_old_logprobs`` uses the detached live log-probs instead, so r ≡ 1.

Not handled here: Top-K divergences, sequence-level loss aggregation, IcePop token masks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

ADVANTAGES = ("centered", "standard")
DIVERGENCES = ("tv", "kl")
LOSSES = ("dppo", "grpo")
IS_LEVELS = ("token", "sequence")

_LOGPROB_MIN = -30.0  # open-instruct's clamp before exp: exp(-30) ≈ 1e-13
_KL_EPS = 1e-6


def _check(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")


def group_advantages(rewards: torch.Tensor, scored: torch.Tensor, kind: str = "centered",
                     eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-group advantages from ``rewards``/``scored`` (P, G). Mean and population std use the
    scored entries only; unscored entries (any value, NaN included) get 0.0. Returns
    (advantages (P, G), keep (P,) bool); keep is False for a group with < 2 scored rollouts or
    std < ``eps``, and such a group's advantages are all 0.0."""
    _check(kind, ADVANTAGES, "advantage kind")
    scored = scored.bool()
    r = torch.where(scored, rewards, torch.zeros_like(rewards))
    n = scored.sum(dim=1, keepdim=True)
    mean = r.sum(dim=1, keepdim=True) / n.clamp(min=1)
    centered = torch.where(scored, r - mean, torch.zeros_like(r))
    std = (centered.square().sum(dim=1, keepdim=True) / n.clamp(min=1)).sqrt()
    adv = centered if kind == "centered" else centered / (std + 1e-8)
    keep = (n.squeeze(1) >= 2) & (std.squeeze(1) >= eps)
    return torch.where(keep[:, None], adv, torch.zeros_like(adv)), keep


@torch.no_grad()
def binary_divergence(sampler_logprobs: torch.Tensor, policy_logprobs: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token divergence between μ = exp(sampler) and π = exp(policy) on the sampled token's
    two-outcome distribution {token, rest}: ``tv`` |μ - π|, ``kl`` KL(Bern(μ) || Bern(π)) with
    probabilities clipped to [1e-6, 1 - 1e-6]. Log-probs are clamped to [-30, 0] first. No grad."""
    _check(kind, DIVERGENCES, "divergence")
    mu = sampler_logprobs.float().clamp(_LOGPROB_MIN, 0.0).exp()
    pi = policy_logprobs.float().clamp(_LOGPROB_MIN, 0.0).exp()
    if kind == "tv":
        return (mu - pi).abs()
    mu, pi = mu.clamp(_KL_EPS, 1 - _KL_EPS), pi.clamp(_KL_EPS, 1 - _KL_EPS)
    return mu * (mu.log() - pi.log()) + (1 - mu) * ((1 - mu).log() - (1 - pi).log())


@torch.no_grad()
def dppo_keep_mask(policy_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, advantages: torch.Tensor,
                   kind: str, delta: float) -> torch.Tensor:
    """True = the token stays in the loss. False iff divergence > ``delta`` and the update would push
    π further from μ: (A > 0 and π > μ) or (A < 0 and π < μ). ``advantages`` is per token."""
    outside = binary_divergence(sampler_logprobs, policy_logprobs, kind) > delta
    up = policy_logprobs > sampler_logprobs
    down = policy_logprobs < sampler_logprobs
    return ~(outside & (((advantages > 0) & up) | ((advantages < 0) & down)))


def kl_k3(policy_logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(π || ref): exp(ref - π) - (ref - π) - 1, always >= 0."""
    d = ref_logprobs - policy_logprobs
    return d.exp() - d - 1


def _masked_log_ratio(num: torch.Tensor, den: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """num - den on masked tokens, 0 elsewhere (padding may hold anything, even -inf)."""
    return torch.where(mask, num - den, torch.zeros_like(num))


@torch.no_grad()
def truncated_is_weights(trainer_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, mask: torch.Tensor,
                         cap: float, level: str = "token") -> torch.Tensor:
    """Detached TIS weights (B, T), 0 where ``mask`` is False. ``token``: min(exp(t - s), cap);
    ``sequence``: min(exp(Σ_mask (t - s)), cap) on every token of the sequence."""
    _check(level, IS_LEVELS, "importance-sampling level")
    if cap <= 0:
        raise ValueError(f"TIS cap must be > 0, got {cap}")
    mask = mask.bool()
    log_ratio = _masked_log_ratio(trainer_logprobs.float(), sampler_logprobs.float(), mask)
    if level == "sequence":
        log_ratio = log_ratio.sum(dim=-1, keepdim=True).expand_as(log_ratio)
    weights = log_ratio.clamp(max=math.log(cap)).exp()
    return torch.where(mask, weights, torch.zeros_like(weights))


@torch.no_grad()
def sequence_is_keep(trainer_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, mask: torch.Tensor,
                     low: float, high: float) -> torch.Tensor:
    """MIS: (B,) bool, True iff low <= exp(Σ_mask (t - s)) <= high, compared in log space."""
    if not 0 <= low <= high:
        raise ValueError(f"MIS bounds must satisfy 0 <= low <= high, got low={low}, high={high}")
    seq = _masked_log_ratio(trainer_logprobs.float(), sampler_logprobs.float(), mask.bool()).sum(dim=-1)
    lo = math.log(low) if low > 0 else -math.inf
    return (seq >= lo) & (seq <= math.log(high))


def on_policy_old_logprobs(new_logprobs: torch.Tensor) -> torch.Tensor:
    """π_old for an exactly on-policy update (one mini-batch covers the batch): the detached live
    log-probs, so r = exp(new - old) is exactly 1 rather than the disagreement of two forward passes."""
    return new_logprobs.detach()


@dataclass(frozen=True, slots=True)
class PolicyLossConfig:
    loss: str = "dppo"  # dppo | grpo
    divergence: str = "tv"  # DPPO binary divergence: tv | kl
    delta: float = 0.1  # DPPO threshold (TMax 0.1; paper recommends 0.15 for TV, 0.05 for KL)
    ratio_cap: float | None = None  # DPPO safety cap C on r (gradient -A * min(r, C) * grad log pi); None = no cap
    clip_low: float = 0.2  # grpo: ratio clipped to [1 - clip_low, 1 + clip_high] (DAPO clip-higher)
    clip_high: float = 0.28
    beta: float = 0.0  # KL-to-reference weight (k3); the KL is returned as a metric regardless

    def __post_init__(self) -> None:
        _check(self.loss, LOSSES, "loss")
        _check(self.divergence, DIVERGENCES, "divergence")
        if self.ratio_cap is not None and self.ratio_cap <= 0:
            raise ValueError(f"ratio_cap must be > 0 or None, got {self.ratio_cap}")


def _masked_mean(x: torch.Tensor, mask: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    return torch.where(mask, x, torch.zeros_like(x)).sum() / n.clamp(min=1)


def _masked_extreme(x: torch.Tensor, mask: torch.Tensor, n: torch.Tensor, largest: bool) -> torch.Tensor:
    fill = -math.inf if largest else math.inf
    picked = torch.where(mask, x, torch.full_like(x, fill))
    value = picked.max() if largest else picked.min()
    return torch.where(n > 0, value, torch.zeros_like(value))


def policy_loss(new_logprobs: torch.Tensor, old_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor,
                advantages: torch.Tensor, response_mask: torch.Tensor, config: PolicyLossConfig, *,
                is_weights: torch.Tensor | None = None, ref_logprobs: torch.Tensor | None = None,
                denominator: float | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """This micro-batch's share of the step's token-mean policy loss, and detached scalar metrics.

    All tensors (B, T); ``advantages`` per token; ``response_mask`` True on the policy's own sampled
    tokens of scored, kept rollouts. dppo: r = π_θ/μ (``old_logprobs`` unused), loss -A·min(r, C)·M;
    grpo: r = π_θ/π_old, PPO clipped surrogate. Then × ``is_weights``, + beta·k3 KL to ``ref_logprobs``.
    The sum over response tokens is divided by ``denominator`` (default: this call's response-token
    count; DPPO-masked tokens count). Metrics: masked_frac, clip_frac, ratio_min/mean/max, kl,
    logprob_diff_mean/max (|new - sampler|); all 0 when the mask is empty.
    """
    mask = response_mask.bool()
    new, adv = new_logprobs.float(), advantages.float()
    sampler = sampler_logprobs.float()
    n = mask.sum()
    kept = mask
    clipped = torch.zeros_like(mask)
    if config.loss == "dppo":
        kept = dppo_keep_mask(new.detach(), sampler, adv, config.divergence, config.delta) & mask
        r = _masked_log_ratio(new.detach(), sampler, mask).exp()
        # masked tokens enter as log r = 0 so an overflowing ratio there cannot make a NaN gradient
        log_r = _masked_log_ratio(new, sampler, kept)
        if config.ratio_cap is not None:
            # value min(r, C), gradient min(r, C)·∇log π; the excess is removed in log space (no inf·0)
            log_r = log_r - (log_r - math.log(config.ratio_cap)).clamp(min=0).detach()
        per_token = torch.where(kept, -adv * log_r.exp(), torch.zeros_like(log_r))
    else:
        r = _masked_log_ratio(new, old_logprobs.float(), mask).exp()
        unclipped = -adv * r
        clipped_loss = -adv * r.clamp(1 - config.clip_low, 1 + config.clip_high)
        per_token = torch.maximum(unclipped, clipped_loss)
        clipped = (clipped_loss > unclipped) & mask
    if is_weights is not None:
        per_token = per_token * is_weights.detach()
    kl = torch.zeros_like(new)
    if ref_logprobs is not None:
        zero = torch.zeros_like(new)  # padding may hold -inf: keep it out of the graph
        kl = kl_k3(torch.where(mask, new, zero), torch.where(mask, ref_logprobs.float(), zero))
        if config.beta != 0:
            per_token = per_token + config.beta * kl
    total = torch.where(mask, per_token, torch.zeros_like(per_token)).sum()
    den = n.clamp(min=1) if denominator is None else max(float(denominator), 1e-12)
    loss = total / den

    with torch.no_grad():
        diff = (new - sampler).abs()
        metrics = {
            "masked_frac": ((mask & ~kept).sum() / n.clamp(min=1)).float(),
            "clip_frac": (clipped.sum() / n.clamp(min=1)).float(),
            "ratio_min": _masked_extreme(r, mask, n, largest=False),
            "ratio_mean": _masked_mean(r, mask, n),
            "ratio_max": _masked_extreme(r, mask, n, largest=True),
            "kl": _masked_mean(kl.detach(), mask, n),
            "logprob_diff_mean": _masked_mean(diff, mask, n),
            "logprob_diff_max": _masked_extreme(diff, mask, n, largest=True),
        }
    return loss, metrics
