"""Training batches of RL rollouts: sequences (prompt + response ids, which tokens were sampled, the
sampler's log-probs, the advantage), right-padded micro-batches, and per-token log-probs under the
temperature-scaled policy (optionally through an FP32 LM head)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Sequence:
    ids: list[int]
    start: int  # index in ids of the first response token
    sampled: list[bool]
    sampler_logprobs: list[float]
    advantage: float


def sequences(groups) -> list[Sequence]:
    """The scored rollouts of ``groups`` (each with ``rollouts`` and per-rollout ``advantages``) that
    sampled at least one token."""
    return [Sequence(r.prompt_ids + r.response_ids, len(r.prompt_ids), r.sampled, r.logprobs, a)
            for g in groups for r, a in zip(g.rollouts, g.advantages) if r.scored and any(r.sampled)]


@dataclass
class Batch:
    input_ids: torch.Tensor  # (B, L) right-padded
    attention: torch.Tensor
    mask: torch.Tensor  # (B, L-1) bool: target token t+1 was sampled by the policy
    observation: torch.Tensor  # (B, L-1) bool: target token is an observation token
    sampler: torch.Tensor  # (B, L-1) sampler log-probs at masked positions
    advantages: torch.Tensor  # (B, L-1)


def collate(seqs: list[Sequence], pad_id: int, device) -> Batch:
    width = max(len(s.ids) for s in seqs)
    b = len(seqs)
    ids = torch.full((b, width), pad_id, dtype=torch.long)
    attention = torch.zeros((b, width), dtype=torch.long)
    mask = torch.zeros((b, width - 1), dtype=torch.bool)
    observation = torch.zeros((b, width - 1), dtype=torch.bool)
    sampler = torch.zeros((b, width - 1))
    advantages = torch.zeros((b, width - 1))
    for i, s in enumerate(seqs):
        n, k = len(s.ids), len(s.sampled)
        ids[i, :n] = torch.tensor(s.ids)
        attention[i, :n] = 1
        span = slice(s.start - 1, s.start - 1 + k)  # position t predicts token t+1
        mask[i, span] = torch.tensor(s.sampled)
        observation[i, span] = ~torch.tensor(s.sampled)
        sampler[i, span] = torch.tensor(s.sampler_logprobs)
        advantages[i, span] = s.advantage
    return Batch(ids.to(device), attention.to(device), mask.to(device), observation.to(device), sampler.to(device),
                  advantages.to(device))


def micro_batches(seqs: list[Sequence], budget: int) -> list[list[Sequence]]:
    """Length-sorted chunks whose padded size (rows × longest) stays within ``budget`` tokens."""
    out, current = [], []
    for s in sorted(seqs, key=lambda s: len(s.ids)):
        if current and (len(current) + 1) * len(s.ids) > budget:
            out.append(current)
            current = []
        current.append(s)
    return out + ([current] if current else [])


def token_logprobs(model, batch: Batch, temperature: float, fp32_lm_head: bool, with_entropy: bool = False,
                   with_plain: bool = False):
    """(log-probs of each next token under the temperature-scaled policy (B, L-1), entropy or None,
    plain log-probs (T = 1, for the echo loss) or None unless ``with_plain``)."""
    logits = _logits(model, batch.input_ids, batch.attention, fp32_lm_head)[:, :-1].float()
    targets = batch.input_ids[:, 1:].unsqueeze(-1)
    scaled = torch.log_softmax(logits / temperature, dim=-1)
    logprobs = scaled.gather(-1, targets).squeeze(-1)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = -(scaled.exp() * scaled).sum(-1)
    plain = torch.log_softmax(logits, dim=-1).gather(-1, targets).squeeze(-1) if with_plain else None
    return logprobs, entropy, plain


def _logits(model, input_ids, attention, fp32_lm_head: bool):
    """``fp32_lm_head``: under bf16 autocast, the last hidden state and the LM head in fp32."""
    if fp32_lm_head:
        hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention, use_cache=False).last_hidden_state
        head = model.get_output_embeddings()
        with torch.autocast(device_type=input_ids.device.type, enabled=False):
            return torch.nn.functional.linear(hidden.float(), head.weight.float(),
                                              None if head.bias is None else head.bias.float())
    return model(input_ids=input_ids, attention_mask=attention, use_cache=False).logits
