"""Run configurations as frozen dataclasses, filled from a YAML recipe, flags and ``--set`` values.

    config = load_config(Path("train/grpo-dppo.yaml"), {"data": D, "model": M, "out": OUT}, kind=GrpoTrainConfig)

The generic half, below every stage that has a config of its own (``train``: SFT and GRPO;
``evaluate``: filter and eval; ``agent``: the rollout settings they share). Precedence: dataclass
defaults < the recipe's keys < ``overrides`` (flags; ``None`` values are ignored, so a CLI can pass
every flag) < ``settings``. An unknown key, a value of the wrong type, a missing required path or a
value the dataclass's ``validate`` refuses raises :class:`ConfigError`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from logmine.errors import LogmineError


class ConfigError(LogmineError, ValueError):
    """A recipe or flag a run cannot use: unknown key, bad value, unreadable YAML."""


def load_config(path: Path | None, overrides: dict[str, Any] | None = None, *, kind: type,
                settings: dict[str, Any] | None = None):
    """The recipe at ``path`` (YAML mapping, optional) with ``overrides`` applied, as a ``kind`` config.
    ``settings`` (``--set KEY=VALUE``) come last and may set a key to None. Raises :class:`ConfigError`."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read the recipe {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"the recipe {path} is not valid YAML: {str(exc).splitlines()[0]}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"the recipe {path} must be a mapping of keys to values")
        values.update(loaded or {})
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    values.update(settings or {})
    return make_config(values, kind)


def make_config(values: dict[str, Any], kind: type):
    """A validated config of dataclass ``kind`` from plain values (YAML or JSON types): unknown keys and
    missing required paths are errors, then ``kind.validate`` runs."""
    fields = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"unknown config key{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)} "
                          f"(known: {', '.join(fields)})")
    paths = [f.name for f in dataclasses.fields(kind) if f.type in (Path, "Path")]
    missing = [name for name in paths if values.get(name) in (None, "")]
    if missing:
        raise ConfigError(f"missing required setting{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    values = dict(values)
    for name in paths:
        values[name] = Path(values[name])
    for name, value in values.items():
        _check_type(name, value, fields[name].default)
    try:
        config = kind(**values)
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    config.validate()
    return config


def _check_type(name: str, value: Any, default: Any) -> None:
    """Raises ConfigError unless ``value`` is of the default's kind (an int counts as a float). None,
    and fields whose default is None or absent, are left to ``validate``."""
    if value is None or default is None or default is dataclasses.MISSING:
        return
    if isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, kind = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif isinstance(default, str):
        ok, kind = isinstance(value, str), "a string"
    else:
        return
    if not ok:
        raise ConfigError(f"{name} must be {kind}, got {value!r}")


def config_dict(config) -> dict[str, Any]:
    """JSON-ready values (paths as strings), as written to a run directory's config.json."""
    return {f.name: (str(v) if isinstance(v := getattr(config, f.name), Path) else v)
            for f in dataclasses.fields(config)}


def check_choice(value: str, name: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def check_positive_ints(config, names: tuple[str, ...], minimum: int = 1) -> None:
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            kind = "a positive" if minimum == 1 else "a non-negative"
            raise ConfigError(f"{name} must be {kind} integer, got {value!r}")
