"""Environment binds: a dependency directory appears inside the workspace, read-only, on the PATH."""

from __future__ import annotations

import subprocess
import sys


def test_a_bound_venv_runs_inside_the_workspace_and_cannot_be_written(make_box, tmp_path):
    venv = tmp_path / "env" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "lib").mkdir(exist_ok=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "leftpad_lite.py").write_text("def pad(s, n):\n    return s.rjust(n)\n")
    box = make_box({"t.py": "import leftpad_lite\nprint(leftpad_lite.pad('x', 3))\n"}, mount_at="/home/dev/proj",
                   binds=((str(venv), "/home/dev/proj/.venv"), (str(tmp_path / "missing"), "/nowhere")),
                   env={"PATH": "/home/dev/proj/.venv/bin:/usr/bin:/bin"})
    ran = box.run("python t.py && which python && touch .venv/x; echo touch=$?")
    lines = ran.output.splitlines()
    assert lines[0] == "  x" and lines[1] == "/home/dev/proj/.venv/bin/python", ran.output
    assert lines[-1] != "touch=0" and not (venv / "x").exists()
    assert box.run("command -v apply_patch").exit_code == 0  # the tool directory stays first
    assert box.run("test -e /nowhere").exit_code != 0  # a bind whose source is missing is skipped
