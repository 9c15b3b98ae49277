"""``logmine export tmax``, ``logmine export swe``, ``logmine export sft`` and ``logmine export atif``: tasks
as RL rows with task bundles, SWE-bench-style instances, SFT data, or Harbor ATIF trajectories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from logmine.cli.main import app
from logmine.cli.options import (
    JsonOpt,
    PipelineOpt,
    PlainDirsOpt,
    QuietOpt,
    RepoMapOpt,
    RepoSearchOpt,
    StoreOpt,
    field_default,
    given,
    parse_repo_map,
    pipeline_store,
)
from logmine.cli.output import counting_progress, out
from logmine.export.atif import AtifExportConfig, export_atif
from logmine.export.sft import SftExportConfig, export_sft
from logmine.export.swe import SweExportConfig, export_swe
from logmine.export.tmax import TmaxExportConfig, export_tmax
from logmine.pipeline import load_pipeline

export_app = typer.Typer(
    help="Export tasks as training data: TMax RL rows with task bundles, SWE-bench-style instances, SFT data, "
         "or ATIF trajectories.",
    no_args_is_help=True)
app.add_typer(export_app, name="export")
_SHOWN_REASONS = 5  # tasks listed under each reason a task was not exported


def _tmax_default(name: str) -> str:
    return str(field_default(TmaxExportConfig, name))


def _sft_default(name: str) -> str:
    return str(field_default(SftExportConfig, name))


ImagePrefixOpt = Annotated[Optional[str], typer.Option(
    help="REGISTRY/NAMESPACE of the built images (tags PREFIX/REPO:KEY).", show_default=_tmax_default("image_prefix"))]
ImageEngineOpt = Annotated[Optional[str], typer.Option(
    help="podman or docker for --build-images; default: the first installed.")]


@export_app.command("tmax")
def export_tmax_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory (data/, tasks/, task-data.tar.gz).")],
    store: StoreOpt = None,
    pipeline: PipelineOpt = None,
    repo_map: RepoMapOpt = None,
    include_unvalidated: Annotated[Optional[bool], typer.Option(
        help="Also export tasks whose candidates were not validated (marked in `source`).",
        show_default=_tmax_default("include_unvalidated"))] = None,
    image: Annotated[Optional[str], typer.Option(
        help="A prebuilt image holding everything the tasks need (task.toml's docker_image); default: each "
             "bundle's environment/Dockerfile installs its dependencies.")] = None,
    repo_search: RepoSearchOpt = None,
    plain_dirs: PlainDirsOpt = None,
    check: Annotated[Optional[bool], typer.Option(
        help="Check each bundle in the sandbox before writing it (reward 0 on the seeds, 1 after the solution).",
        show_default=_tmax_default("check"))] = None,
    env_name: Annotated[Optional[str], typer.Option(
        help="env_config.env_name of the rows.", show_default=_tmax_default("env_name"))] = None,
    build_images: Annotated[Optional[bool], typer.Option(
        help="Build each task environment's image (podman or docker) and name it in env_config.image and "
             "image.txt, for trainers that start the row's image without building its Dockerfile.",
        show_default=_tmax_default("build_images"))] = None,
    image_prefix: ImagePrefixOpt = None,
    push: Annotated[bool, typer.Option("--push", help="Push each built image (log in to the registry first).")] = False,
    image_engine: ImageEngineOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """TMax RL rows (messages, ground_truth, dataset, env_config, source) with a Harbor-style task
    bundle per row (instruction.md, task.toml, environment/, tests/test.sh, solution/solve.sh)."""
    settings = load_pipeline(pipeline)
    flags = given(repo_map=parse_repo_map(repo_map), include_unvalidated=include_unvalidated, image=image,
                  env_name=env_name, repo_search=tuple(repo_search) if repo_search else None, check=check,
                  plain_dirs=plain_dirs, build_images=build_images or (push or None), image_prefix=image_prefix,
                  push=push or None, engine=image_engine)
    config = TmaxExportConfig.from_settings(settings["export"], settings["verify"],
                                            store=pipeline_store(store, settings), out=out_dir, **flags)
    summary = export_tmax(config)
    if as_json:
        out.print_json(json.dumps({
            "out": str(out_dir), "rows": summary.rows, "unvalidated": summary.unvalidated,
            "skipped_tasks": dict(summary.skipped), "credential_files_left_out": summary.left_out_files,
            "reproduced": summary.reproduced, "rejects": [{"task_id": t, "reason": r} for t, r in summary.rejects],
            "not_exported": [{"task_id": t, "reason": r} for t, r in summary.not_exported],
            "images": [{"tag": tag, "built": built} for tag, built in summary.images.items()],
            "redactions": dict(summary.redactions)}))
        return
    out.print(f"[bold]logmine export tmax[/]: {summary.rows} rows ({summary.unvalidated} unvalidated) → {out_dir}",
              highlight=False, soft_wrap=True)
    out.print(f"  bundles that reproduced (reward 0 on the seeds, 1 after the solution): {summary.reproduced}",
              highlight=False)
    for task_id, reason in summary.rejects:
        out.print(f"  rejected {task_id}: {reason}", highlight=False, soft_wrap=True)
    _print_not_exported(summary.skipped, summary.not_exported)
    _print_images(summary.images)
    out.print(f"  credential files left out of the seeds: {summary.left_out_files}; "
              f"redactions: {sum(summary.redactions.values())}", highlight=False)


def _print_images(images: dict[str, bool]) -> None:
    for tag, built in images.items():
        out.print(f"  image {tag} ({'built' if built else 'reused'})", highlight=False, soft_wrap=True)


def _print_not_exported(skipped, not_exported: list[tuple[str, str]]) -> None:
    """Each reason tasks were skipped for, with the tasks it stopped (the whole reason names the fix)."""
    for reason, n in skipped.most_common():
        out.print(f"  skipped {n} task(s): {reason}", highlight=False, soft_wrap=True)
        why = [(t, r) for t, r in not_exported if r.split(":")[0] == reason and r != reason]
        for task_id, full in why[:_SHOWN_REASONS]:
            out.print(f"    {task_id}: {full}", highlight=False, soft_wrap=True)
        if len(why) > _SHOWN_REASONS:
            out.print(f"    … and {len(why) - _SHOWN_REASONS} more (--json lists every one)", highlight=False)


@export_app.command("swe")
def export_swe_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory (data/, start_states/, README.md).")],
    store: StoreOpt = None,
    pipeline: PipelineOpt = None,
    repo_map: RepoMapOpt = None,
    repo_search: RepoSearchOpt = None,
    plain_dirs: PlainDirsOpt = None,
    build_images: Annotated[Optional[bool], typer.Option(
        help="Build each instance environment's image (podman or docker) and name it in environment_setup.",
        show_default=_tmax_default("build_images"))] = None,
    image_prefix: ImagePrefixOpt = None,
    image_engine: ImageEngineOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """SWE-bench-style instances (instance_id, repo, base_commit, problem_statement, patch, test_patch,
    FAIL_TO_PASS, PASS_TO_PASS, ...) of the tasks verify graded by tests, each validated in the sandbox
    before it is written."""
    settings = load_pipeline(pipeline)
    flags = given(repo_map=parse_repo_map(repo_map), repo_search=tuple(repo_search) if repo_search else None,
                  plain_dirs=plain_dirs, build_images=build_images, image_prefix=image_prefix, engine=image_engine)
    config = SweExportConfig.from_settings(settings["export"], settings["verify"],
                                           store=pipeline_store(store, settings), out=out_dir, **flags)
    summary = export_swe(config)
    if as_json:
        out.print_json(json.dumps({
            "out": str(out_dir), "instances": summary.instances, "with_base_commit": summary.with_base_commit,
            "skipped_tasks": dict(summary.skipped),
            "rejects": [{"task_id": t, "reason": r} for t, r in summary.rejects],
            "not_exported": [{"task_id": t, "reason": r} for t, r in summary.not_exported],
            "images": [{"tag": tag, "built": built} for tag, built in summary.images.items()],
            "redactions": dict(summary.redactions)}))
        return
    out.print(f"[bold]logmine export swe[/]: {summary.instances} instances ({summary.with_base_commit} with a "
              f"base commit, {summary.instances - summary.with_base_commit} with a start_state tarball) → {out_dir}",
              highlight=False, soft_wrap=True)
    for task_id, reason in summary.rejects:
        out.print(f"  rejected {task_id}: {reason}", highlight=False, soft_wrap=True)
    _print_not_exported(summary.skipped, summary.not_exported)
    _print_images(summary.images)


@export_app.command("sft")
def export_sft_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Output dataset directory (data/, tokens/, README.md).")],
    store: StoreOpt = None,
    pipeline: PipelineOpt = None,
    lam: Annotated[Optional[float], typer.Option(
        "--lambda", help="ActObs λ: loss weight of observation tokens (0: action-only SFT).", min=0.0,
        show_default=_sft_default("lam"))] = None,
    tokenizer: Annotated[Optional[Path], typer.Option(
        help="Local tokenizer directory: also write input_ids, loss_weights and per-token source.")] = None,
    min_verifier: Annotated[Optional[str], typer.Option(
        help="validated, candidate or any.", show_default=_sft_default("min_verifier"))] = None,
    tools: Annotated[Optional[str], typer.Option(
        help="canonical (bash + apply_patch) or raw (the agent's own tool names: Codex's, Claude Code's).", show_default=_sft_default("tools"))] = None,
    reasoning: Annotated[Optional[str], typer.Option(
        help="drop, or summary (kept as reasoning_content).", show_default=_sft_default("reasoning"))] = None,
    on_unstable: Annotated[Optional[str], typer.Option(
        help="A conversation whose rendering is not prefix-stable: drop, or split (one example per turn).",
        show_default=_sft_default("on_unstable"))] = None,
    max_chars: Annotated[Optional[int], typer.Option(help="Drop conversations longer than this.", min=1)] = None,
    max_tokens: Annotated[Optional[int], typer.Option(help="Drop token examples longer than this.", min=1)] = None,
    dedupe: Annotated[Optional[bool], typer.Option(
        help="Export identical conversations once.", show_default=_sft_default("dedupe"))] = None,
    overwrite: Annotated[Optional[bool], typer.Option(
        help="Replace a non-empty output directory.", show_default=_sft_default("overwrite"))] = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """ActObs-weighted SFT data: one chat example per task (messages + tools), and with --tokenizer the
    token-level form (action 1, observation λ, scaffold 0), as a Hugging Face dataset directory."""
    settings = load_pipeline(pipeline)
    flags = given(min_verifier=min_verifier, tools=tools, reasoning=reasoning, tokenizer=tokenizer, lam=lam,
                  on_unstable=on_unstable, max_chars=max_chars, max_tokens=max_tokens, dedupe=dedupe,
                  overwrite=overwrite)
    config = SftExportConfig.from_settings(settings["export"], store=pipeline_store(store, settings), out=out_dir,
                                           **flags)
    progress, report = counting_progress("export sft", "tasks", show=not quiet and not as_json)
    with progress:
        summary = export_sft(config, progress=report)
    if as_json:
        out.print_json(json.dumps({
            "out": str(out_dir), "tasks": summary.tasks, "examples": summary.examples,
            "token_examples": summary.token_examples, "duplicates": summary.duplicates,
            "dropped": dict(summary.dropped), "unstable": dict(summary.unstable), "tokens": dict(summary.tokens),
            "elapsed_s": round(summary.elapsed_s, 3)}))
        return
    out.print(f"[bold]logmine export sft[/]: {summary.examples} examples ({summary.token_examples} tokenized) "
              f"from {summary.tasks} tasks → {out_dir}", highlight=False, soft_wrap=True)
    for reason, n in summary.dropped.most_common():
        out.print(f"  dropped {n} task(s): {reason}", highlight=False, soft_wrap=True)
    if summary.tokens:
        out.print("  tokens: " + ", ".join(f"{k} {v}" for k, v in summary.tokens.most_common()), highlight=False)


def _atif_default(name: str) -> str:
    return str(field_default(AtifExportConfig, name))


@export_app.command("atif")
def export_atif_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory (trajectories/<task_id>.json, README.md).")],
    store: StoreOpt = None,
    pipeline: PipelineOpt = None,
    tools: Annotated[Optional[str], typer.Option(
        help="canonical (bash + apply_patch) or raw (the agent's own tool names: Codex's, Claude Code's).", show_default=_atif_default("tools"))] = None,
    reasoning: Annotated[Optional[str], typer.Option(
        help="summary (kept as reasoning_content), or drop.", show_default=_atif_default("reasoning"))] = None,
    overwrite: Annotated[Optional[bool], typer.Option(
        help="Replace a non-empty output directory.", show_default=_atif_default("overwrite"))] = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Harbor ATIF trajectories: one JSON document per task (user request, agent steps with tool calls and
    their observations, token totals, logmine provenance), each checked against the ATIF schema."""
    settings = load_pipeline(pipeline)
    flags = given(tools=tools, reasoning=reasoning, overwrite=overwrite)
    config = AtifExportConfig(store=pipeline_store(store, settings), out=out_dir, **flags)
    progress, report = counting_progress("export atif", "tasks", show=not quiet and not as_json)
    with progress:
        summary = export_atif(config, progress=report)
    if as_json:
        out.print_json(json.dumps({
            "out": str(out_dir), "tasks": summary.tasks, "trajectories": summary.trajectories,
            "steps": summary.steps, "with_tokens": summary.with_tokens, "dropped": dict(summary.dropped),
            "not_exported": [{"task_id": t, "reason": r} for t, r in summary.not_exported],
            "redactions": dict(summary.redactions), "elapsed_s": round(summary.elapsed_s, 3)}))
        return
    out.print(f"[bold]logmine export atif[/]: {summary.trajectories} trajectories ({summary.steps} steps) "
              f"from {summary.tasks} tasks → {out_dir}", highlight=False, soft_wrap=True)
    for reason, n in summary.dropped.most_common():
        out.print(f"  dropped {n} task(s): {reason}", highlight=False, soft_wrap=True)
