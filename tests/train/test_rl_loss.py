"""GRPO/DPPO losses: hand-computed masks, divergences, advantages, rollout-correction weights and gradients."""

from __future__ import annotations

import math

import pytest
import torch

from logmine.train.rl_loss import (
    PolicyLossConfig,
    binary_divergence,
    dppo_keep_mask,
    group_advantages,
    kl_k3,
    on_policy_old_logprobs,
    policy_loss,
    sequence_is_keep,
    truncated_is_weights,
)

LN = math.log
# μ = 0.5 vs π = 0.8/0.2: tv 0.3, kl 0.223 (outside); π = 0.55/0.45: tv 0.05, kl 0.005 (inside)
DELTA = {"tv": 0.1, "kl": 0.05}


def _t(values):
    return torch.tensor([values], dtype=torch.float32)


# --- binary divergence -------------------------------------------------------------------------

def test_binary_divergence_matches_hand_values():
    mu, pi = _t([LN(0.5)]), _t([LN(0.25)])
    assert binary_divergence(mu, pi, "tv").item() == pytest.approx(0.25)
    assert binary_divergence(mu, pi, "kl").item() == pytest.approx(0.5 * LN(2) + 0.5 * LN(2 / 3))


def test_binary_divergence_clamps_logprobs_and_needs_no_grad():
    pol = torch.tensor([[0.5, -100.0]], requires_grad=True)  # clamped to 0 (π=1) and -30 (π≈0)
    tv = binary_divergence(_t([LN(0.5), LN(0.5)]), pol, "tv")
    assert torch.allclose(tv, _t([0.5, 0.5]))
    assert not tv.requires_grad


# --- DPPO mask ---------------------------------------------------------------------------------

# (advantage, π, kept) with μ = 0.5 everywhere
MASK_CASES = [
    (1.0, 0.8, False),  # outside, A>0 pushes π up further: masked
    (1.0, 0.2, True),  # outside, A>0 pulls π back up towards μ: kept
    (-1.0, 0.2, False),  # outside, A<0 pushes π down further: masked
    (-1.0, 0.8, True),  # outside, A<0 pulls π back down: kept
    (1.0, 0.55, True),  # inside, would push out: kept
    (-1.0, 0.45, True),  # inside, would push out: kept
    (0.0, 0.8, True),  # A = 0 is kept even outside
    (0.0, 0.2, True),
]


@pytest.mark.parametrize("kind", ["tv", "kl"])
def test_dppo_mask_every_branch(kind):
    adv = _t([a for a, _, _ in MASK_CASES])
    pol = _t([LN(p) for _, p, _ in MASK_CASES])
    sampler = torch.full_like(pol, LN(0.5))
    keep = dppo_keep_mask(pol, sampler, adv, kind, DELTA[kind])
    assert keep.dtype == torch.bool
    assert keep[0].tolist() == [k for _, _, k in MASK_CASES]


# --- group advantages --------------------------------------------------------------------------

@pytest.mark.parametrize("unscored_value", [float("nan"), 0.0])
def test_group_advantages_exclude_unscored_from_the_baseline(unscored_value):
    rewards = torch.tensor([[1.0, 0.0, unscored_value, 1.0]])
    scored = torch.tensor([[True, True, False, True]])
    adv, keep = group_advantages(rewards, scored, "centered")
    assert keep.tolist() == [True]
    assert torch.allclose(adv, torch.tensor([[1 / 3, -2 / 3, 0.0, 1 / 3]]))  # mean 2/3, not 1/2
    adv, _ = group_advantages(rewards, scored, "standard")
    std = math.sqrt(2 / 9)  # population std of {1, 0, 1}
    assert torch.allclose(adv, torch.tensor([[1 / 3 / std, -2 / 3 / std, 0.0, 1 / 3 / std]]), atol=1e-5)


def test_group_advantages_drop_zero_variance_and_single_scored_groups():
    rewards = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, float("nan"), float("nan")], [0.0, 1.0, 0.0]])
    scored = torch.tensor([[True] * 3, [True] * 3, [True, False, False], [True, True, False]])
    for kind in ("centered", "standard"):
        adv, keep = group_advantages(rewards, scored, kind)
        assert keep.tolist() == [False, False, False, True]
        assert not adv.isnan().any()
        assert torch.equal(adv[:3], torch.zeros(3, 3))
    adv, _ = group_advantages(rewards, scored, "centered")
    assert torch.allclose(adv[3], torch.tensor([-0.5, 0.5, 0.0]))


# --- rollout correction --------------------------------------------------------------------------

def _is_inputs():
    # log(t/s) per token: ln 2, ln 3, -ln 2, and a padding token whose huge value must be ignored
    trainer = _t([LN(2), LN(3), -LN(2), 50.0])
    sampler = torch.zeros_like(trainer)
    mask = torch.tensor([[True, True, True, False]])
    return trainer, sampler, mask


