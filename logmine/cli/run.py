"""``logmine run``: the main job, every data stage in order as a pipeline file declares."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from logmine.cli.errors import with_hints
from logmine.cli.main import app
from logmine.cli.options import ExecutorOpt, PipelineOpt, RayAddressOpt, executor_config
from logmine.cli.output import err, out
from logmine.export.funnel import read_funnel, render_funnel
from logmine.ingest.run import NothingToIngest
from logmine.ingest.summary import render_summary
from logmine.locations import STORE_ENV
from logmine.run import RunConfig, run_pipeline
from logmine.segment.report import render_segment_summary
from logmine.verify.report import render_verify_summary


@app.command("run")
@with_hints({NothingToIngest: "pass --demo, or set [ingest] paths in a pipeline file"})
def run_cmd(
    demo: Annotated[bool, typer.Option("--demo", help="Run on the small corpus (and repository) shipped with "
                                       "logmine.")] = False,
    pipeline: PipelineOpt = None,
    store: Annotated[Optional[Path], typer.Option("--store", envvar=STORE_ENV,
                                                  help="Store directory (default: the pipeline's).")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Export directory (default: the pipeline's).")] =
        None,
    executor: ExecutorOpt = None,
    ray_address: RayAddressOpt = None,
) -> None:
    """The main job: ingest → segment → verify → export (SFT and TMax), on ~/.codex or with --demo."""
    config = RunConfig(store=store, pipeline=pipeline, demo=demo, out=out_dir,
                       executor=executor_config(executor, ray_address))
    with err.status("running") as status:
        summary = run_pipeline(config, on_stage=lambda name: status.update(f"{name} …"))
    render_summary(out, summary.ingest, summary.store)
    render_segment_summary(out, summary.segment, summary.store)
    render_verify_summary(out, summary.verify, summary.store)
    if summary.sft:
        out.print(f"[bold]export sft[/]: {summary.sft.examples} examples", highlight=False)
    if summary.tmax:
        out.print(f"[bold]export tmax[/]: {summary.tmax.rows} rows with task bundles", highlight=False)
    tmax = summary.outputs.get("tmax") if summary.tmax else None
    render_funnel(out, read_funnel(summary.store, tmax, dict(summary.tmax.rejects) if summary.tmax else None))
    table = Table("output", "where", title="logmine run: outputs", title_justify="left")
    for name, path in summary.outputs.items():
        table.add_row(name, str(path))
    out.print(table)
