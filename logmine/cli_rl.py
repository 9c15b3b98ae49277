"""The RL commands of the ``logmine`` CLI: ``train grpo``, ``filter`` and ``eval`` (registered on the
app of :mod:`logmine.cli`; same rules: flags → one config dataclass → one library call, one-line errors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
import yaml
from rich.live import Live
from rich.table import Table

from logmine.cli import _counting_progress, _num, _train_module, app, err, fail, out, train_app

SetOpt = Annotated[Optional[list[str]], typer.Option(
    "--set", help="Any other config key, KEY=VALUE (YAML value), repeatable; e.g. --set delta=0.15.")]


def _sets(pairs: list[str] | None) -> dict:
    values = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--set expects KEY=VALUE, got {pair!r}")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            fail(f"--set {key}: the value is not valid YAML")
        if isinstance(parsed, str):  # YAML 1.1 reads 1e-3 as a string
            try:
                parsed = float(parsed)
            except ValueError:
                pass
        values[key.strip().replace("-", "_")] = parsed
    return values


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
    engine: Annotated[Optional[str], typer.Option(help="Rollout engine: hf or vllm.")] = None,
    rollout_workers: Annotated[Optional[int], typer.Option(min=1, help="Sandboxes stepped in parallel.")] = None,
    save_every: Annotated[Optional[int], typer.Option(min=0, help="Checkpoint every N steps.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue from the last checkpoint in --out.")] = False,
    seed: Annotated[Optional[int], typer.Option(help="Random seed.")] = None,
    sets: SetOpt = None,
) -> None:
    """Multi-turn GRPO with DPPO masking: rollouts of a bash agent in the sandbox, rewards from hidden tests."""
    train = _train_module()
    from logmine.train.grpo import train_grpo
    from logmine.train.grpo_config import GrpoTrainConfig

    overrides = {"data": data, "model": model, "out": out_dir, "max_steps": max_steps,
                 "group_size": group_size, "prompts_per_step": prompts_per_step, "loss": loss, "lr": lr,
                 "engine": engine, "rollout_workers": rollout_workers, "save_every": save_every,
                 "resume": resume or None, "seed": seed}
    try:
        settings = train.load_config(config, overrides, kind=GrpoTrainConfig, settings=_sets(sets))
    except train.ConfigError as exc:
        fail(str(exc))
    table = Table("step", "reward", "solved", "kept/drawn", "unscored", "masked", "|Δlogp| max", "kl ref",
                  "grad norm", "rollout s", "update s", title="logmine train grpo", title_justify="left")
    with Live(table, console=err, transient=True, auto_refresh=False) as live:  # drawn again below on success
        def on_metrics(row: dict) -> None:
            table.add_row(str(row["step"]), _num(row["reward_mean"]), _num(row["solve_rate"]),
                          f"{row['groups_kept']}/{row['prompts_drawn']}", str(row["unscored"]),
                          _num(row["masked_frac"]), _num(row["sampler_diff_max"]), _num(row["kl_ref"]),
                          _num(row["grad_norm"]), f"{row['rollout_s']:.1f}", f"{row['update_s']:.1f}")
            live.refresh()

        try:
            summary = train_grpo(settings, on_metrics=on_metrics)
        except train.TrainError as exc:
            fail(str(exc))
    err.print(table)
    out.print(f"trained {summary.steps} GRPO steps, {summary.rollouts} rollouts ({summary.unscored} unscored) "
              f"→ {summary.out}", highlight=False, soft_wrap=True)


def _sample_config(data, model, out_dir, samples, temperature, seed, engine, workers, config, sets):
    _train_module()
    from logmine.evaluate.sampling import SampleConfig
    from logmine.train.config import ConfigError, load_config

    overrides = {"data": data, "model": model, "out": out_dir, "samples": samples,
                 "temperature": temperature, "seed": seed, "engine": engine, "rollout_workers": workers}
    try:
        return load_config(config, overrides, kind=SampleConfig, settings=_sets(sets))
    except ConfigError as exc:
        fail(str(exc))


DataOpt = Annotated[Path, typer.Option(help="TMax directory (`logmine export tmax` output).")]
ModelOpt = Annotated[Path, typer.Option(help="Local model directory with its tokenizer.")]
OutOpt = Annotated[Path, typer.Option("--out", help="Output directory (a rerun resumes it).")]
TempOpt = Annotated[Optional[float], typer.Option(help="Sampling temperature (default 1.0).")]
SeedOpt = Annotated[Optional[int], typer.Option(help="Random seed.")]
EngineOpt = Annotated[Optional[str], typer.Option(help="Rollout engine: hf or vllm.")]
WorkersOpt = Annotated[Optional[int], typer.Option("--rollout-workers", min=1, help="Sandboxes in parallel.")]
ConfigOpt = Annotated[Optional[Path], typer.Option(help="YAML file of sampling settings (max_turns, ...).")]


@app.command("filter")
def filter_cmd(data: DataOpt, model: ModelOpt, out_dir: OutOpt,
               k: Annotated[int, typer.Option("-k", "--k", min=1, help="Rollouts per task.")] = 8,
               low: Annotated[float, typer.Option(help="Keep pass rates above this.")] = 0.0,
               high: Annotated[float, typer.Option(help="Keep pass rates below this.")] = 1.0,
               temperature: TempOpt = None, seed: SeedOpt = None, engine: EngineOpt = None,
               workers: WorkersOpt = None, config: ConfigOpt = None, sets: SetOpt = None) -> None:
    """Keep the tasks this policy sometimes solves (0 < pass rate < 1): the ones with GRPO signal."""
    from logmine.evaluate.filter import filter_tasks
    from logmine.evaluate.sampling import SamplingError

    settings = _sample_config(data, model, out_dir, k, temperature, seed, engine, workers, config, sets)
    progress, update = _counting_progress("filter", "tasks", True)
    try:
        with progress:
            summary = filter_tasks(settings, low, high, update)
    except (SamplingError, ValueError) as exc:
        fail(str(exc))
    out.print(f"[bold]filter[/]: kept {summary.kept} of {summary.tasks} tasks ({low:g} < pass rate < {high:g}); "
              f"never solved {summary.never}, always solved {summary.always}, no scored rollout {summary.no_rate}, "
              f"unscored rollouts {summary.unscored}", highlight=False, soft_wrap=True)
    _histogram(summary.rates, k)
    out.print(f"pass rates → {summary.out / 'pass_rates.parquet'}; filtered tasks → {summary.out / 'filtered'}",
              highlight=False, soft_wrap=True)


def _histogram(rates: list[float], k: int) -> None:
    bins = min(k, 10) + 1
    counts = [0] * bins
    for rate in rates:
        counts[min(int(rate * (bins - 1) + 1e-9), bins - 1)] += 1
    top = max(counts) or 1
    for i, count in enumerate(counts):
        lo = i / (bins - 1)
        out.print(f"  p≈{lo:4.2f} {'█' * round(30 * count / top):<30} {count}", highlight=False)


@app.command("eval")
def eval_cmd(data: DataOpt, model: ModelOpt, out_dir: OutOpt,
             n: Annotated[int, typer.Option("-n", min=1, help="Rollouts per task.")] = 8,
             k: Annotated[str, typer.Option("--k", help="Comma-separated k values.")] = "1,4,8",
             as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
             temperature: TempOpt = None, seed: SeedOpt = None, engine: EngineOpt = None,
             workers: WorkersOpt = None, config: ConfigOpt = None, sets: SetOpt = None) -> None:
    """pass@k (unbiased estimator, bootstrap 95% interval) of a policy on a TMax task set."""
    from logmine.evaluate.report import evaluate
    from logmine.evaluate.sampling import SamplingError

    try:
        ks = tuple(int(x) for x in k.split(",") if x.strip())
    except ValueError:
        fail(f"--k must be comma-separated integers, got {k!r}")
    settings = _sample_config(data, model, out_dir, n, temperature, seed, engine, workers, config, sets)
    progress, update = _counting_progress("eval", "tasks", True)
    try:
        with progress:
            report = evaluate(settings, ks, update)
    except (SamplingError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        out.print_json(json.dumps({key: v for key, v in report.items() if key != "per_task"}))
        return
    table = Table("k", "pass@k", "95% CI", "tasks", title=f"logmine eval: {report['tasks']} tasks, n={n}",
                  title_justify="left")
    for kk, row in report["pass_at_k"].items():
        ci = row["ci95"]
        table.add_row(kk, _num(row["mean"]), f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-", str(row["tasks"]))
    out.print(table)
    out.print(f"solved (at least once): {len(report['solved'])}/{report['tasks']}; unscored rollouts "
              f"{report['unscored_rollouts']} → {Path(out_dir) / 'eval.json'}", highlight=False, soft_wrap=True)