def test_truncated_is_weights_token_and_sequence_with_cap():
    trainer, sampler, mask = _is_inputs()
    token = truncated_is_weights(trainer, sampler, mask, cap=2.5, level="token")
    assert torch.allclose(token, _t([2.0, 2.5, 0.5, 0.0]))
    seq = truncated_is_weights(trainer, sampler, mask, cap=2.5, level="sequence")  # 2·3·½ = 3 → 2.5
    assert torch.allclose(seq, _t([2.5, 2.5, 2.5, 0.0]))
    seq = truncated_is_weights(trainer, sampler, mask, cap=10.0, level="sequence")
    assert torch.allclose(seq, _t([3.0, 3.0, 3.0, 0.0]))


def test_truncated_is_weights_are_detached():
    trainer, sampler, mask = _is_inputs()
    trainer.requires_grad_(True)
    assert not truncated_is_weights(trainer, sampler, mask, cap=2.0).requires_grad


def test_sequence_is_keep_band_in_log_space():
    trainer = torch.tensor([[LN(3), 0.0], [LN(2), -LN(2)], [LN(0.25), 0.0], [1000.0, 1000.0], [-1000.0, 0.0]])
    mask = torch.tensor([[True, True], [True, True], [True, True], [True, True], [True, False]])
    keep = sequence_is_keep(trainer, torch.zeros_like(trainer), mask, low=0.5, high=2.0)
    assert keep.tolist() == [False, True, False, False, False]
    # the padding token is outside the sum: ratio 1 → kept
    keep = sequence_is_keep(torch.tensor([[0.0, 99.0]]), torch.zeros(1, 2), torch.tensor([[True, False]]), 0.5, 2.0)
    assert keep.tolist() == [True]


# --- policy loss: DPPO -------------------------------------------------------------------------

def _dppo_batch():
    """μ = 0.5 everywhere; tokens: masked (A>0, π=.8), kept r=.4, kept r=1.6, masked (A<0, π=.2),
    inside r=1.1, and a non-response token."""
    new = torch.nn.Parameter(_t([LN(0.8), LN(0.2), LN(0.8), LN(0.2), LN(0.55), LN(0.9)]))
    sampler = torch.full((1, 6), LN(0.5))
    adv = _t([1.0, 1.0, -1.0, -1.0, 1.0, 0.0])
    mask = torch.tensor([[True, True, True, True, True, False]])
    return new, sampler, adv, mask


def test_dppo_gradient_is_minus_a_r_on_kept_tokens_and_zero_on_masked():
    new, sampler, adv, mask = _dppo_batch()
    loss, metrics = policy_loss(new, torch.zeros(1, 6), sampler, adv, mask, PolicyLossConfig())
    loss.backward()
    # 5 response tokens in the denominator, DPPO-masked ones included
    assert torch.allclose(new.grad, _t([0.0, -0.4, 1.6, 0.0, -1.1, 0.0]) / 5)
    assert loss.item() == pytest.approx((-0.4 + 1.6 - 1.1) / 5)
    assert metrics["masked_frac"].item() == pytest.approx(2 / 5)
    assert metrics["ratio_min"].item() == pytest.approx(0.4)
    assert metrics["ratio_max"].item() == pytest.approx(1.6)
    assert metrics["logprob_diff_max"].item() == pytest.approx(LN(2.5))  # |ln .2 - ln .5|, masked tokens count


def test_dppo_ratio_cap_caps_value_and_gradient():
    new, sampler, adv, mask = _dppo_batch()
    loss, metrics = policy_loss(new, torch.zeros(1, 6), sampler, adv, mask, PolicyLossConfig(ratio_cap=1.2))
    loss.backward()
    assert torch.allclose(new.grad, _t([0.0, -0.4, 1.2, 0.0, -1.1, 0.0]) / 5)
    assert loss.item() == pytest.approx((-0.4 + 1.2 - 1.1) / 5)
    assert metrics["ratio_max"].item() == pytest.approx(1.6)  # the metric reports the uncapped ratio


def test_denominator_keeps_masked_tokens_and_can_be_given():
    new, sampler, adv, mask = _dppo_batch()
    loss, _ = policy_loss(new, torch.zeros(1, 6), sampler, adv, mask, PolicyLossConfig(), denominator=10.0)
    assert loss.item() == pytest.approx((-0.4 + 1.6 - 1.1) / 10)


def test_is_weights_multiply_the_loss():
    new, sampler, adv, mask = _dppo_batch()
    w = _t([1.0, 2.0, 0.25, 1.0, 3.0, 1.0])
    loss, _ = policy_loss(new, torch.zeros(1, 6), sampler, adv, mask, PolicyLossConfig(), is_weights=w)
    assert loss.item() == pytest.approx((-0.4 * 2 + 1.6 * 0.25 - 1.1 * 3) / 5)


