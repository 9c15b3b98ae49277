"""The ActObs loss: actions weighted 1, observations λ, everything else 0.

    per example i:  L_i = -(Σ_A log p + λ Σ_O log p) / (|A| + λ|O|)  =  Σ_t w_t·nll_t / Σ_t w_t

Two normalisations (``SftTrainConfig.normalisation``):

- ``example`` (the paper): the step's loss is the mean of L_i over its examples, so each example
  counts equally whatever its length. Examples with Σw = 0 (nothing to learn) are left out of the mean.
- ``batch`` (tinker-cookbook's ``Σw·nll / Σw``): one ratio over every token of the step, so long
  examples count in proportion to their weighted tokens.

Both are exact under gradient accumulation and data parallelism: the caller passes the step-wide
``denominator`` (number of examples with Σw > 0, or Σw), computed from the whole step before the
first micro-batch, and each micro-batch contributes its share of the numerator.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from logmine.config import ConfigError


def token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """-log p(target) per position, in fp32: ``logits`` [..., V], ``targets`` [...]."""
    return F.cross_entropy(logits.float().flatten(0, -2), targets.flatten(), reduction="none").view(targets.shape)


def actobs_loss(nll: torch.Tensor, weights: torch.Tensor, segment: torch.Tensor, normalisation: str,
                denominator: float) -> torch.Tensor:
    """This micro-batch's share of the step's ActObs loss. ``nll``/``weights``/``segment`` are
    aligned per token (``segment``: the token's example index, -1 for none); ``denominator`` is the
    step-wide one (see the module docstring)."""
    weighted = nll * weights
    if normalisation == "batch":
        return weighted.sum() / denominator
    if normalisation != "example":
        raise ConfigError(f"normalisation must be example or batch, got {normalisation!r}")
    seg = segment.flatten()
    keep = seg >= 0
    n = int(seg.max().item()) + 1 if keep.any() else 0
    num = torch.zeros(n, dtype=weighted.dtype, device=nll.device).index_add_(0, seg[keep], weighted.flatten()[keep])
    den = torch.zeros(n, dtype=weights.dtype, device=nll.device).index_add_(0, seg[keep], weights.flatten()[keep])
    has = den > 0
    return (num[has] / den[has]).sum() / denominator


def step_denominator(weight_sums: list[float], normalisation: str) -> float:
    """The step-wide denominator from the Σw of every example in the step (at least 1e-12 when the
    step has nothing to learn, so the loss is 0 rather than NaN)."""
    if normalisation == "batch":
        return max(sum(weight_sums), 1e-12)
    return max(float(sum(1 for s in weight_sums if s > 0)), 1e-12)
