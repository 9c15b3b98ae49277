"""The ActObs loss: hand-computed values, both normalisations, λ = 0 ignores observations exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from logmine.train.data import TokenExample, collate
from logmine.train.loss import actobs_loss, step_denominator, token_nll

LAM = 0.5
# two examples as (nll, weight) per predicted token: actions weight 1, observations λ, prompt 0
EX1 = [(1.0, 1.0), (2.0, 1.0), (3.0, LAM), (9.0, 0.0)]  # L1 = (1 + 2 + 0.5·3) / (2 + 0.5) = 1.8
EX2 = [(4.0, 1.0), (1.0, LAM), (1.0, LAM)]  # L2 = (4 + 0.5·1 + 0.5·1) / (1 + 1) = 2.5


def _packed():
    nll = torch.tensor([[n for n, _ in EX1 + EX2]])
    weights = torch.tensor([[w for _, w in EX1 + EX2]])
    segment = torch.tensor([[0] * len(EX1) + [1] * len(EX2)])
    return nll, weights, segment


def test_per_example_normalisation_is_the_mean_of_each_examples_actobs_loss():
    nll, weights, segment = _packed()
    loss = actobs_loss(nll, weights, segment, "example", step_denominator([2.5, 2.0], "example"))
    assert loss.item() == pytest.approx((1.8 + 2.5) / 2)


def test_per_batch_normalisation_is_one_ratio_over_the_batch():
    nll, weights, segment = _packed()
    loss = actobs_loss(nll, weights, segment, "batch", step_denominator([2.5, 2.0], "batch"))
    assert loss.item() == pytest.approx((4.5 + 5.0) / (2.5 + 2.0))


def test_micro_batch_shares_add_up_to_the_step_loss():
    nll, weights, segment = _packed()
    for norm in ("example", "batch"):
        den = step_denominator([2.5, 2.0], norm)
        whole = actobs_loss(nll, weights, segment, norm, den)
        first = actobs_loss(nll[:, :4], weights[:, :4], segment[:, :4], norm, den)
        second = actobs_loss(nll[:, 4:], weights[:, 4:], segment[:, 4:] - 1, norm, den)
        assert (first + second).item() == pytest.approx(whole.item())


def test_padding_and_weightless_examples_do_not_count():
    nll = torch.tensor([[5.0, 1.0, 7.0], [2.0, 8.0, 8.0]])
    weights = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    segment = torch.tensor([[0, 0, -1], [1, 1, -1]])
    assert step_denominator([1.0, 0.0], "example") == 1.0
    assert actobs_loss(nll, weights, segment, "example", 1.0).item() == pytest.approx(1.0)


def test_token_nll_is_minus_log_softmax_of_the_target():
    logits = torch.tensor([[[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]])
    nll = token_nll(logits, torch.tensor([[2, 1]]))
    expected = -torch.log_softmax(logits, -1)[0, [0, 1], [2, 1]]
    assert torch.allclose(nll[0], expected)


def test_lambda_zero_gives_an_observation_only_example_zero_gradient():
    torch.manual_seed(0)
    logits = torch.randn(1, 6, 11, requires_grad=True)
    targets = torch.randint(0, 11, (1, 6))
    observation_only = TokenExample(np.arange(4), np.array([0, 0, 0, 0], np.float32),
                                    np.array([False, True, True, True]), np.zeros(4, bool))
    action = TokenExample(np.arange(2), np.array([0, 1], np.float32), np.zeros(2, bool), np.array([False, True]))
    mb = collate([observation_only, action])
    for norm in ("example", "batch"):
        logits.grad = None
        loss = actobs_loss(token_nll(logits, targets), mb.weights, mb.segment, norm, 1.0)
        loss.backward()
        assert torch.count_nonzero(logits.grad[0, :4]) == 0  # the observation-only example
        assert torch.count_nonzero(logits.grad[0, 4]) > 0  # the action example's token


def test_collate_shifts_targets_within_each_example():
    a = TokenExample(np.array([5, 6, 7]), np.array([0, 1, 0.5], np.float32), np.array([False, False, True]),
                     np.array([False, True, False]))
    b = TokenExample(np.array([8, 9]), np.array([0, 1], np.float32), np.zeros(2, bool), np.array([False, True]))
    packed = collate([a, b], pad_id=0)
    assert packed.targets.tolist() == [[6, 7, 0, 9, 0]]
    assert packed.weights.tolist() == [[1, 0.5, 0, 1, 0]]
    assert packed.position_ids.tolist() == [[0, 1, 2, 0, 1]]
    assert packed.segment.tolist() == [[0, 0, -1, 1, -1]]
    assert packed.observation.tolist() == [[False, True, False, False, False]]
    padded = collate([a, b], pad_id=0, packed=False)
    assert padded.input_ids.tolist() == [[5, 6, 7], [8, 9, 0]]
    assert padded.attention_mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    assert padded.segment.tolist() == [[0, 0, -1], [1, -1, -1]]
