"""``logmine train sft``: supervised fine-tuning with the ActObs loss on the token-level export.

    summary = train_sft(load_config(Path("train/sft-actobs.yaml"), {"data": D, "model": M, "out": OUT},
                                    kind=SftTrainConfig))

One optimizer step = ``grad_accum`` micro-batches per process (``data.step_batches``: whole examples
packed into ``batch_tokens``-token rows). The loss (:mod:`logmine.train.loss`) is normalised over the
whole step, across micro-batches and processes, so accumulation and data parallelism do not change
it. Runs under ``accelerate`` (``accelerate launch --config_file train/accelerate-multigpu.yaml``)
or plain Python on one CPU; the code is the same.

The run directory ``out``: ``config.json``; ``metrics.jsonl`` (one JSON object per logged step: loss,
nll_action, nll_observation, lr, grad_norm, tokens, tokens_per_s, elapsed_s); ``checkpoints/step-N/``
every ``save_every`` steps (``model/`` as ``save_pretrained`` writes it, plus ``trainer_state.pt``:
trainable weights, optimizer, scheduler, RNG states, step = data position); ``final/`` at the end
(model + a copy of the tokenizer when the model directory has one). ``resume`` restores the latest
checkpoint and continues bit-for-bit (same data order, same RNG, same optimizer state). The run
directory's handling (claim, ``.partial`` checkpoints, resume, the metrics log) is shared with GRPO:
:mod:`logmine.train.run_dir`.

The library prints nothing (transformers' progress bars are turned off): ``on_metrics`` receives
every metrics row, for a live table. Not handled: examples longer than the model's context (they are
trained as they are), evaluation sets, FSDP/DeepSpeed sharding (plain DDP through accelerate).
"""

from __future__ import annotations

import math
import random
import shutil
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from logmine.train.data import TokenExample, collate, load_examples, step_batches
from logmine.train.loss import actobs_loss, step_denominator, token_nll
from logmine.train.run_dir import (
    METRICS,
    JsonlLog,
    TrainError,
    claim_run_dir,
    latest_state,
    lr_schedule,
    require_model_dir,
    restore_rng,
    rng_state,
    save_checkpoint,
    truncate_logs,
)
from logmine.train.sft_config import SftTrainConfig

__all__ = ["TrainError", "TrainSummary", "train_sft"]  # TrainError: the CLI imports it from here


@dataclass
class TrainSummary:
    steps: int = 0  # the last step reached
    resumed_from: int = 0  # the step a resumed run started after (0: fresh)
    examples: int = 0
    tokens: int = 0  # tokens processed in this invocation
    final_loss: float | None = None
    losses: list[float] = field(default_factory=list)  # every step of this invocation
    out: Path | None = None
    elapsed_s: float = 0.0


def train_sft(config: SftTrainConfig, on_metrics: Callable[[dict], None] | None = None) -> TrainSummary:
    """Train ``config.model`` on ``config.data`` for ``config.max_steps`` steps; see the module docstring."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    started = time.monotonic()
    if AcceleratorState._shared_state:  # another trainer in this process (TRL, an earlier run) set it up
        AcceleratorState._reset_state(reset_partial_state=True)
    accelerator = Accelerator(mixed_precision="bf16" if config.dtype == "bf16" else "no", cpu=not _has_gpu())
    _seed_everything(config.seed)
    try:
        examples = load_examples(config.data, config.lam)
    except ValueError as exc:
        raise TrainError(str(exc)) from exc
    model, pad_id = _load_model(config)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.lr,
                                  weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_schedule(config))
    model, optimizer = accelerator.prepare(model, optimizer)
    start = _start(config, accelerator, model, optimizer, scheduler)
    summary = TrainSummary(resumed_from=start, examples=len(examples), out=config.out)
    writer = _tensorboard(config) if accelerator.is_main_process else None
    ranks, rank = accelerator.num_processes, accelerator.process_index
    steps = step_batches(examples, config.batch_tokens, config.grad_accum * ranks, config.seed)
    for _ in range(start):  # the data position is the step number
        next(steps)
    with (JsonlLog(config.out / METRICS) if accelerator.is_main_process else nullcontext()) as metrics:
        try:
            for step in range(start + 1, config.max_steps + 1):
                t0 = time.monotonic()
                row = _train_step(config, accelerator, model, optimizer, scheduler, examples, next(steps), rank,
                                  ranks, pad_id)
                row.update(step=step, tokens_per_s=row["tokens"] / max(time.monotonic() - t0, 1e-9),
                           elapsed_s=time.monotonic() - started)
                summary.steps, summary.final_loss = step, row["loss"]
                summary.tokens += row["tokens"]
                summary.losses.append(row["loss"])
                if metrics and (step % config.log_every == 0 or step == config.max_steps):
                    _log(row, metrics, writer, on_metrics)
                if config.save_every and step % config.save_every == 0:
                    _save(config.out / "checkpoints" / f"step-{step}", accelerator, model, optimizer, scheduler,
                          step)
            _save_final(config, accelerator, model)
        finally:
            if writer:
                writer.close()
    summary.elapsed_s = time.monotonic() - started
    return summary


def _log(row: dict, metrics: JsonlLog, writer, on_metrics: Callable[[dict], None] | None) -> None:
    """One logged step (main process): a metrics.jsonl row, TensorBoard scalars, the caller's callback."""
    metrics.write(row)
    if writer:
        for key, value in row.items():
            if key != "step" and value is not None:
                writer.add_scalar(f"train/{key}", value, row["step"])
    if on_metrics:
        on_metrics(row)


