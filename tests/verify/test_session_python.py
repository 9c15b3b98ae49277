"""The session ran another Python than this host's ``python3`` (its output names ``Python 3.10.13``):
a built environment makes its venv with that version where the host has one (pyenv, uv, asdf, mise),
so a test that passed under the author's Python is replayed under it. Real venvs, the real
bubblewrap sandbox; skipped where the host has no second Python."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import FIX, calc_repo
from conftest import query
from replay_support import verdicts
from session_builder import SessionBuilder, segmented

from logmine.environment.pythons import python3_version, python_bin

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")


def _other_python() -> str | None:
    return next((v for v in ("3.10", "3.12", "3.13", "3.9", "3.11") if python_bin(v)), None)


def test_the_session_python_makes_the_venv_and_the_test_passes_under_it(tmp_path, monkeypatch):
    version = _other_python()
    if version is None:
        pytest.skip(f"no Python but {python3_version()} on this host")
    from logmine.verify import VerifyConfig, verify

    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    major, minor = version.split(".")
    test = ("import sys\nimport unittest\n\nfrom calc import add\n\n\nclass V(unittest.TestCase):\n"
            "    def test_add_under_the_authors_python(self):\n"
            f"        self.assertEqual(sys.version_info[:2], ({major}, {minor}))\n"
            "        self.assertEqual(add(2, 3), 5)\n")
    repo = tmp_path / "work" / "py"
    commit = calc_repo(repo, {"test_v.py": test, "requirements.txt": "\n"})
    run = ".venv/bin/python -B -m unittest -q test_v"
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("add is wrong")
         .run(".venv/bin/python --version", 0, f"Python {version}.4\n")
         .run(run, 1).patch(FIX).run(run, 0).agent("Fixed."))
    store, _ = segmented(tmp_path, b)
    verify(VerifyConfig(store=store, jobs=1, env_mode="built"))
    row = verdicts(store, b)[(0, "test_command", None)]
    assert row["status"] == "validated", row
    (env,) = query(store, "SELECT mode_reason, versions FROM environments")
    assert f"venvs made with Python {version} ({python_bin(version)})" in env["mode_reason"], env
    assert f'"python": "{version}"' in env["versions"], env


def test_a_session_python_that_cannot_install_the_dependencies_gives_way_to_the_hosts(tmp_path, monkeypatch):
    """The session ran 3.10, but the requirements now pin a release that needs 3.11 (networkx 3.5):
    the venv the session's Python cannot make is made with the host's, the attempt is kept, and the
    environment recorded (a bundle's image) is the one that installed."""
    if python3_version() == "3.10" or python_bin("3.10") is None:
        pytest.skip("no Python 3.10 beside this host's python3")
    from logmine.verify import VerifyConfig, verify

    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "work" / "newer"
    commit = calc_repo(repo, {"requirements.txt": "networkx>=3.5\n"})
    run = ".venv/bin/python -B -m unittest -q"
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("add is wrong")
         .run(".venv/bin/python --version", 0, "Python 3.10.4\n")
         .run(run, 1).patch(FIX).run(run, 0).agent("Fixed."))
    store, _ = segmented(tmp_path, b)
    verify(VerifyConfig(store=store, jobs=1, env_mode="built"))
    assert verdicts(store, b)[(0, "test_command", None)]["status"] == "validated", verdicts(store, b)
    (env,) = query(store, "SELECT mode_reason, versions, notes FROM environments")
    assert "venvs made with" not in env["mode_reason"] and '"3.10"' not in (env["versions"] or ""), env
    assert any(n.startswith("built with the session's Python 3.10: ") for n in env["notes"]), env
