"""The ``logmine`` command line: thin typer commands over the library.

Each command parses its flags into the stage's config dataclass and calls one library function.
Library errors become one line ``Error: …`` on stderr and exit code 1; never a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from logmine import __version__
from logmine.demo import DEMO_INPUTS
from logmine.ingest import IngestConfig, NothingToIngest, ingest
from logmine.ingest.report import render_stats, render_summary, stats, summary_dict
from logmine.ingest.run import DEFAULT_JOBS
from logmine.pipeline import PipelineError
from logmine.segment import NothingToSegment, SegmentConfig, segment
from logmine.segment.report import render_segment_summary, segment_summary_dict
from logmine.store import StoreError
from logmine.verify import NothingToVerify, VerifyConfig, verify
from logmine.verify.report import render_verify_summary, verify_summary_dict

app = typer.Typer(
    name="logmine",
    help="Turn Codex CLI session logs into verified training data: ingest → segment → verify → export → train.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

StoreOpt = Annotated[
    Path,
    typer.Option("--store", envvar="LOGMINE_STORE", help="Store directory (Parquet tables + catalog.duckdb)."),
]


def fail(message: str, hint: str | None = None) -> None:
    text = f"[bold red]Error:[/] {escape(message)}" + (f" [dim]({escape(hint)})[/]" if hint else "")
    err.print(text, highlight=False, soft_wrap=True)
    raise typer.Exit(1)


def _counting_progress(label: str, unit: str, show: bool):
    """A progress bar over counted items and the ``(done, total)`` callback that drives it."""
    progress = Progress(TextColumn(label), BarColumn(), TextColumn(f"{{task.completed}}/{{task.total}} {unit}"),
                        TimeRemainingColumn(), console=err, disable=not (show and err.is_terminal), transient=True)
    task = progress.add_task(label, total=None)
    return progress, lambda done, total: progress.update(task, completed=done, total=total)


@app.callback(invoke_without_command=True)
def main(version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False) -> None:
    if version:
        out.print(f"logmine {__version__}")
        raise typer.Exit()


@app.command("ingest")
def ingest_cmd(
    paths: Annotated[Optional[list[Path]], typer.Argument(
        help="Session files or directories (recursive). Default: $CODEX_HOME (else ~/.codex): "
             "sessions/, archived_sessions/, history.jsonl.", show_default=False)] = None,
    store: StoreOpt = Path("logmine-store"),
    demo: Annotated[bool, typer.Option("--demo", help="Ingest the small demo corpus shipped with logmine.")] = False,
    max_line_mb: Annotated[int, typer.Option(help="Quarantine lines longer than this many MiB.", min=1)] = 32,
    batch_mb: Annotated[int, typer.Option(help="Commit to the store after about this many MiB of input.", min=1)] = 64,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Worker processes reading files.", min=1)] =
        DEFAULT_JOBS,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Read Codex session logs, redact secrets, write canonical tables to the store.

    Incremental: files already ingested are skipped, grown files are read from where the last run
    stopped, rewritten files are replaced. Bad lines are quarantined with a reason.
    """
    inputs = tuple(paths or ())
    if demo:
        inputs = DEMO_INPUTS
    missing = [p for p in inputs if not os.path.lexists(p)]
    if missing:
        fail(f"no such file or directory: {missing[0]}")
    config = IngestConfig(paths=inputs, store=store, max_line_bytes=max_line_mb << 20, batch_bytes=batch_mb << 20, jobs=jobs)
    show = not quiet and not as_json and err.is_terminal
    progress = Progress(TextColumn("ingest"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                        TimeRemainingColumn(), console=err, disable=not show, transient=True)
    task = progress.add_task("ingest", total=None)
    try:
        with progress:
            summary = ingest(config, total_cb=lambda n: progress.update(task, total=n),
                             progress=lambda n, _path: progress.advance(task, n))
    except NothingToIngest as exc:
        fail(str(exc), "pass session files or directories, or --demo")
    except StoreError as exc:
        fail(str(exc))
    if as_json:
        out.print_json(json.dumps(summary_dict(summary, store)))
    else:
        render_summary(out, summary, store)
    if not summary.readable:
        fail(f"none of the {summary.files_seen} input files could be read", "see the bad files above")


@app.command("stats")
def stats_cmd(
    store: StoreOpt = Path("logmine-store"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Table counts of a store by format and Codex CLI version."""
    if not (store / "catalog.duckdb").exists():
        fail(f"no logmine store at {store}", "run `logmine ingest` first or pass --store")
    try:
        counts = stats(store)
    except StoreError as exc:
        fail(str(exc))
    if as_json:
        out.print_json(json.dumps(counts))
    else:
        render_stats(out, counts, store)


@app.command("segment")
def segment_cmd(
    store: StoreOpt = Path("logmine-store"),
    pipeline: Annotated[Optional[Path], typer.Option(
        help="Pipeline TOML overriding logmine/pipelines/codex-default.toml ([segment]).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Cut ingested sessions into tasks and extract verifier candidates (tables tasks, verifiers).

    Incremental: only sessions whose files changed since the last run are segmented again.
    """
    config = SegmentConfig(store=store, pipeline=pipeline)
    progress, report = _counting_progress("segment", "sessions", show=not quiet and not as_json)
    try:
        with progress:
            summary = segment(config, progress=report)
    except (NothingToSegment, PipelineError, StoreError) as exc:
        fail(str(exc), "run `logmine ingest` first" if isinstance(exc, NothingToSegment) else None)
    if as_json:
        out.print_json(json.dumps(segment_summary_dict(summary, store)))
    else:
        render_segment_summary(out, summary, store)


@app.command("verify")
def verify_cmd(
    store: StoreOpt = Path("logmine-store"),
    repo_map: Annotated[Optional[list[str]], typer.Option(
        "--repo-map", help="OLD=NEW: the repository recorded at OLD now lives at NEW (repeatable).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Tasks verified in parallel.", min=1)] = 2,
    backend: Annotated[str, typer.Option(help="Sandbox backend: bwrap, docker or podman.")] = "bwrap",
    timeout: Annotated[float, typer.Option(help="Seconds per replayed or grading command.", min=1)] = 120.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Rebuild each task's start state in a sandbox, replay it, and keep a verifier candidate only
    if it fails before and passes after (the verifiers view gains status and status_reason).

    Resumable: tasks already verified for their current segmentation are skipped.
    """
    config = VerifyConfig(store=store, repo_map=tuple(_repo_map(repo_map)), jobs=jobs, backend=backend, timeout_s=timeout)
    progress, report = _counting_progress("verify", "tasks", show=not quiet and not as_json)
    try:
        with progress:
            summary = verify(config, progress=report)
    except NothingToVerify as exc:
        fail(str(exc), "run `logmine ingest` and `logmine segment` first")
    except StoreError as exc:
        fail(str(exc))
    if as_json:
        out.print_json(json.dumps(verify_summary_dict(summary, store)))
    else:
        render_verify_summary(out, summary, store)


export_app = typer.Typer(help="Export tasks as training data: TMax RL rows with task bundles, or SFT data.",
                         no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("tmax")
def export_tmax_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory (data/, tasks/, task-data.tar.gz).")],
    store: StoreOpt = Path("logmine-store"),
    repo_map: Annotated[Optional[list[str]], typer.Option(
        "--repo-map", help="OLD=NEW: the repository recorded at OLD now lives at NEW (repeatable).")] = None,
    include_unvalidated: Annotated[bool, typer.Option(
        help="Also export tasks whose candidates were not validated (marked in `source`).")] = False,
    image: Annotated[str, typer.Option(help="Base image of the task environments.")] = "python:3.11-slim",
    env_name: Annotated[str, typer.Option(help="env_config.env_name of the rows.")] = "swerl_vanillux_sandbox",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """TMax RL rows (messages, ground_truth, dataset, env_config, source) with a Harbor-style task
    bundle per row (instruction.md, task.toml, environment/, tests/test.sh, solution/solve.sh)."""
    from logmine.export.tmax import ExportError, TmaxExportConfig, export_tmax

    config = TmaxExportConfig(store=store, out=out_dir, repo_map=tuple(_repo_map(repo_map)),
                              include_unvalidated=include_unvalidated, image=image, env_name=env_name)
    try:
        summary = export_tmax(config)
    except (ExportError, StoreError) as exc:
        fail(str(exc))
    result = {"out": str(out_dir), "rows": summary.rows, "unvalidated": summary.unvalidated,
              "skipped_tasks": dict(summary.skipped), "credential_files_left_out": summary.left_out_files,
              "redactions": dict(summary.redactions)}
    if as_json:
        out.print_json(json.dumps(result))
        return
    out.print(f"[bold]logmine export tmax[/]: {summary.rows} rows ({summary.unvalidated} unvalidated) → {out_dir}",
              highlight=False, soft_wrap=True)
    for reason, n in summary.skipped.most_common():
        out.print(f"  skipped {n} task(s): {reason}", highlight=False, soft_wrap=True)
    out.print(f"  credential files left out of the seeds: {summary.left_out_files}; "
              f"redactions: {sum(summary.redactions.values())}", highlight=False)


def _repo_map(items: list[str] | None) -> list[tuple[str, str]]:
    pairs = []
    for item in items or []:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            fail(f"--repo-map expects OLD=NEW, got {item!r}")
        pairs.append((old, new))
    return pairs


@export_app.command("sft")
def export_sft_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Output dataset directory (data/, tokens/, README.md).")],
    store: StoreOpt = Path("logmine-store"),
    lam: Annotated[float, typer.Option("--lambda", help="ActObs λ: loss weight of observation tokens (0: "
                                       "action-only SFT).", min=0.0)] = 1.0,
    tokenizer: Annotated[Optional[Path], typer.Option(
        help="Local tokenizer directory: also write input_ids, loss_weights and per-token source.")] = None,
    min_verifier: Annotated[str, typer.Option(help="validated, candidate or any.")] = "validated",
    tools: Annotated[str, typer.Option(help="canonical (bash + apply_patch) or raw (Codex's tool names).")] =
        "canonical",
    reasoning: Annotated[str, typer.Option(help="drop, or summary (kept as reasoning_content).")] = "drop",
    on_unstable: Annotated[str, typer.Option(help="A conversation whose rendering is not prefix-stable: "
                                             "drop, or split (one example per turn).")] = "drop",
    max_chars: Annotated[Optional[int], typer.Option(help="Drop conversations longer than this.", min=1)] = None,
    max_tokens: Annotated[Optional[int], typer.Option(help="Drop token examples longer than this.", min=1)] = None,
    dedupe: Annotated[bool, typer.Option(help="Export identical conversations once.")] = True,
    overwrite: Annotated[bool, typer.Option(help="Replace a non-empty output directory.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """ActObs-weighted SFT data: one chat example per task (messages + tools), and with --tokenizer the
    token-level form (action 1, observation λ, scaffold 0), as a Hugging Face dataset directory."""
    from logmine.export.sft import SftExportConfig, SftExportError, export_sft

    config = SftExportConfig(store=store, out=out_dir, min_verifier=min_verifier, tools=tools, reasoning=reasoning,
                             tokenizer=tokenizer, lam=lam, on_unstable=on_unstable, max_chars=max_chars,
                             max_tokens=max_tokens, dedupe=dedupe, overwrite=overwrite)
    progress, report = _counting_progress("export sft", "tasks", show=not quiet and not as_json)
    try:
        with progress:
            summary = export_sft(config, progress=report)
    except (SftExportError, StoreError) as exc:
        fail(str(exc))
    result = {"out": str(out_dir), "tasks": summary.tasks, "examples": summary.examples,
              "token_examples": summary.token_examples, "duplicates": summary.duplicates,
              "dropped": dict(summary.dropped), "unstable": dict(summary.unstable), "tokens": dict(summary.tokens),
              "elapsed_s": round(summary.elapsed_s, 3)}
    if as_json:
        out.print_json(json.dumps(result))
        return
    out.print(f"[bold]logmine export sft[/]: {summary.examples} examples ({summary.token_examples} tokenized) "
              f"from {summary.tasks} tasks → {out_dir}", highlight=False, soft_wrap=True)
    for reason, n in summary.dropped.most_common():
        out.print(f"  dropped {n} task(s): {reason}", highlight=False, soft_wrap=True)
    if summary.tokens:
        out.print("  tokens: " + ", ".join(f"{k} {v}" for k, v in summary.tokens.most_common()), highlight=False)


train_app = typer.Typer(help="Train on exported data: SFT with the ActObs loss, GRPO with DPPO in the sandbox.",
                        no_args_is_help=True)
app.add_typer(train_app, name="train")


def _train_module():
    try:
        from logmine.train import config, sft, tiny  # sft imports torch
    except ImportError as exc:
        fail(f"logmine train needs torch, transformers and accelerate ({exc.name} is missing)",
             "pip install 'logmine[train]'")
    return SimpleNamespace(load_config=config.load_config, ConfigError=config.ConfigError, train_sft=sft.train_sft,
                           TrainError=sft.TrainError, init_model=tiny.init_model)


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
    resume: Annotated[bool, typer.Option(help="Continue from the last checkpoint in --out.")] = False,
    seed: Annotated[Optional[int], typer.Option(help="Random seed.")] = None,
) -> None:
    """Supervised fine-tuning with the ActObs loss: -(Σ_A log p + λ Σ_O log p) / (|A| + λ|O|)."""
    train = _train_module()
    overrides = {"data": data, "model": model, "out": out_dir, "lam": lam, "max_steps": max_steps, "lr": lr,
                 "batch_tokens": batch_size, "grad_accum": grad_accum, "normalisation": normalisation,
                 "dtype": dtype, "packing": packing, "lora": lora, "save_every": save_every,
                 "resume": resume or None, "seed": seed}
    try:
        settings = train.load_config(config, overrides)
    except train.ConfigError as exc:
        fail(str(exc))
    table = Table("step", "loss", "nll action", "nll obs", "lr", "grad norm", "tokens/s", title="logmine train sft",
                  title_justify="left")
    with Live(table, console=err, transient=True, auto_refresh=False) as live:  # drawn again below on success
        def on_metrics(row: dict) -> None:
            table.add_row(str(row["step"]), f"{row['loss']:.4f}", _num(row.get("nll_action")),
                          _num(row.get("nll_observation")), f"{row['lr']:.2e}", _num(row.get("grad_norm")),
                          f"{row['tokens_per_s']:.0f}")
            live.refresh()

        try:
            summary = train.train_sft(settings, on_metrics=on_metrics)
        except train.TrainError as exc:
            fail(str(exc))
    err.print(table)
    out.print(f"trained {summary.steps} steps on {summary.examples} examples ({summary.tokens} tokens), "
              f"final loss {summary.final_loss:.4f} → {summary.out}", highlight=False, soft_wrap=True)


@train_app.command("init-model")
def init_model_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the model and its tokenizer.")],
    arch: Annotated[str, typer.Option(help="qwen2 or llama.")] = "qwen2",
    hidden_size: Annotated[int, typer.Option(min=8)] = 32,
    layers: Annotated[int, typer.Option(min=1)] = 2,
) -> None:
    """A tiny random model with a locally trained tokenizer and a tool-calling chat template (offline)."""
    train = _train_module()
    path = train.init_model(out_dir, arch=arch, hidden_size=hidden_size, layers=layers)
    out.print(f"tiny {arch} model → {path}", highlight=False, soft_wrap=True)


def _num(value) -> str:
    return "-" if value is None else f"{value:.4f}"


@app.command("run")
def run_cmd(
    demo: Annotated[bool, typer.Option("--demo", help="Run on the small corpus (and repository) shipped with "
                                       "logmine.")] = False,
    pipeline: Annotated[Optional[Path], typer.Option(
        help="Pipeline TOML overriding logmine/pipelines/codex-default.toml.")] = None,
    store: Annotated[Optional[Path], typer.Option("--store", envvar="LOGMINE_STORE",
                                                  help="Store directory (default: the pipeline's).")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Export directory (default: the pipeline's).")] =
        None,
) -> None:
    """The main job: ingest → segment → verify → export (SFT and TMax), on ~/.codex or with --demo."""
    from logmine.export.sft import SftExportError
    from logmine.export.tmax import ExportError
    from logmine.run import RunConfig, run_pipeline

    config = RunConfig(store=store, pipeline=pipeline, demo=demo, out=out_dir)
    try:
        with err.status("running") as status:
            summary = run_pipeline(config, on_stage=lambda name: status.update(f"{name} …"))
    except NothingToIngest as exc:
        fail(str(exc), "pass --demo, or set [ingest] paths in a pipeline file")
    except (NothingToSegment, NothingToVerify, PipelineError, StoreError, SftExportError, ExportError) as exc:
        fail(str(exc))
    render_summary(out, summary.ingest, summary.store)
    render_segment_summary(out, summary.segment, summary.store)
    render_verify_summary(out, summary.verify, summary.store)
    if summary.sft:
        out.print(f"[bold]export sft[/]: {summary.sft.examples} examples", highlight=False)
    if summary.tmax:
        out.print(f"[bold]export tmax[/]: {summary.tmax.rows} rows with task bundles", highlight=False)
    table = Table("output", "where", title="logmine run: outputs", title_justify="left")
    for name, path in summary.outputs.items():
        table.add_row(name, str(path))
    out.print(table)


from logmine import cli_rl  # noqa: E402,F401 - registers train grpo, filter and eval
