"""Every command and command group of the CLI answers ``--help``, found by walking the app."""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from logmine import __version__
from logmine.cli.commands import app

runner = CliRunner()


def _paths(group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The command path of every command and sub-group under ``group``, depth first."""
    found = []
    for name, command in sorted(group.commands.items()):
        found.append((*prefix, name))
        if hasattr(command, "commands"):
            found += _paths(command, (*prefix, name))
    return found


PATHS = _paths(typer.main.get_command(app))


def test_every_command_is_registered():
    assert set(PATHS) == {
        ("ingest",), ("stats",), ("segment",), ("verify",), ("run",), ("filter",), ("eval",),
        ("export",), ("export", "atif"), ("export", "sft"), ("export", "swe"), ("export", "tmax"),
        ("train",), ("train", "sft"), ("train", "grpo"), ("train", "init-model"),
        ("doctor",), ("scan",), ("sql",), ("env",), ("env", "show"), ("yield",)}


@pytest.mark.parametrize("path", [(), *PATHS], ids=lambda path: " ".join(path) or "logmine")
def test_help(path, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where a traceback file would go
    result = runner.invoke(app, [*path, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    assert f"Usage: logmine {' '.join(path)}".rstrip() in result.output
    assert "Error" not in result.output and not list(tmp_path.iterdir())


def test_version_exits_cleanly():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"logmine {__version__}"
