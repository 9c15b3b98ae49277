"""Rollout engines: token ids in, sampled token ids and the sampler's log-probabilities out.

The protocol is token-in/token-out (TITO): the harness keeps the exact ids an engine sampled and
never re-tokenises a trajectory, so the training sequence is the sampled one. ``logprobs`` are the
*processed* log-probabilities (after temperature), the distribution the token was drawn from — the
μ of DPPO and the denominator of rollout correction.

- :class:`HfEngine` — ``transformers`` ``generate`` (CPU or GPU), batched with left padding. It
  samples from the model object it is given, so a colocated trainer's update is visible at once
  (``sync`` is a no-op); give it a separate copy (e.g. bf16 on GPU) and ``sync`` copies the weights.
- :class:`VllmEngine` — vLLM's offline ``LLM`` (the ``vllm`` extra, GPU). ``sync`` loads the
  trainer's weights into the engine's model in place. Untested on the CPU machines logmine's CI runs on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass(frozen=True, slots=True)
class Sampling:
    temperature: float = 1.0
    top_p: float = 1.0
    stop_token_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Generation:
    token_ids: list[int]  # the sampled ids, the stop token included when one ended the turn
    logprobs: list[float]  # the sampler's log-probability of each sampled id
    stopped: bool  # True: a stop token ended it; False: the token budget did


class RolloutEngine(Protocol):
    def generate(self, prompts: list[list[int]], max_new_tokens: list[int], sampling: Sampling) -> list[Generation]:
        """One continuation per prompt, each at most its own ``max_new_tokens`` (>= 1) long."""
        ...

    def sync(self, model: torch.nn.Module) -> None:
        """Make the engine sample from ``model``'s current weights."""
        ...


class HfEngine:
    def __init__(self, model: torch.nn.Module, pad_token_id: int, *, max_batch: int = 64) -> None:
        self.model, self.pad_token_id, self.max_batch = model, pad_token_id, max_batch

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int], sampling: Sampling) -> list[Generation]:
        out: list[Generation] = []
        for start in range(0, len(prompts), self.max_batch):
            out += self._batch(prompts[start:start + self.max_batch], max_new_tokens[start:start + self.max_batch],
                               sampling)
        return out

    def sync(self, model: torch.nn.Module) -> None:
        if model is not self.model:
            self.model.load_state_dict(model.state_dict())

    @torch.no_grad()
    def _batch(self, prompts: list[list[int]], budgets: list[int], sampling: Sampling) -> list[Generation]:
        device = next(self.model.parameters()).device
        width = max(map(len, prompts))
        ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):  # left padding: every prompt ends where generation starts
            ids[row, width - len(prompt):] = torch.tensor(prompt)
            attention[row, width - len(prompt):] = 1
        from transformers import GenerationConfig

        # a fresh generation config: the model's own (repetition penalty, min_p, ...) would change μ
        generation = GenerationConfig(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p,
                                      top_k=0, max_new_tokens=max(budgets), pad_token_id=self.pad_token_id,
                                      eos_token_id=list(sampling.stop_token_ids) or None, output_scores=True,
                                      return_dict_in_generate=True)
        was_training = self.model.training
        self.model.eval()
        try:
            result = self.model.generate(input_ids=ids.to(device), attention_mask=attention.to(device),
                                         generation_config=generation)
        finally:
            self.model.train(was_training)
        tokens = result.sequences[:, width:].cpu()
        # scores are the processed logits (temperature, top-p applied): the distribution sampled from
        logprobs = torch.stack([torch.log_softmax(s.float(), dim=-1) for s in result.scores], dim=1).cpu()
        chosen = logprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        stops = set(sampling.stop_token_ids)
        out = []
        for row, budget in enumerate(budgets):
            ids_row, lp_row = tokens[row].tolist(), chosen[row].tolist()
            end = next((i + 1 for i, t in enumerate(ids_row[:budget]) if t in stops), None)
            n = end if end is not None else min(budget, len(ids_row))
            out.append(Generation(ids_row[:n], lp_row[:n], stopped=end is not None))
        return out


class VllmEngine:
    """vLLM offline engine (GPU). ``model_path`` is a local directory; nothing is downloaded."""

    def __init__(self, model_path: str, *, gpu_memory_utilization: float = 0.5, dtype: str = "bfloat16",
                 seed: int = 0) -> None:
        try:
            from vllm import LLM
        except ImportError as exc:
            raise RuntimeError("the vllm engine needs vLLM: pip install 'logmine[vllm]' (GPU only)") from exc
        self.llm = LLM(model=model_path, dtype=dtype, gpu_memory_utilization=gpu_memory_utilization, seed=seed,
                       enable_prefix_caching=True, logprobs_mode="processed_logprobs")

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int], sampling: Sampling) -> list[Generation]:
        from vllm import SamplingParams, TokensPrompt

        params = [SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=n, logprobs=0,
                                 stop_token_ids=list(sampling.stop_token_ids), skip_special_tokens=False,
                                 include_stop_str_in_output=True) for n in max_new_tokens]
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
        out = []
        for output in outputs:
            choice = output.outputs[0]
            ids = list(choice.token_ids)
            logprobs = [step[token].logprob for step, token in zip(choice.logprobs, ids)]
            out.append(Generation(ids, logprobs, stopped=choice.finish_reason == "stop"))
        return out

    def sync(self, model: torch.nn.Module) -> None:
        weights = [(name, tensor.detach()) for name, tensor in model.state_dict().items()]
        self.llm.collective_rpc(_load_weights, args=(weights,))
        self.llm.reset_prefix_cache()


def _load_weights(worker, weights) -> None:  # runs inside each vLLM worker
    worker.model_runner.model.load_weights(weights=weights)
