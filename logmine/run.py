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
from dataclasses import dataclass, field, replace
from pathlib import Path

from logmine.demo import DEMO_DIR, DEMO_INPUTS
from logmine.executor import ExecutorConfig
from logmine.export.sft import SftExportConfig, SftExportSummary, export_sft
from logmine.export.tmax import TmaxExportConfig, TmaxExportSummary, export_tmax
from logmine.ingest.run import IngestConfig, ingest
from logmine.ingest.summary import IngestSummary
from logmine.pipeline import load_pipeline
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

    The pipeline file is read once, here, and each stage is handed its settings; the store is
    opened once, after ingest (which opens it itself), for segment, verify and the exports.
    """
    settings = load_pipeline(config.pipeline)
    stage = on_stage or (lambda name: None)
    ing, exp, ver = settings["ingest"], settings["export"], settings["verify"]
    store = config.store or Path(ing["store"])
    out = config.out or Path(exp["out"])
    paths = tuple(Path(p) for p in ing["paths"])
    repo_map = dict(ver["repo_map"])
    executor = config.executor or ExecutorConfig(kind=settings["executor"]["kind"],
                                                 address=settings["executor"]["address"] or None)
    with tempfile.TemporaryDirectory(prefix="logmine-demo-repos-") as tmp:
        if config.demo:
            paths = DEMO_INPUTS
            repo_map.update(_demo_repos(Path(tmp)))
        stage("ingest")
        ingested = ingest(IngestConfig(paths=paths, store=store, max_line_bytes=ing["max_line_mb"] << 20,
                                       batch_bytes=ing["batch_mb"] << 20, executor=executor))
        with Store(store) as opened:
            stage("segment")
            segmented = segment(SegmentConfig(store=store, settings=settings["segment"]), store=opened)
            stage("verify")
            # the demo ships its repository as plain files (not a git repository)
            plain_dirs = ver["plain_dirs"] or config.demo
            verified = verify(replace(VerifyConfig.from_settings(ver, store, repo_map), executor=executor,
                                      plain_dirs=plain_dirs), store=opened)
            summary = RunSummary(store, out, ingested, segmented, verified)
            summary.outputs["store"] = store
            if exp["sft"]:
                stage("export sft")
                sft = SftExportConfig(store=store, out=out / "sft", min_verifier=exp["min_verifier"], overwrite=True)
                summary.sft = export_sft(sft, store=opened)
                summary.outputs["sft"] = out / "sft"
            if exp["tmax"]:
                stage("export tmax")
                tmax = TmaxExportConfig(store=store, out=out / "tmax", repo_map=tuple(repo_map.items()),
                                        plain_dirs=plain_dirs, repo_search=tuple(Path(p) for p in ver["repo_search"]),
                                        include_unvalidated=exp["include_unvalidated"])
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
