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


def test_a_bound_node_modules_gets_writable_scratch_where_test_runners_write(make_box, tmp_path):
    """vitest writes node_modules/.vite; vite 6+ bundles its config into node_modules/.vite-temp
    (``mkdir`` there failed with ENOENT on the read-only bind and every vitest run of a real
    project failed); others write node_modules/.cache. Each is private and empty; the source stays."""
    from logmine.sandbox.hostview import SCRATCH_NAMES

    modules = tmp_path / "env" / "node_modules"
    for name in SCRATCH_NAMES:
        (modules / name).mkdir(parents=True)
    (modules / ".vite" / "old").write_text("the author's cache\n")
    box = make_box({"package.json": "{}\n"}, mount_at="/home/dev/web", binds=((str(modules), "/home/dev/web/node_modules"),))
    writes = " && ".join(f"mkdir -p node_modules/{n}/sub && echo x > node_modules/{n}/sub/f" for n in SCRATCH_NAMES)
    ran = box.run(f"{writes} && ls -A node_modules/.vite && touch node_modules/x 2>/dev/null; echo touch=$?")
    assert ".vite-temp" in SCRATCH_NAMES and ran.output.splitlines() == ["sub", "touch=1"], ran.output
    assert sorted(p.name for p in modules.rglob("*")) == sorted([*SCRATCH_NAMES, "old"])