def test_beta_adds_k3_kl_and_kl_is_reported_regardless():
    new = torch.nn.Parameter(torch.full((1, 3), LN(0.5)))
    ref = torch.full((1, 3), LN(0.25))
    k3 = LN(2) - 0.5  # exp(-ln 2) + ln 2 - 1
    assert torch.allclose(kl_k3(new, ref), torch.full((1, 3), k3))
    args = (new, torch.zeros(1, 3), new.detach(), torch.zeros(1, 3), torch.ones(1, 3, dtype=torch.bool))
    loss0, m0 = policy_loss(*args, PolicyLossConfig(), ref_logprobs=ref)
    loss1, _ = policy_loss(*args, PolicyLossConfig(beta=0.1), ref_logprobs=ref)
    assert m0["kl"].item() == pytest.approx(k3)
    assert loss0.item() == pytest.approx(0.0)
    assert loss1.item() == pytest.approx(0.1 * k3)


# --- policy loss: GRPO -------------------------------------------------------------------------

def test_grpo_clipped_surrogate_and_clip_frac():
    old = torch.zeros(1, 4)
    new = _t([LN(1.5), LN(0.5), LN(0.5), LN(1.5)])
    adv = _t([1.0, -1.0, 1.0, -1.0])
    mask = torch.ones(1, 4, dtype=torch.bool)
    loss, metrics = policy_loss(new, old, old, adv, mask, PolicyLossConfig(loss="grpo"))
    # max(-1.5, -1.28), max(0.5, 0.8), max(-0.5, -0.8), max(1.5, 1.28)
    assert loss.item() == pytest.approx((-1.28 + 0.8 - 0.5 + 1.5) / 4)
    assert metrics["clip_frac"].item() == pytest.approx(0.5)
    assert metrics["masked_frac"].item() == 0.0


def test_on_policy_replacement_gives_ratio_one_and_the_plain_policy_gradient():
    torch.manual_seed(0)
    theta = torch.nn.Parameter(torch.randn(2, 3, 5))
    tokens = torch.tensor([[0, 3, 1], [4, 4, 2]])
    adv = torch.tensor([[1.0, 1.0, 0.0], [-0.5, -0.5, -0.5]])
    mask = torch.tensor([[True, True, False], [True, True, True]])

    def logpi():
        return torch.log_softmax(theta, -1).gather(-1, tokens[..., None]).squeeze(-1)

    new = logpi()
    old = on_policy_old_logprobs(new)
    assert torch.equal(torch.exp(new - old), torch.ones_like(new))
    loss, metrics = policy_loss(new, old, new.detach() - 0.3, adv, mask, PolicyLossConfig(loss="grpo"))
    assert metrics["ratio_min"].item() == 1.0 and metrics["ratio_max"].item() == 1.0
    assert metrics["clip_frac"].item() == 0.0
    (grad,) = torch.autograd.grad(loss, theta)
    (expected,) = torch.autograd.grad(-(adv * logpi() * mask).sum() / mask.sum(), theta)
    assert torch.allclose(grad, expected, atol=1e-6)


# --- edges and errors --------------------------------------------------------------------------

@pytest.mark.parametrize("loss_name", ["dppo", "grpo"])
def test_empty_mask_gives_zero_loss_and_metrics_without_nan(loss_name):
    new = torch.nn.Parameter(torch.full((2, 3), -1.0))
    mask = torch.zeros(2, 3, dtype=torch.bool)
    loss, metrics = policy_loss(new, torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 3), mask,
                                PolicyLossConfig(loss=loss_name), ref_logprobs=torch.zeros(2, 3))
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(new.grad, torch.zeros(2, 3))
    assert all(v.item() == 0.0 for v in metrics.values()), metrics


def test_dppo_masked_token_with_overflowing_ratio_has_finite_gradient():
    new = torch.nn.Parameter(_t([-0.01, LN(0.5)]))
    sampler = _t([-200.0, LN(0.5)])  # r = e^190 overflows fp32, but A > 0 and π ≫ μ: masked
    loss, _ = policy_loss(new, torch.zeros(1, 2), sampler, _t([1.0, 1.0]), torch.ones(1, 2, dtype=torch.bool),
                          PolicyLossConfig())
    loss.backward()
    assert torch.allclose(new.grad, _t([0.0, -0.5]))


def test_unknown_names_raise_value_error():
    x, m = torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match="advantage kind must be one of centered, standard, got 'zscore'"):
        group_advantages(x, m, "zscore")
    with pytest.raises(ValueError, match="divergence must be one of tv, kl"):
        binary_divergence(x, x, "js")
    with pytest.raises(ValueError, match="importance-sampling level must be one of token, sequence"):
        truncated_is_weights(x, x, m, cap=2.0, level="prompt")
    with pytest.raises(ValueError, match="loss must be one of dppo, grpo, got 'ppo'"):
        PolicyLossConfig(loss="ppo")
    with pytest.raises(ValueError, match="divergence must be one of tv, kl"):
        PolicyLossConfig(divergence="js")
