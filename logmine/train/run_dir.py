"""What the SFT and GRPO recipes share: their run directory and the pieces of a step both restore.

    claim_run_dir(config)                      # a fresh run: refuse a directory in use, write config.json
    state = latest_state(config.out)           # a resumed run: the latest complete checkpoint's state
    truncate_logs(config.out, state["step"])   # ... and the log rows written after it
    save_checkpoint(out / "checkpoints" / f"step-{step}", model, {"step": step, ...})

A run directory holds ``config.json``, ``metrics.jsonl`` (one JSON row per logged step, appended and
flushed as it is written: :class:`JsonlLog`), ``checkpoints/step-N/`` (``model/`` as
``save_pretrained`` writes it, plus :data:`STATE`, the recipe's own dict of optimizer, scheduler, RNG
and data position) and ``final/``. A checkpoint is written to ``step-N.partial`` and renamed when
complete, so a crash leaves a checkpoint complete or absent; resuming takes the latest complete one
and drops the log rows of later steps (a crash between a checkpoint and the next ones would repeat
them), including a last line the crash cut.

Also here: the learning-rate schedule both recipes use (:func:`lr_schedule`) and the model-directory
check (:func:`require_model_dir`). Not handled: sharded (FSDP) state; the caller decides which process
writes (SFT: the main one).
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import torch

from logmine.config import config_dict
from logmine.errors import LogmineError
from logmine.redact.files import JsonLines, write_text

STATE = "trainer_state.pt"
METRICS = "metrics.jsonl"


class TrainError(LogmineError, RuntimeError):
    """The run cannot start: no data, no model, a run directory in use, nothing to resume, a missing
    optional dependency."""


def require_model_dir(path: Path) -> None:
    """Raises TrainError unless ``path`` holds a ``save_pretrained`` model (nothing is downloaded)."""
    if not (Path(path) / "config.json").exists():  # the check agent.policy makes too; the SFT recipe loads no agent
        raise TrainError(f"no model at {path} (a local save_pretrained directory; "
                         "`logmine train init-model` makes a tiny one)")


def lr_schedule(config) -> Callable[[int], float]:
    """Linear warmup, then constant or cosine to 0 at ``max_steps`` (any config with ``warmup_steps``,
    ``schedule`` and ``max_steps``: SFT and GRPO), as a ``LambdaLR`` factor."""
    def factor(step: int) -> float:  # step = optimizer steps taken so far
        if step < config.warmup_steps:
            return (step + 1) / (config.warmup_steps + 1)
        if config.schedule == "constant":
            return 1.0
        span = max(config.max_steps - config.warmup_steps, 1)
        return 0.5 * (1 + math.cos(math.pi * min(step - config.warmup_steps, span) / span))
    return factor


def claim_run_dir(config, write: bool = True) -> None:
    """A fresh run in ``config.out``: raises TrainError when the directory holds another run's log or
    checkpoints; with ``write`` (the process that writes), creates it and records ``config.json``."""
    out = config.out
    if (out / METRICS).exists() or (out / "checkpoints").exists():
        raise TrainError(f"the run directory {out} is in use (pass resume to continue it, or another out)")
    if write:
        out.mkdir(parents=True, exist_ok=True)
        write_text(out / "config.json", json.dumps(config_dict(config), indent=2) + "\n", json=True)


def complete_checkpoints(directory: Path) -> list[Path]:
    """``step-N`` checkpoint directories in step order (a ``step-N.partial`` left by a crash is not one)."""
    found = [p for p in directory.glob("step-*") if p.is_dir() and p.name[5:].isdigit()]
    return sorted(found, key=lambda p: int(p.name[5:]))


def latest_state(out: Path) -> dict:
    """The :data:`STATE` dict of the latest complete checkpoint in ``out/checkpoints``. Raises
    TrainError when there is none or it cannot be read."""
    checkpoints = complete_checkpoints(out / "checkpoints")
    if not checkpoints:
        raise TrainError(f"nothing to resume: no checkpoint in {out / 'checkpoints'}")
    try:
        return torch.load(checkpoints[-1] / STATE, map_location="cpu", weights_only=False)
    except (OSError, RuntimeError, EOFError) as exc:
        raise TrainError(f"cannot read the checkpoint {checkpoints[-1]}: {exc}") from exc


def save_checkpoint(path: Path, model, state: dict) -> None:
    """``path/model/`` (``model.save_pretrained``) and ``path/`` :data:`STATE` (``state``), written
    under ``path.partial`` and renamed: a checkpoint directory is complete or absent."""
    partial = path.with_name(path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(str(partial / "model"))
    torch.save(state, partial / STATE)
    partial.rename(path)


def rng_state() -> dict:
    """Every random generator a step draws from (Python, NumPy, torch CPU and CUDA), to checkpoint."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def restore_rng(rng: dict) -> None:
    """Undo :func:`rng_state` (generators a checkpoint did not record are left as they are)."""
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    if rng.get("torch") is not None:
        torch.set_rng_state(rng["torch"])
    if torch.cuda.is_available() and rng.get("cuda"):
        torch.cuda.set_rng_state_all(rng["cuda"])


def truncate_logs(out: Path, step: int, names: Iterable[str] = (METRICS,)) -> None:
    """Drop the rows of steps after ``step`` from the JSON-lines logs ``names`` in ``out`` (a crash
    between checkpoint and log would repeat them); a line cut by a crash is dropped too."""
    for name in names:
        path = out / name
        if path.exists():
            rows = [line for line in path.read_text().splitlines()
                    if (at := _step_of(line)) is not None and at <= step]
            write_text(path, "".join(line + "\n" for line in rows))


def _step_of(line: str) -> int | None:
    try:
        return int(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return None


#: The run directory's JSON-lines logs (metrics, rollouts): the redaction gate's appender, flushed
#: at each write, so a crash leaves whole rows and at most one cut line (:func:`truncate_logs` drops it).
JsonlLog = JsonLines
