"""The SFT run's configuration: one frozen dataclass, filled from a YAML recipe and flag overrides.

    config = load_config(Path("train/sft-actobs.yaml"), {"data": "sft/", "model": "tiny/", "out": "run/"})

Precedence: dataclass defaults < the recipe's keys < ``overrides`` (flags; ``None`` values are ignored,
so a CLI can pass every flag). An unknown key, a bad value or a missing required path raises
:class:`ConfigError`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from logmine.errors import LogmineError

NORMALISATIONS = ("example", "batch")
SCHEDULES = ("cosine", "constant")
DTYPES = ("fp32", "bf16")


class ConfigError(LogmineError, ValueError):
    """A recipe or flag the trainer cannot use: unknown key, bad value, unreadable YAML."""


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
        _check_sft(self)


def load_config(path: Path | None, overrides: dict[str, Any] | None = None, kind: type = None,
                settings: dict[str, Any] | None = None):
    """The recipe at ``path`` (YAML mapping, optional) with ``overrides`` applied, as a ``kind`` config
    (default :class:`SftTrainConfig`; also ``GrpoTrainConfig``). ``settings`` (``--set KEY=VALUE``)
    come last and may set a key to None. Raises :class:`ConfigError`."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read the recipe {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"the recipe {path} is not valid YAML: {str(exc).splitlines()[0]}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"the recipe {path} must be a mapping of keys to values")
        values.update(loaded or {})
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    values.update(settings or {})
    return make_config(values, kind)


def make_config(values: dict[str, Any], kind: type = None):
    """A validated config of dataclass ``kind`` (default :class:`SftTrainConfig`) from plain values (YAML
    or JSON types): unknown keys and missing required paths are errors, then ``kind.validate`` runs."""
    kind = kind or SftTrainConfig
    fields = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"unknown config key{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)} "
                          f"(known: {', '.join(fields)})")
    paths = [f.name for f in dataclasses.fields(kind) if f.type in (Path, "Path")]
    missing = [name for name in paths if values.get(name) in (None, "")]
    if missing:
        raise ConfigError(f"missing required setting{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    values = dict(values)
    for name in paths:
        values[name] = Path(values[name])
    for name, value in values.items():
        _check_type(name, value, fields[name].default)
    try:
        config = kind(**values)
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    config.validate()
    return config


def _check_type(name: str, value: Any, default: Any) -> None:
    """Raises ConfigError unless ``value`` is of the default's kind (an int counts as a float). None,
    and fields whose default is None or absent, are left to ``validate``."""
    if value is None or default is None or default is dataclasses.MISSING:
        return
    if isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, kind = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif isinstance(default, str):
        ok, kind = isinstance(value, str), "a string"
    else:
        return
    if not ok:
        raise ConfigError(f"{name} must be {kind}, got {value!r}")


def _check_sft(c: SftTrainConfig) -> None:
    for name, allowed in (("normalisation", NORMALISATIONS), ("schedule", SCHEDULES), ("dtype", DTYPES)):
        check_choice(getattr(c, name), name, allowed)
    if c.lam is not None and not 0 <= c.lam <= 1:
        raise ConfigError(f"lam must be between 0 and 1, got {c.lam}")
    check_positive_ints(c, ("max_steps", "batch_tokens", "grad_accum", "log_every", "lora_r"))
    check_positive_ints(c, ("save_every", "warmup_steps"), minimum=0)
    if not c.lr > 0:
        raise ConfigError(f"lr must be positive, got {c.lr}")
    if c.max_grad_norm is not None and not c.max_grad_norm > 0:
        raise ConfigError(f"max_grad_norm must be positive or null, got {c.max_grad_norm}")


def config_dict(config) -> dict[str, Any]:
    """JSON-ready values (paths as strings), as written to the run directory's config.json."""
    return {f.name: (str(v) if isinstance(v := getattr(config, f.name), Path) else v)
            for f in dataclasses.fields(config)}


def check_choice(value: str, name: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def check_positive_ints(config, names: tuple[str, ...], minimum: int = 1) -> None:
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            kind = "a positive" if minimum == 1 else "a non-negative"
            raise ConfigError(f"{name} must be {kind} integer, got {value!r}")
