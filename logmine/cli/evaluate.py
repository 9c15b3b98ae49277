"""``logmine filter`` and ``logmine eval``: K rollouts per task with one policy, then keep the tasks
with GRPO signal, or report pass@k.

Their settings are a ``SampleConfig`` (``logmine.evaluate.sampling``, which imports torch, hence
imported when a command runs): its defaults apply where a flag is not given.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from logmine.cli.errors import fail, require_torch
from logmine.cli.main import app
from logmine.cli.options import (
    EngineOpt,
    ExecutorOpt,
    RayAddressOpt,
    SeedOpt,
    SetOpt,
    executor_config,
    parse_sets,
)
from logmine.cli.output import counting_progress, num, out

DataOpt = Annotated[Path, typer.Option(help="TMax directory (`logmine export tmax` output).")]
ModelOpt = Annotated[Path, typer.Option(help="Local model directory with its tokenizer.")]
OutOpt = Annotated[Path, typer.Option("--out", help="Output directory (a rerun resumes it).")]
TempOpt = Annotated[Optional[float], typer.Option(help="Sampling temperature (default: the config's).")]
WorkersOpt = Annotated[Optional[int], typer.Option("--rollout-workers", min=1, help="Sandboxes in parallel.")]
ConfigOpt = Annotated[Optional[Path], typer.Option(help="YAML file of sampling settings (max_turns, ...).")]
DEFAULT_KS = "1,4,8"  # the k values of `logmine eval` (the library takes them as an argument)


def _sample_config(data, model, out_dir, samples, temperature, seed, engine, workers, config, sets):
    require_torch()
    from logmine.config import load_config
    from logmine.evaluate.sampling import SampleConfig

    overrides = {"data": data, "model": model, "out": out_dir, "samples": samples,
                 "temperature": temperature, "seed": seed, "engine": engine, "rollout_workers": workers}
    return load_config(config, overrides, kind=SampleConfig, settings=parse_sets(sets))


@app.command("filter")
def filter_cmd(data: DataOpt, model: ModelOpt, out_dir: OutOpt,
               k: Annotated[Optional[int], typer.Option(
                   "-k", "--k", min=1, help="Rollouts per task (default: the config's samples).")] = None,
               low: Annotated[Optional[float], typer.Option(
                   min=0.0, max=1.0, help="Keep pass rates above this (default: 0).")] = None,
               high: Annotated[Optional[float], typer.Option(
                   min=0.0, max=1.0, help="Keep pass rates below this (default: 1).")] = None,
               temperature: TempOpt = None, seed: SeedOpt = None, engine: EngineOpt = None,
               workers: WorkersOpt = None, config: ConfigOpt = None, sets: SetOpt = None,
               executor: ExecutorOpt = None, ray_address: RayAddressOpt = None) -> None:
    """Keep the tasks this policy sometimes solves (0 < pass rate < 1): the ones with GRPO signal."""
    settings = _sample_config(data, model, out_dir, k, temperature, seed, engine, workers, config, sets)
    from logmine.evaluate.filter import filter_tasks

    bounds = inspect.signature(filter_tasks).parameters  # the defaults of --low and --high
    low = bounds["low"].default if low is None else low
    high = bounds["high"].default if high is None else high
    if not low < high:  # the library raises a bare ValueError for this
        fail(f"need 0 <= low < high <= 1, got low={low}, high={high}")
    progress, update = counting_progress("filter", "tasks", True)
    with progress:
        summary = filter_tasks(settings, low, high, update, executor_config(executor, ray_address))
    out.print(f"[bold]filter[/]: kept {summary.kept} of {summary.tasks} tasks ({low:g} < pass rate < {high:g}); "
              f"never solved {summary.never}, always solved {summary.always}, no scored rollout {summary.no_rate}, "
              f"unscored rollouts {summary.unscored}", highlight=False, soft_wrap=True)
    _histogram(summary.rates, settings.samples)
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


def _ks(text: str, samples: int) -> tuple[int, ...]:
    """``--k`` as integers, each between 1 and the rollouts per task."""
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        fail(f"--k must be comma-separated integers, got {text!r}")
    bad = [k for k in ks if not 1 <= k <= samples]
    if bad:
        fail(f"every k must be between 1 and n={samples}, got {', '.join(map(str, bad))}")
    return ks


@app.command("eval")
def eval_cmd(data: DataOpt, model: ModelOpt, out_dir: OutOpt,
             n: Annotated[Optional[int], typer.Option(
                 "-n", min=1, help="Rollouts per task (default: the config's samples).")] = None,
             k: Annotated[str, typer.Option("--k", help="Comma-separated k values.")] = DEFAULT_KS,
             as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
             temperature: TempOpt = None, seed: SeedOpt = None, engine: EngineOpt = None,
             workers: WorkersOpt = None, config: ConfigOpt = None, sets: SetOpt = None,
             executor: ExecutorOpt = None, ray_address: RayAddressOpt = None) -> None:
    """pass@k (unbiased estimator, bootstrap 95% interval) of a policy on a TMax task set."""
    settings = _sample_config(data, model, out_dir, n, temperature, seed, engine, workers, config, sets)
    from logmine.evaluate.report import evaluate

    ks = _ks(k, settings.samples)
    progress, update = counting_progress("eval", "tasks", True)
    with progress:
        report = evaluate(settings, ks, update, executor_config(executor, ray_address))
    if as_json:
        out.print_json(json.dumps({key: v for key, v in report.items() if key != "per_task"}))
        return
    table = Table("k", "pass@k", "95% CI", "tasks", title=f"logmine eval: {report['tasks']} tasks, n={settings.samples}",
                  title_justify="left")
    for kk, row in report["pass_at_k"].items():
        ci = row["ci95"]
        table.add_row(kk, num(row["mean"]), f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-", str(row["tasks"]))
    out.print(table)
    out.print(f"solved (at least once): {len(report['solved'])}/{report['tasks']}; unscored rollouts "
              f"{report['unscored_rollouts']} → {Path(out_dir) / 'eval.json'}", highlight=False, soft_wrap=True)