def _train_step(config, accelerator, model, optimizer, scheduler, examples: list[TokenExample],
                micro: list[list[int]], rank: int, ranks: int, pad_id: int) -> dict:
    """One optimizer step over ``micro`` (every process's micro-batches; this one takes its share)."""
    weight_sums = [float(examples[i].weights[1:].sum()) for batch in micro for i in batch]
    denominator = step_denominator(weight_sums, config.normalisation)
    mine = micro[rank::ranks]
    loss_sum = torch.zeros(5, dtype=torch.float64)  # loss, Σnll_A, |A|, Σnll_O, |O|
    tokens = 0
    model.train()
    for k, batch in enumerate(mine):
        mb = collate([examples[i] for i in batch], pad_id, config.packing)
        device = accelerator.device
        with accelerator.autocast():
            logits = model(input_ids=mb.input_ids.to(device), use_cache=False,
                           position_ids=None if mb.position_ids is None else mb.position_ids.to(device),
                           attention_mask=None if mb.attention_mask is None else mb.attention_mask.to(device)).logits
        nll = token_nll(logits, mb.targets.to(device))
        loss = actobs_loss(nll, mb.weights.to(device), mb.segment.to(device), config.normalisation, denominator)
        # DDP averages gradients over processes; the loss is already a share of the global step
        sync = accelerator.no_sync(model) if k < len(mine) - 1 else nullcontext()
        with sync:
            accelerator.backward(loss * ranks)
        with torch.no_grad():
            a, o = mb.action.to(device), mb.observation.to(device)
            loss_sum += torch.stack([loss.detach().double().cpu(), nll[a].sum().double().cpu(), a.sum().double().cpu(),
                                     nll[o].sum().double().cpu(), o.sum().double().cpu()])
        tokens += mb.n_tokens
    totals = accelerator.reduce(torch.cat([loss_sum, torch.tensor([tokens], dtype=torch.float64)])
                                .to(accelerator.device), "sum").cpu()
    max_norm = config.max_grad_norm if config.max_grad_norm is not None else math.inf
    grad_norm = accelerator.clip_grad_norm_(model.parameters(), max_norm)
    lr = scheduler.get_last_lr()[0]
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    loss_, nll_a, n_a, nll_o, n_o, tokens_ = totals.tolist()
    return {"loss": loss_, "nll_action": nll_a / n_a if n_a else None, "nll_observation": nll_o / n_o if n_o else None,
            "lr": lr, "grad_norm": float(grad_norm), "tokens": int(tokens_), "action_tokens": int(n_a),
            "observation_tokens": int(n_o)}


def _load_model(config: SftTrainConfig):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    require_model_dir(config.model)
    model = AutoModelForCausalLM.from_pretrained(str(config.model), local_files_only=True, dtype=torch.float32)
    pad_id = model.config.pad_token_id
    if pad_id is None:
        try:
            pad_id = AutoTokenizer.from_pretrained(str(config.model), local_files_only=True).pad_token_id
        except (OSError, ValueError):
            pad_id = None
    if config.lora:
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as exc:
            raise TrainError("lora needs peft: pip install peft") from exc
        model = get_peft_model(model, LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                                                 lora_dropout=config.lora_dropout, target_modules="all-linear",
                                                 task_type="CAUSAL_LM"))
    return model, int(pad_id or 0)


def _start(config, accelerator, model, optimizer, scheduler) -> int:
    """Claim the run directory; on resume, restore the latest checkpoint and return its step."""
    if not config.resume:
        claim_run_dir(config, write=accelerator.is_main_process)
        accelerator.wait_for_everyone()
        return 0
    state = latest_state(config.out)
    trainable = dict(_trainable(accelerator.unwrap_model(model)))
    with torch.no_grad():
        for name, value in state["trainable"].items():
            trainable[name].copy_(value)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    restore_rng(state["rng"])
    if accelerator.is_main_process:
        truncate_logs(config.out, int(state["step"]))
    accelerator.wait_for_everyone()
    return int(state["step"])


def _save(path: Path, accelerator, model, optimizer, scheduler, step: int) -> None:
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(model)
        save_checkpoint(path, unwrapped, {
            "step": step, "trainable": {n: p.detach().cpu().clone() for n, p in _trainable(unwrapped)},
            "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "rng": rng_state()})
    accelerator.wait_for_everyone()


def _save_final(config: SftTrainConfig, accelerator, model) -> None:
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        final = config.out / "final"
        accelerator.unwrap_model(model).save_pretrained(str(final))
        for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json"):
            if (config.model / name).exists():
                shutil.copy2(config.model / name, final / name)


def _trainable(model):
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def _tensorboard(config: SftTrainConfig):
    if not config.tensorboard:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise TrainError("tensorboard logging needs the tensorboard package: pip install tensorboard") from exc
    return SummaryWriter(str(config.out / "tensorboard"))


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _has_gpu() -> bool:
    return torch.cuda.is_available()

