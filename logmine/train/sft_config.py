"""The SFT run's configuration: one frozen dataclass, filled from a YAML recipe and flag overrides.

    config = load_config(Path("train/sft-actobs.yaml"), {"data": "sft/", "model": "tiny/", "out": "run/"},
                         kind=SftTrainConfig)

:func:`logmine.config.load_config` fills it, as it fills GRPO's (:mod:`logmine.train.grpo_config`) and
filter/eval's (:mod:`logmine.evaluate.sampling`): dataclass defaults < the recipe's keys < ``overrides``
(flags; ``None`` values are ignored, so a CLI can pass every flag). An unknown key, a bad value or a
missing required path raises :class:`logmine.config.ConfigError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from logmine.config import ConfigError, check_choice, check_positive_ints

NORMALISATIONS = ("example", "batch")
SCHEDULES = ("cosine", "constant")
DTYPES = ("fp32", "bf16")


@dataclass(frozen=True, slots=True)
class SftTrainConfig:
    data: Path  # an `export sft` directory (its tokens/*.parquet are read)
    model: Path  # a local `save_pretrained` model directory (never downloaded)
    out: Path  # the run directory: metrics.jsonl, config.json, checkpoints/, final/
    lam: float | None = None  # None: the exported per-token weights; else observations re-weighted to λ
    normalisation: str = "example"  # example: mean over examples of each one's ActObs loss (the paper) | batch: Σw·nll/Σw over the step
    max_steps: int = 100  # optimizer steps
    lr: float = 1e-4  # peak learning rate (AdamW)
    weight_decay: float = 0.0
    batch_tokens: int = 4096  # tokens per micro-batch (packed row length budget; a longer example is a micro-batch alone)
    grad_accum: int = 1  # micro-batches per optimizer step (per process)
    max_grad_norm: float | None = 1.0  # None: no clipping (the norm is still logged)
    schedule: str = "cosine"  # cosine (to 0 at max_steps) | constant, both after linear warmup
    warmup_steps: int = 0
    dtype: str = "fp32"  # fp32 | bf16 (autocast; master weights and optimizer stay fp32)
    packing: bool = True  # True: one packed row per micro-batch (position ids restart per example); False: padded rows
    lora: bool = False  # train LoRA adapters (peft) on every linear layer instead of all weights
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    save_every: int = 0  # checkpoint every N steps (0: only the final model)
    resume: bool = False  # continue from the latest checkpoint in out/checkpoints
    seed: int = 0
    log_every: int = 1  # metrics every N steps (always at the last step)
    tensorboard: bool = False  # also write TensorBoard events to out/tensorboard (needs `tensorboard`)

    def validate(self) -> None:
        for name, allowed in (("normalisation", NORMALISATIONS), ("schedule", SCHEDULES), ("dtype", DTYPES)):
            check_choice(getattr(self, name), name, allowed)
        if self.lam is not None and not 0 <= self.lam <= 1:
            raise ConfigError(f"lam must be between 0 and 1, got {self.lam}")
        check_positive_ints(self, ("max_steps", "batch_tokens", "grad_accum", "log_every", "lora_r"))
        check_positive_ints(self, ("save_every", "warmup_steps"), minimum=0)
        if not self.lr > 0:
            raise ConfigError(f"lr must be positive, got {self.lr}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ConfigError(f"max_grad_norm must be positive or null, got {self.max_grad_norm}")
