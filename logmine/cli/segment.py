"""``logmine segment``: cut ingested sessions into tasks and verifier candidates."""

from __future__ import annotations

import json

from logmine.cli.errors import with_hints
from logmine.cli.main import app
from logmine.cli.options import JsonOpt, PipelineOpt, QuietOpt, StoreOpt, pipeline_store
from logmine.cli.output import counting_progress, out
from logmine.pipeline import load_pipeline
from logmine.segment import NothingToSegment, SegmentConfig, segment
from logmine.segment.report import render_segment_summary, segment_summary_dict


@app.command("segment")
@with_hints({NothingToSegment: "run `logmine ingest` first"})
def segment_cmd(
    store: StoreOpt = None,
    pipeline: PipelineOpt = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Cut ingested sessions into tasks and extract verifier candidates (tables tasks, verifiers).

    Incremental: only sessions whose files changed since the last run are segmented again.
    """
    settings = load_pipeline(pipeline)
    config = SegmentConfig(store=pipeline_store(store, settings), settings=settings["segment"])
    progress, report = counting_progress("segment", "sessions", show=not quiet and not as_json)
    with progress:
        summary = segment(config, progress=report)
    if as_json:
        out.print_json(json.dumps(segment_summary_dict(summary, config.store)))
    else:
        render_segment_summary(out, summary, config.store)
