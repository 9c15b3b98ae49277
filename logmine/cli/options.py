"""Options several commands share, and how a command turns its flags into a stage config.

Defaults live in one place, the config dataclasses (and the pipeline TOML for ``logmine run``):
an option that sets a config field defaults to ``None``, the command passes only the flags the user
gave (:func:`given`), and ``--help`` shows the field's default (:func:`field_default`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
import yaml

from logmine.cli.errors import fail
from logmine.store import DEFAULT_STORE

StoreOpt = Annotated[Optional[Path], typer.Option(
    "--store", envvar="LOGMINE_STORE", show_default=str(DEFAULT_STORE),
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
    "--ray-address", envvar="RAY_ADDRESS", help="Ray cluster address (HOST:PORT or auto); implies --executor ray.")]
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


def executor_config(kind: str | None, address: str | None):
    """``--executor``/``--ray-address`` as an :class:`~logmine.executor.ExecutorConfig`; None when neither was given."""
    from logmine.executor import ExecutorConfig

    if kind is None and address is None:
        return None
    return ExecutorConfig(kind=kind or "ray", address=address)
