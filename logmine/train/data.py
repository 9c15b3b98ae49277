"""The token-level SFT export as training batches.

``load_examples(dir)`` reads ``dir/tokens/*.parquet`` (``input_ids``, ``loss_weights``, ``source``;
see docs/export-sft.md). ``step_batches`` turns them into a deterministic sequence of optimizer steps,
each a list of micro-batches of whole examples: examples are shuffled per epoch (seeded) and packed
greedily into micro-batches of at most ``batch_tokens`` tokens (an example longer than that is a
micro-batch alone; examples are never cut). Because the sequence depends only on the seed, the data
position of a run is just its step number.

``collate`` builds the tensors of one micro-batch, either packed (one row, position ids restarting
at 0 for each example; transformers' masking derives block-diagonal attention from them, so no token
attends across an example boundary) or padded (one row per example, attention mask). Targets are
shifted within each example: the last token of an example predicts nothing (weight 0), so packing
never trains one example's end to predict the next one's start.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch

OBSERVATION = "observation"
ACTION = "action"


@dataclass(frozen=True, slots=True)
class TokenExample:
    input_ids: np.ndarray  # int64 [n]
    weights: np.ndarray  # float32 [n], the exported loss weights
    observation: np.ndarray  # bool [n], source == observation
    action: np.ndarray  # bool [n], source == action

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(frozen=True, slots=True)
class MicroBatch:
    """Tensors of one micro-batch; ``targets``/``weights``/``segment`` are aligned with ``input_ids``
    (position t holds the token t+1 of the same example). ``segment`` is the example's index in the
    micro-batch, -1 where nothing is predicted (padding)."""
    input_ids: torch.Tensor  # [rows, T]
    position_ids: torch.Tensor | None  # packed only
    attention_mask: torch.Tensor | None  # padded only
    targets: torch.Tensor  # [rows, T]
    weights: torch.Tensor  # [rows, T] float32
    observation: torch.Tensor  # [rows, T] bool, the target is an observation token
    action: torch.Tensor  # [rows, T] bool
    segment: torch.Tensor  # [rows, T] int64
    n_tokens: int  # real (unpadded) tokens


def load_examples(data: Path, lam: float | None = None) -> list[TokenExample]:
    """Every row of ``data/tokens/*.parquet`` in file order. With ``lam``, observation tokens are
    re-weighted to λ (other weights kept). Raises ``ValueError`` when there are none."""
    files = sorted(Path(data).glob("tokens/*.parquet"))
    if not files:
        raise ValueError(f"no token-level export at {data}/tokens (run `logmine export sft` with --tokenizer)")
    examples = []
    for file in files:
        table = pq.read_table(file, columns=["input_ids", "loss_weights", "source"]).to_pydict()
        for ids, weights, source in zip(table["input_ids"], table["loss_weights"], table["source"]):
            source = np.asarray(source)
            observation = source == OBSERVATION
            w = np.asarray(weights, dtype=np.float32)
            if lam is not None:
                w = np.where(observation, np.float32(lam), w)
            examples.append(TokenExample(np.asarray(ids, dtype=np.int64), w, observation, source == ACTION))
    if not examples:
        raise ValueError(f"the token-level export at {data} has no rows")
    return examples


def step_batches(examples: list[TokenExample], batch_tokens: int, micro_per_step: int,
                 seed: int) -> Iterator[list[list[int]]]:
    """Endless optimizer steps, each ``micro_per_step`` micro-batches of example indices."""
    pending: list[list[int]] = []
    epoch = 0
    while True:
        order = list(range(len(examples)))
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
        current: list[int] = []
        used = 0
        for i in order:
            if current and used + len(examples[i]) > batch_tokens:
                pending.append(current)
                current, used = [], 0
            current.append(i)
            used += len(examples[i])
        pending.append(current)
        while len(pending) >= micro_per_step:
            yield pending[:micro_per_step]
            pending = pending[micro_per_step:]
        epoch += 1


def collate(examples: list[TokenExample], pad_id: int = 0, packed: bool = True) -> MicroBatch:
    """The tensors of one micro-batch (see the module docstring)."""
    rows = []
    for k, ex in enumerate(examples):
        n = len(ex)
        shift = lambda a, fill: np.concatenate([a[1:], np.asarray([fill], dtype=a.dtype)])  # noqa: E731
        rows.append(dict(input_ids=ex.input_ids, position_ids=np.arange(n), targets=shift(ex.input_ids, pad_id),
                         weights=shift(ex.weights, 0.0), observation=shift(ex.observation, False),
                         action=shift(ex.action, False), segment=np.where(np.arange(n) < n - 1, k, -1)))
    fills = dict(input_ids=pad_id, position_ids=0, targets=pad_id, weights=0.0, observation=False, action=False,
                 segment=-1)
    if packed:
        cat = {key: torch.from_numpy(np.concatenate([r[key] for r in rows]))[None] for key in fills}
        mask = None
    else:
        width = max(len(ex) for ex in examples)
        cat = {key: torch.from_numpy(np.stack([np.pad(r[key], (0, width - len(r[key])), constant_values=fill)
                                                for r in rows])) for key, fill in fills.items()}
        mask = torch.from_numpy(np.stack([np.arange(width) < len(ex) for ex in examples]).astype(np.int64))
    return MicroBatch(input_ids=cat["input_ids"], position_ids=cat["position_ids"] if packed else None,
                      attention_mask=mask, targets=cat["targets"], weights=cat["weights"].float(),
                      observation=cat["observation"], action=cat["action"], segment=cat["segment"],
                      n_tokens=sum(len(ex) for ex in examples))
