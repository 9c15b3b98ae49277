"""``logmine ingest`` and ``logmine stats``: read session logs into the store, count what it holds."""

from __future__ import annotations

import enum
import json
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from logmine.cli.errors import fail, with_hints
from logmine.cli.main import app
from logmine.cli.options import (
    ExecutorOpt,
    JsonOpt,
    PipelineOpt,
    QuietOpt,
    RayAddressOpt,
    StoreOpt,
    executor_config,
    field_default,
    given,
    store_path,
)
from logmine.cli.output import bytes_progress, out
from logmine.demo import DEMO_INPUTS
from logmine.ingest.report import render_stats, stats
from logmine.ingest.run import IngestConfig, NothingToIngest, ingest
from logmine.ingest.summary import print_summary
from logmine.pipeline import load_pipeline
from logmine.store import Store

MIB_SHIFT = 20  # the flags count MiB, the config bytes


class Source(enum.StrEnum):
    codex = "codex"
    claude = "claude"
    all = "all"


class RedactStyle(enum.StrEnum):
    pseudonym = "pseudonym"
    placeholder = "placeholder"


def _mib(value: int | None) -> int | None:
    return None if value is None else value << MIB_SHIFT


@app.command("ingest")
@with_hints({NothingToIngest: "pass session files or directories, or --demo"})
def ingest_cmd(
    paths: Annotated[Optional[list[Path]], typer.Argument(
        help="Session files or directories (recursive). Default: $CODEX_HOME (else ~/.codex): "
             "sessions/, archived_sessions/, history.jsonl; and Claude Code's $CLAUDE_CONFIG_DIR/projects "
             "(else ~/.claude/projects).", show_default=False)] = None,
    store: StoreOpt = None,
    demo: Annotated[bool, typer.Option("--demo", help="Ingest the small demo corpus shipped with logmine.")] = False,
    pipeline: PipelineOpt = None,
    max_line_mb: Annotated[Optional[int], typer.Option(
        help="Quarantine lines longer than this many MiB.", min=1,
        show_default=str(field_default(IngestConfig, "max_line_bytes") >> MIB_SHIFT))] = None,
    batch_mb: Annotated[Optional[int], typer.Option(
        help="Commit to the store after about this many MiB of input.", min=1,
        show_default=str(field_default(IngestConfig, "batch_bytes") >> MIB_SHIFT))] = None,
    jobs: Annotated[Optional[int], typer.Option(
        "--jobs", "-j", help="Worker processes reading files.", min=1,
        show_default=str(field_default(IngestConfig, "jobs")))] = None,
    executor: ExecutorOpt = None,
    ray_address: RayAddressOpt = None,
    redact_style: Annotated[Optional[RedactStyle], typer.Option(
        "--redact-style", help="Replace secrets with consistent, format-preserving pseudonyms made with the "
        "store's key (redaction.json), or with [REDACTED:kind] placeholders. Recorded in the store; "
        "default: the store's, pseudonym for a new store.", show_default=False)] = None,
    source: Annotated[Optional[Source], typer.Option(
        "--source", help="Read only Codex or only Claude Code session files (told by their names: Claude Code's "
        "are <session uuid>.jsonl and agent-<id>.jsonl), from the default places and from the paths given.",
        show_default="all")] = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Read Codex and Claude Code session logs, redact secrets, write canonical tables to the store.

    Incremental: files already ingested are skipped, grown files are read from where the last run
    stopped, rewritten files are replaced. Bad lines are quarantined with a reason.
    """
    inputs = DEMO_INPUTS if demo else tuple(paths or ())
    settings = load_pipeline(pipeline)
    config = IngestConfig.from_settings(settings["ingest"], **given(
        paths=inputs or None, store=store, max_line_bytes=_mib(max_line_mb), batch_bytes=_mib(batch_mb), jobs=jobs,
        executor=executor_config(executor, ray_address, settings),
        redact_style=redact_style.value if redact_style else None, source=source.value if source else None))
    missing = [p for p in config.paths if not os.path.lexists(p)]  # the command line's or the pipeline's
    if missing:
        fail(f"no such file or directory: {missing[0]}")
    progress, set_total, advance = bytes_progress("ingest", show=not quiet and not as_json)
    with progress:
        summary = ingest(config, total_cb=set_total, progress=lambda n, _path: advance(n))
    print_summary(out, summary, config.store, as_json)
    if not summary.readable:
        fail(f"none of the {summary.files_seen} input files could be read", "see the bad files above")


@app.command("stats")
def stats_cmd(
    store: StoreOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Table counts of a store by format and Codex CLI version, and its yield funnel (`logmine yield`)."""
    store = store_path(store)
    if not (store / "catalog.duckdb").exists():
        fail(f"no logmine store at {store}", "run `logmine ingest` first or pass --store")
    # here: `logmine ingest` need not import verify or export
    from logmine.export.funnel import build_funnel, render_funnel
    from logmine.verify.report import environment_counts

    counts = stats(store)
    with Store(store, read_only=True) as opened:
        counts["environments"] = environment_counts(opened)
        funnel = build_funnel(opened)
    counts["funnel"] = funnel.to_dict()
    if as_json:
        out.print_json(json.dumps(counts))
    else:
        render_stats(out, counts, store)
        envs = counts["environments"]
        if envs["by_mode"]:
            out.print("environments of verified tasks: " + ", ".join(f"{m} {n}" for m, n in envs["by_mode"].items())
                      + "; languages: " + (", ".join(f"{k} {n}" for k, n in envs["by_language"].items()) or "-"),
                      highlight=False)
        render_funnel(out, funnel)
