"""``logmine train sft``, ``train grpo`` and ``train init-model``.

The training modules import torch, so they are imported when a command runs, not with the CLI:
``logmine --help`` and the data stages work without the ``train`` extra. Defaults come from the
recipe (``--config``) and the config dataclasses (``SftTrainConfig``, ``GrpoTrainConfig``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.live import Live
from rich.table import Table

from logmine.cli.errors import require_torch
from logmine.cli.main import app
from logmine.cli.options import EngineOpt, ResumeOpt, SeedOpt, SetOpt, given, parse_sets
from logmine.cli.output import err, num, out
from logmine.train.tiny import init_model  # imports torch only when called

train_app = typer.Typer(help="Train on exported data: SFT with the ActObs loss, GRPO with DPPO in the sandbox.",
                        no_args_is_help=True)
app.add_typer(train_app, name="train")


@train_app.command("sft")
def train_sft_cmd(
    data: Annotated[Optional[Path], typer.Option(help="`logmine export sft --tokenizer` output directory.")] = None,
    model: Annotated[Optional[Path], typer.Option(help="Local model directory (see `logmine train init-model`).")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Run directory: checkpoints, metrics.jsonl.")] = None,
    config: Annotated[Optional[Path], typer.Option(help="YAML recipe supplying defaults (train/sft-actobs.yaml).")] = None,
    lam: Annotated[Optional[float], typer.Option("--lambda", help="Re-weight observation tokens to λ "
                                                 "(default: the exported weights).", min=0.0)] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, help="Optimizer steps.")] = None,
    lr: Annotated[Optional[float], typer.Option(help="Peak learning rate.")] = None,
    batch_size: Annotated[Optional[int], typer.Option(help="Tokens per micro-batch (whole examples).", min=1)] = None,
    grad_accum: Annotated[Optional[int], typer.Option(help="Micro-batches per optimizer step.", min=1)] = None,
    normalisation: Annotated[Optional[str], typer.Option(help="example (the paper) or batch.")] = None,
    dtype: Annotated[Optional[str], typer.Option(help="fp32 or bf16.")] = None,
    packing: Annotated[Optional[bool], typer.Option(help="Padding-free packing of each micro-batch.")] = None,
    lora: Annotated[Optional[bool], typer.Option(help="Train LoRA adapters (peft).")] = None,
    save_every: Annotated[Optional[int], typer.Option(help="Checkpoint every N steps (0: only the end).")] = None,
    resume: ResumeOpt = False,
    seed: SeedOpt = None,
) -> None:
    """Supervised fine-tuning with the ActObs loss: -(Σ_A log p + λ Σ_O log p) / (|A| + λ|O|)."""
    require_torch()
    from logmine.config import load_config
    from logmine.train.sft import train_sft
    from logmine.train.sft_config import SftTrainConfig

    settings = load_config(config, {
        "data": data, "model": model, "out": out_dir, "lam": lam, "max_steps": max_steps, "lr": lr,
        "batch_tokens": batch_size, "grad_accum": grad_accum, "normalisation": normalisation, "dtype": dtype,
        "packing": packing, "lora": lora, "save_every": save_every, "resume": resume or None, "seed": seed},
        kind=SftTrainConfig)
    table = Table("step", "loss", "nll action", "nll obs", "lr", "grad norm", "tokens/s", title="logmine train sft",
                  title_justify="left")
    with Live(table, console=err, transient=True, auto_refresh=False) as live:  # drawn again below on success
        def on_metrics(row: dict) -> None:
            table.add_row(str(row["step"]), f"{row['loss']:.4f}", num(row.get("nll_action")),
                          num(row.get("nll_observation")), f"{row['lr']:.2e}", num(row.get("grad_norm")),
                          f"{row['tokens_per_s']:.0f}")
            live.refresh()

        summary = train_sft(settings, on_metrics=on_metrics)
    err.print(table)
    out.print(f"trained {summary.steps} steps on {summary.examples} examples ({summary.tokens} tokens), "
              f"final loss {summary.final_loss:.4f} → {summary.out}", highlight=False, soft_wrap=True)


@train_app.command("grpo")
def train_grpo_cmd(
    data: Annotated[Optional[Path], typer.Option(help="`logmine export tmax` output (rows + task bundles).")] = None,
    model: Annotated[Optional[Path], typer.Option(help="Local model directory with its tokenizer.")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Run directory: metrics, rollouts, checkpoints.")]
        = None,
    config: Annotated[Optional[Path], typer.Option(help="YAML recipe supplying defaults (train/grpo-dppo.yaml).")]
        = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, help="GRPO steps.")] = None,
    group_size: Annotated[Optional[int], typer.Option(min=2, help="Rollouts per prompt (G).")] = None,
    prompts_per_step: Annotated[Optional[int], typer.Option(min=1, help="Prompt groups per step.")] = None,
    loss: Annotated[Optional[str], typer.Option(help="dppo (default) or grpo.")] = None,
    lr: Annotated[Optional[float], typer.Option(help="Learning rate.")] = None,
    engine: EngineOpt = None,
    rollout_workers: Annotated[Optional[int], typer.Option(min=1, help="Sandboxes stepped in parallel.")] = None,
    save_every: Annotated[Optional[int], typer.Option(min=0, help="Checkpoint every N steps.")] = None,
    resume: ResumeOpt = False,
    seed: SeedOpt = None,
    sets: SetOpt = None,
) -> None:
    """Multi-turn GRPO with DPPO masking: rollouts of a bash agent in the sandbox, rewards from hidden tests."""
    require_torch()
    from logmine.config import load_config
    from logmine.train.grpo import train_grpo
    from logmine.train.grpo_config import GrpoTrainConfig

    overrides = {"data": data, "model": model, "out": out_dir, "max_steps": max_steps,
                 "group_size": group_size, "prompts_per_step": prompts_per_step, "loss": loss, "lr": lr,
                 "engine": engine, "rollout_workers": rollout_workers, "save_every": save_every,
                 "resume": resume or None, "seed": seed}
    settings = load_config(config, overrides, kind=GrpoTrainConfig, settings=parse_sets(sets))
    table = Table("step", "reward", "solved", "kept/drawn", "unscored", "masked", "|Δlogp| max", "kl ref",
                  "grad norm", "rollout s", "update s", title="logmine train grpo", title_justify="left")
    with Live(table, console=err, transient=True, auto_refresh=False) as live:  # drawn again below on success
        def on_metrics(row: dict) -> None:
            table.add_row(str(row["step"]), num(row["reward_mean"]), num(row["solve_rate"]),
                          f"{row['groups_kept']}/{row['prompts_drawn']}", str(row["unscored"]),
                          num(row["masked_frac"]), num(row["sampler_diff_max"]), num(row["kl_ref"]),
                          num(row["grad_norm"]), f"{row['rollout_s']:.1f}", f"{row['update_s']:.1f}")
            live.refresh()

        summary = train_grpo(settings, on_metrics=on_metrics)
    err.print(table)
    out.print(f"trained {summary.steps} GRPO steps, {summary.rollouts} rollouts ({summary.unscored} unscored) "
              f"→ {summary.out}", highlight=False, soft_wrap=True)


def _init_default(name: str) -> str:
    return str(inspect.signature(init_model).parameters[name].default)


@train_app.command("init-model")
def init_model_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the model and its tokenizer.")],
    arch: Annotated[Optional[str], typer.Option(help="qwen2 or llama.", show_default=_init_default("arch"))] = None,
    hidden_size: Annotated[Optional[int], typer.Option(min=8, show_default=_init_default("hidden_size"))] = None,
    layers: Annotated[Optional[int], typer.Option(min=1, show_default=_init_default("layers"))] = None,
) -> None:
    """A tiny random model with a locally trained tokenizer and a tool-calling chat template (offline).
    Needs the train extra: pip install 'logmine[train]'."""
    require_torch()
    path = init_model(out_dir, **given(arch=arch, hidden_size=hidden_size, layers=layers))
    out.print(f"tiny {arch or _init_default('arch')} model → {path}", highlight=False, soft_wrap=True)
