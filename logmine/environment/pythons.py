"""The Python versions this host has, where the session's own one is not ``python3``.

A session's outputs name the Python its commands ran (pytest's ``platform linux -- Python 3.10.12``:
``TaskInput.python``). When the host's ``python3`` is another version, a replay under it can fail
where the author's passed (3.11 made argparse's duplicate subparsers an error), so a built
environment makes its venvs with the session's version wherever the host has one: a version
manager's install (pyenv, uv, asdf, mise) or an interpreter on ``PATH``. The user's machine usually
has the Python their sessions ran.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet

__all__ = ["python3_version", "python_bin", "venv_python"]

_VERSION = 'import sys; print("%d.%d" % sys.version_info[:2])'


@functools.cache
def _version_of(program: str) -> str | None:
    try:
        done = subprocess.run([program, "-c", _VERSION], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def python3_version() -> str | None:
    """The version (``3.11``) of the ``python3`` a build runs, else None."""
    found = shutil.which("python3")
    return _version_of(found) if found else None


def _managed(version: str) -> list[str]:
    """The ``bin`` directories of the version managers' installs of ``version``, newest patch first."""
    home = Path.home()
    roots = [(os.environ.get("PYENV_ROOT") or str(home / ".pyenv")) + "/versions/{v}*/bin",
             (os.environ.get("UV_PYTHON_INSTALL_DIR") or str(home / ".local/share/uv/python")) + "/cpython-{v}*/bin",
             str(home / ".asdf/installs/python/{v}*/bin"), str(home / ".local/share/mise/installs/python/{v}*/bin")]
    found = []
    for pattern in roots:
        dirs = [d for d in glob.glob(pattern.format(v=version)) if re.search(rf"{re.escape(version)}(?:\.\d+)*\b", d)]
        found += sorted(dirs, key=lambda d: [int(n) for n in re.findall(r"\d+", os.path.basename(os.path.dirname(d)))],
                        reverse=True)
    return found


@functools.cache
def python_bin(version: str) -> str | None:
    """A ``bin`` directory whose ``python3`` is Python ``version`` (``3.10``), to put first on a
    build's ``PATH``, else None; None too when the host's ``python3`` is that version already."""
    if not re.fullmatch(r"3\.\d+", version) or python3_version() == version:
        return None
    candidates = _managed(version)
    for directory in os.environ.get("PATH", "").split(os.pathsep):  # a pythonX.Y on PATH beside its python3
        if directory and (Path(directory) / f"python{version}").exists():
            candidates.append(directory)
    for directory in candidates:
        program = Path(directory) / "python3"
        if program.exists() and _version_of(str(program)) == version:
            return directory
    return None


def venv_python(pin: str | None, version: str) -> str | None:
    """The Python a prefix's venvs need rather than the host's ``python3``: ``version`` (the one the
    image would have) when ``pin`` names it exactly (``3.10``, the session's own or
    ``.python-version``'s), or is a constraint the host's ``python3`` is outside of; else None."""
    host = python3_version()
    if not pin or host is None or host == version:
        return None
    if re.fullmatch(r"(?:python|cpython-?)?3\.\d+(?:\.\d+)?", pin.strip()):
        return version
    try:
        return None if SpecifierSet(pin).contains(f"{host}.50", prereleases=True) else version
    except InvalidSpecifier:
        return None
