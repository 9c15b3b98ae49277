"""A task whose fix adds a dependency (``python-multipart`` to ``pyproject.toml``, as a real session
did, then ``uv run`` installed it) cannot pass in an offline sandbox: its test still fails after the
replay, and the reason says the task changed its dependencies instead of leaving a bare "still fails"."""

from __future__ import annotations

import base64
import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest
from calc_repo import TESTS, calc_repo
from conftest import query
from session_builder import fixed_and_verified

from logmine.export.funnel import categorize

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

ADD_DEPENDENCY = ("*** Begin Patch\n*** Update File: {repo}/requirements.txt\n@@\n-attrs\n+attrs\n+leftpad-not-installed\n"
                  "*** Update File: calc.py\n@@\n-def add(a, b):\n-    return a - b\n+import leftpad_not_installed\n+\n+\n"
                  "+def add(a, b):\n+    return a + b\n*** End Patch\n")


def test_a_fix_that_adds_a_dependency_says_so_when_it_still_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "calc"
    commit = calc_repo(repo, {"requirements.txt": "attrs\n"})
    fix = ADD_DEPENDENCY.replace("{repo}", str(repo))  # the manifest's absolute path, as agents write it
    _, row = fixed_and_verified(tmp_path, repo, commit, TESTS, fix, "none")
    assert row["status"] == "fails_after", row
    assert "the task changed the dependencies in requirements.txt" in row["status_reason"], row
    assert categorize(row["status_reason"])[0] == "the task changed its dependencies"


def _tiny_wheel(folder: Path) -> None:
    """A wheel of ``leftpad-tiny`` made by hand: pip installs it from ``folder`` with no index."""
    name, version = "leftpad_tiny", "0.1"
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": "def pad(text, width):\n    return text.rjust(width)\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: leftpad-tiny\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for path, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def test_a_fix_that_adds_a_dependency_is_graded_with_it_installed_and_its_bundle_reproduces(tmp_path, monkeypatch):
    """As SWE-bench builds an instance's environment at the gold patch's requirements, the environment
    is installed from the manifests the task leaves: the new package is there before and after, the
    test fails on the start's code and passes after the fix; the bundle's Dockerfile installs the same
    manifests (``environment/manifests/``) and its seeds keep the start's."""
    from logmine.export.tmax import TmaxExportConfig, export_tmax

    _tiny_wheel(tmp_path / "wheels")
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the package comes from the wheel above: no network
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "calc"
    commit = calc_repo(repo, {"requirements.txt": "# nothing yet\n"})
    fix = ("*** Begin Patch\n*** Update File: requirements.txt\n@@\n # nothing yet\n+leftpad-tiny\n"
           "*** Update File: calc.py\n@@\n-def add(a, b):\n-    return a - b\n+import leftpad_tiny\n+\n+\n"
           "+def add(a, b):\n+    return a + b\n*** End Patch\n")
    store, row = fixed_and_verified(tmp_path, repo, commit, TESTS, fix, "built")
    assert row["status"] == "validated", row
    (env,) = query(store, "SELECT mode, mode_reason FROM environments")
    assert env["mode"] == "built" and "end-of-task requirements.txt" in env["mode_reason"], env

    out = tmp_path / "tmax"
    summary = export_tmax(TmaxExportConfig(store=store, out=out))
    assert summary.rows == summary.reproduced == 1, summary
    (bundle,) = (out / "tasks").iterdir()
    assert "leftpad-tiny" in (bundle / "environment/manifests/requirements.txt").read_text()
    assert "leftpad" not in (bundle / "environment/seeds/requirements.txt").read_text()  # the start, as it was
    assert "COPY manifests/requirements.txt" in (bundle / "environment/Dockerfile").read_text()
