"""Options several commands share, and how a command turns its flags into a stage config.

Defaults live in one place, the packaged pipeline TOML, which the config dataclasses read: an option
that sets a config field defaults to ``None``, the command makes its config from the pipeline's
settings (``--pipeline``, else the packaged ones) with only the flags the user gave laid over them
(:func:`given`), and ``--help`` shows the field's default (:func:`field_default`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
import yaml

from logmine.cli.errors import fail
from logmine.locations import RAY_ADDRESS_ENV, STORE_ENV
from logmine.store import DEFAULT_STORE

StoreOpt = Annotated[Optional[Path], typer.Option(
    "--store", envvar=STORE_ENV, show_default=str(DEFAULT_STORE),
    help="Store directory (Parquet tables + catalog.duckdb).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
RepoMapOpt = Annotated[Optional[list[str]], typer.Option(
    "--repo-map", help="OLD=NEW: the repository recorded at OLD now lives at NEW (repeatable).")]
RepoSearchOpt = Annotated[Optional[list[Path]], typer.Option(
    "--repo-search", help="A directory holding clones: the clone with the recorded commit or remote is used "
                          "for sessions whose repository moved or was not recorded (repeatable).")]
PlainDirsOpt = Annotated[Optional[bool], typer.Option(
    "--plain-dirs/--no-plain-dirs", help="Rebuild sessions whose working directory is not a git repository by "
    "copying it (credential files left out, text redacted, at most 256 MiB).", show_default="no")]
ExecutorOpt = Annotated[Optional[str], typer.Option(
    "--executor", help="Where units of work run: local (this machine's pool) or ray (docs/distributed.md).",
    show_default="local")]
RayAddressOpt = Annotated[Optional[str], typer.Option(
    "--ray-address", envvar=RAY_ADDRESS_ENV, help="Ray cluster address (HOST:PORT or auto); implies --executor ray.")]
PipelineOpt = Annotated[Optional[Path], typer.Option(
    "--pipeline", help="Pipeline TOML laid over the packaged logmine/pipelines/codex-default.toml (it names only "
    "what it changes): its settings are the defaults, options given here win over them.", show_default=False)]
SeedOpt = Annotated[Optional[int], typer.Option(help="Random seed.")]
EngineOpt = Annotated[Optional[str], typer.Option(help="Rollout engine: hf or vllm.")]
ResumeOpt = Annotated[bool, typer.Option(help="Continue from the last checkpoint in --out.")]
SetOpt = Annotated[Optional[list[str]], typer.Option(
    "--set", help="Any other config key, KEY=VALUE (YAML value), repeatable; e.g. --set delta=0.15.")]


def field_default(config: type, name: str) -> Any:
    """The default of field ``name`` of dataclass ``config`` (``--help`` shows it)."""
    for f in dataclasses.fields(config):
        if f.name == name:
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
            if f.default is not dataclasses.MISSING:
                return f.default
            break
    raise LookupError(f"{config.__name__}.{name} has no default")


def given(**values: Any) -> dict[str, Any]:
    """The keyword arguments the user gave: ``values`` without the ``None`` ones, so that the config
    dataclass supplies the rest."""
    return {key: value for key, value in values.items() if value is not None}


def store_path(store: Path | None) -> Path:
    """``--store``, else the default store (for the commands whose config has no default)."""
    return DEFAULT_STORE if store is None else store


def pipeline_store(store: Path | None, settings: dict) -> Path:
    """``--store``, else the pipeline's ``[ingest] store``: the stages of one pipeline share its store."""
    return Path(settings["ingest"]["store"]) if store is None else store


def parse_repo_map(items: list[str] | None) -> tuple[tuple[str, str], ...] | None:
    """``--repo-map OLD=NEW`` values as pairs; ``None`` when none was given."""
    if not items:
        return None
    pairs = []
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            fail(f"--repo-map expects OLD=NEW, got {item!r}")
        pairs.append((old, new))
    return tuple(pairs)


def parse_sets(pairs: list[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` values as config keys (dashes become underscores) and YAML values."""
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


def executor_config(kind: str | None, address: str | None, settings: dict | None = None):
    """``--executor``/``--ray-address`` as an :class:`~logmine.executor.ExecutorConfig`; when neither was
    given, the pipeline's ``[executor]`` (``settings``: a loaded pipeline), else None."""
    from logmine.executor import ExecutorConfig
    from logmine.pipeline import executor_of

    if kind is None and address is None:
        return None if settings is None else executor_of(settings["executor"])
    return ExecutorConfig(kind=kind or "ray", address=address)
