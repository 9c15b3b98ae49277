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
