"""Declarative pipeline configs (TOML): the packaged default, overlaid by a user's file.

A user's pipeline names only what it changes. Keys must exist in the default (a typo is an error,
not a silently ignored setting); lists named ``extra_<key>`` are appended to ``<key>``.

Each stage config reads its table with ``from_settings`` (``IngestConfig.from_settings(settings["ingest"])``);
its field defaults are the packaged file's values (:func:`packaged`), read when a config is made, not at import.
"""

from __future__ import annotations

import copy
import functools
import tomllib
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from logmine.errors import LogmineError
from logmine.executor import ExecutorConfig

DEFAULT_PIPELINE = Path(__file__).parent / "pipelines" / "codex-default.toml"


class PipelineError(LogmineError, ValueError):
    """A pipeline file cannot be read or names settings that do not exist."""


def load_pipeline(path: Path | None = None) -> dict:
    """The default pipeline, with ``path``'s settings laid over it and ``extra_*`` lists merged: a new
    dict each call (the caller may change it); the packaged file is parsed once per process."""
    config = copy.deepcopy(_default())
    if path is not None:
        _overlay(config, _read(path), str(path))
    for section in config.values():
        if isinstance(section, dict):
            for key in [k for k in section if k.startswith("extra_")]:
                section[key[len("extra_"):]] = [*section[key[len("extra_"):]], *section.pop(key)]
    return config


def packaged(section: str) -> dict:
    """The packaged pipeline's ``[section]``, parsed once per process: the config dataclasses'
    defaults. Shared by every caller: read it, never change it."""
    return _packaged()[section]


def packaged_default(fields_of: Callable[..., dict], sections: tuple[str, ...], name: str) -> Any:
    """A config dataclass field whose default is field ``name`` of what ``fields_of`` makes of the
    packaged pipeline's ``sections`` (the function ``from_settings`` uses, so the two agree), read
    when a config is made, not at import. A stage binds the first two once
    (``functools.partial(packaged_default, verify_fields, ("verify",))``)."""
    return field(default_factory=lambda: fields_of(*(packaged(s) for s in sections))[name])


def executor_of(settings: dict) -> ExecutorConfig:
    """A pipeline's ``[executor]`` settings as an :class:`ExecutorConfig` (an empty address:
    $RAY_ADDRESS, else auto)."""
    return ExecutorConfig(kind=settings["kind"], address=settings["address"] or None)


@functools.cache
def _packaged() -> dict:
    return load_pipeline()


@functools.cache
def _default() -> dict:
    return _read(DEFAULT_PIPELINE)


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except OSError as exc:
        raise PipelineError(f"cannot read pipeline {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise PipelineError(f"invalid pipeline {path}: {exc}") from exc


def _overlay(base: dict, override: dict, where: str, prefix: str = "") -> None:
    for key, value in override.items():
        name = f"{prefix}{key}"
        if key not in base:
            raise PipelineError(f"unknown setting {name!r} in {where}")
        if isinstance(base[key], dict) and not base[key]:  # an open table (repo_map): any keys
            if not isinstance(value, dict):
                raise PipelineError(f"setting {name!r} in {where} must be a table")
            base[key] = value
        elif isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise PipelineError(f"setting {name!r} in {where} must be a table")
            _overlay(base[key], value, where, f"{name}.")
        elif type(value) is not type(base[key]) and not (isinstance(base[key], float) and isinstance(value, int)):
            raise PipelineError(f"setting {name!r} in {where} must be a {type(base[key]).__name__}")
        else:
            base[key] = value
