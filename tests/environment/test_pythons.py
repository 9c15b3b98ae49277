"""Which Python a bubblewrap prefix makes its venvs with: the host's ``python3`` unless the pin (the
session's own version, ``.python-version``, a constraint that leaves the host's out) asks for
another; and where the host keeps its other Pythons (this host's own installs, no stand-ins)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from logmine.environment.pythons import python3_version, python_bin, venv_python


def test_a_prefix_needs_another_python_only_where_the_pin_asks_for_it():
    host = python3_version()
    if host is None:
        pytest.skip("no python3 on this host")
    major, minor = map(int, host.split("."))
    other = f"{major}.{minor - 1}"
    assert venv_python(None, host) is None  # nothing pinned: the host's
    assert venv_python(f"{host}.2", host) is None  # the host's own version
    assert venv_python(other, other) == other  # the session ran another
    assert venv_python(f">={other}", host) is None  # a constraint the host meets
    assert venv_python(f"<{host}", other) == other  # one it does not
    assert venv_python("not a version", other) is None


def test_the_bin_found_runs_the_version_asked_for():
    host = python3_version()
    found = [(v, python_bin(v)) for v in ("3.9", "3.10", "3.12", "3.13") if v != host]
    found = [(v, b) for v, b in found if b]
    if not found:
        pytest.skip("no second Python on this host")
    for version, directory in found:
        done = subprocess.run([str(Path(directory) / "python3"), "--version"], capture_output=True, text=True)
        assert done.stdout.startswith(f"Python {version}."), (version, directory, done.stdout)
    assert python_bin(host or "3.11") is None  # the host's python3 is that one already
    assert python_bin("3.99") is None and python_bin("three") is None
