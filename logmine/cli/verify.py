"""``logmine verify``: rebuild, replay and grade each task's verifier candidates in a sandbox."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from logmine.cli.errors import with_hints
from logmine.cli.main import app
from logmine.cli.options import (
    ExecutorOpt,
    JsonOpt,
    PipelineOpt,
    PlainDirsOpt,
    QuietOpt,
    RayAddressOpt,
    RepoMapOpt,
    RepoSearchOpt,
    StoreOpt,
    executor_config,
    field_default,
    given,
    parse_repo_map,
    pipeline_store,
)
from logmine.cli.output import counting_progress, out
from logmine.export.funnel import read_funnel, render_funnel
from logmine.pipeline import load_pipeline
from logmine.verify import NothingToVerify, VerifyConfig, verify
from logmine.verify.report import render_verify_summary, verify_summary_dict


@app.command("verify")
@with_hints({NothingToVerify: "run `logmine ingest` and `logmine segment` first"})
def verify_cmd(
    store: StoreOpt = None,
    pipeline: PipelineOpt = None,
    repo_map: RepoMapOpt = None,
    jobs: Annotated[Optional[int], typer.Option(
        "--jobs", "-j", help="Tasks verified in parallel.", min=1,
        show_default=str(field_default(VerifyConfig, "jobs")))] = None,
    backend: Annotated[Optional[str], typer.Option(
        help="Sandbox backend: bwrap, docker or podman.", show_default=field_default(VerifyConfig, "backend"))] = None,
    timeout: Annotated[Optional[float], typer.Option(
        help="Seconds per replayed or grading command.", min=1,
        show_default=str(field_default(VerifyConfig, "timeout_s")))] = None,
    env_mode: Annotated[Optional[str], typer.Option(
        help="How each task's software environment is provided: auto (host, then built), host, built or none "
             "(docs/environments.md).", show_default=field_default(VerifyConfig, "env_mode"))] = None,
    repo_search: RepoSearchOpt = None,
    plain_dirs: PlainDirsOpt = None,
    redo: Annotated[Optional[list[str]], typer.Option(
        "--redo", help="Verify again the tasks holding this status (repeatable): validated, passes_at_start, "
                       "fails_after, unscored, not_rebuilt.")] = None,
    executor: ExecutorOpt = None,
    ray_address: RayAddressOpt = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Rebuild each task's start state in a sandbox, replay it, and keep a verifier candidate only
    if it fails before and passes after (the verifiers view gains status and status_reason).

    Resumable: tasks already verified for their current segmentation are skipped.
    """
    settings = load_pipeline(pipeline)
    config = VerifyConfig.from_settings(settings["verify"], store=pipeline_store(store, settings), **given(
        repo_map=parse_repo_map(repo_map), jobs=jobs, backend=backend, timeout_s=timeout, env_mode=env_mode,
        repo_search=tuple(repo_search) if repo_search else None, redo=tuple(redo) if redo else None,
        plain_dirs=plain_dirs, executor=executor_config(executor, ray_address, settings)))
    progress, report = counting_progress("verify", "tasks", show=not quiet and not as_json)
    with progress:
        summary = verify(config, progress=report)
    funnel = read_funnel(config.store)
    if as_json:
        out.print_json(json.dumps({**verify_summary_dict(summary, config.store), "funnel": funnel.to_dict()}))
    else:
        render_verify_summary(out, summary, config.store)
        render_funnel(out, funnel)
