"""``logmine run``: the main job — ingest → segment → verify → export, as a pipeline file declares.

The stages and their parameters come from a pipeline (default ``pipelines/codex-default.toml``).
With ``demo=True`` the inputs are the corpus shipped in ``logmine/demo/``: real Codex CLI sessions
(several versions) and public ones, plus the repository one of them worked in, so verification
really rebuilds, replays and validates that session's tasks.
"""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from logmine.demo import DEMO_DIR, DEMO_INPUTS
from logmine.executor import ExecutorConfig
from logmine.export.sft import SftExportConfig, SftExportSummary, export_sft
from logmine.export.tmax import TmaxExportConfig, TmaxExportSummary, export_tmax
from logmine.ingest.run import IngestConfig, ingest
from logmine.ingest.summary import IngestSummary
from logmine.pipeline import executor_of, load_pipeline
from logmine.segment.run import SegmentConfig, SegmentSummary, segment
from logmine.store import Store
from logmine.verify.run import VerifyConfig, VerifySummary, verify


@dataclass(frozen=True, slots=True)
class RunConfig:
    store: Path | None = None  # default: the pipeline's [ingest] store
    pipeline: Path | None = None
    demo: bool = False
    out: Path | None = None  # default: the pipeline's [export] out
    executor: ExecutorConfig | None = None  # default: the pipeline's [executor]


@dataclass
class RunSummary:
    store: Path
    out: Path
    ingest: IngestSummary
    segment: SegmentSummary
    verify: VerifySummary
    sft: SftExportSummary | None = None
    tmax: TmaxExportSummary | None = None
    outputs: dict[str, Path] = field(default_factory=dict)


Stage = Callable[[str], None]  # told the name of each stage as it starts


def run_pipeline(config: RunConfig, on_stage: Stage | None = None) -> RunSummary:
    """Run every stage; stage errors propagate (each stage's typed error).

    The pipeline file is read once, here, and each stage's config is made from its settings
    (``from_settings``); the store is opened once, after ingest (which opens it itself), for segment,
    verify and the exports.
    """
    settings = load_pipeline(config.pipeline)
    stage = on_stage or (lambda name: None)
    exp = settings["export"]
    store = config.store or Path(settings["ingest"]["store"])
    out = config.out or Path(exp["out"])
    executor = config.executor or executor_of(settings["executor"])
    with tempfile.TemporaryDirectory(prefix="logmine-demo-repos-") as tmp:
        inputs, repositories = {}, {}
        if config.demo:  # its corpus, and its repositories: plain files (not git repositories), copied out
            inputs = {"paths": DEMO_INPUTS}
            repo_map = {**settings["verify"]["repo_map"], **_demo_repos(Path(tmp))}
            repositories = {"repo_map": tuple(repo_map.items()), "plain_dirs": True}
        stage("ingest")
        ingested = ingest(IngestConfig.from_settings(settings["ingest"], store=store, executor=executor, **inputs))
        with Store(store) as opened:
            stage("segment")
            segmented = segment(SegmentConfig(store=store, settings=settings["segment"]), store=opened)
            stage("verify")
            verified = verify(VerifyConfig.from_settings(settings["verify"], store=store, executor=executor,
                                                         **repositories), store=opened)
            summary = RunSummary(store, out, ingested, segmented, verified)
            summary.outputs["store"] = store
            if exp["sft"]:
                stage("export sft")
                sft = SftExportConfig.from_settings(exp, store=store, out=out / "sft", overwrite=True)
                summary.sft = export_sft(sft, store=opened)
                summary.outputs["sft"] = out / "sft"
            if exp["tmax"]:
                stage("export tmax")
                tmax = TmaxExportConfig.from_settings(exp, settings["verify"], store=store, out=out / "tmax",
                                                      **repositories)
                summary.tmax = export_tmax(tmax, store=opened)
                summary.outputs["tmax"] = out / "tmax"
    return summary


def _demo_repos(tmp: Path) -> dict[str, str]:
    """Copy the demo's repositories out of the package (it may sit inside another git checkout,
    which would be mistaken for theirs) and map their recorded paths there."""
    mapping = {}
    for recorded, name in tomllib.loads((DEMO_DIR / "repos.toml").read_text())["repos"].items():
        target = tmp / name
        shutil.copytree(DEMO_DIR / "repos" / name, target)
        mapping[recorded] = str(target)
    return mapping
