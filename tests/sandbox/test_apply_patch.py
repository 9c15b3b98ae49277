"""``apply_patch`` inside the sandbox is logmine.patch: the same files as applying on the host."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from logmine.patch import apply_patch, main, parse_patch

CALC = "def add(a, b):\n    return a - b\n"
PATCH = (
    "*** Begin Patch\n"
    "*** Update File: calc.py\n"
    "@@\n"
    " def add(a, b):\n"
    "-    return a - b\n"
    "+    return a + b\n"
    "*** Add File: tests/test_calc.py\n"
    "+from calc import add\n"
    "+assert add(2, 3) == 5\n"
    "*** End Patch\n"
)
SUCCESS = "Success. Updated the following files:\nA tests/test_calc.py\nM calc.py\n"


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def expected(tmp_path) -> dict[str, str]:
    """The tree after applying PATCH on the host with logmine.patch."""
    host = tmp_path / "host-apply"
    host.mkdir()
    (host / "calc.py").write_text(CALC)
    apply_patch(parse_patch(PATCH), host)
    return _tree(host)


@pytest.mark.parametrize("form", ["argv", "heredoc", "bash -lc"])
def test_codex_forms_produce_the_host_result(make_box, expected, form):
    box = make_box({"calc.py": CALC}, mount_at="/home/dev/projects/fixadd")
    command = {
        "argv": f"apply_patch {shlex.quote(PATCH)}",
        "heredoc": f"apply_patch <<'EOF'\n{PATCH}EOF",
        "bash -lc": f"bash -lc {shlex.quote(f'apply_patch {shlex.quote(PATCH)}')}",  # as Codex records commands
    }[form]
    result = box.shell().run(command)
    assert (result.exit_code, result.output) == (0, SUCCESS)
    assert _tree(box.workspace) == expected


def test_a_patch_applies_under_the_current_directory(make_box, expected):
    box = make_box({"pkg/calc.py": CALC})
    assert box.run(f"apply_patch {shlex.quote(PATCH)}", cwd="pkg").output == SUCCESS
    assert _tree(box.workspace / "pkg") == expected


def test_a_failing_patch_reports_like_the_host_command(make_box, tmp_path, capsys, monkeypatch):
    bad = PATCH.replace("-    return a - b", "-    return a * b")
    box = make_box({"calc.py": CALC})
    result = box.run(f"apply_patch {shlex.quote(bad)}")
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "calc.py").write_text(CALC)
    monkeypatch.chdir(tmp_path / "host")
    assert main(["apply_patch", bad]) == 1
    assert (result.exit_code, result.output) == (1, capsys.readouterr().err)
    assert result.output.startswith("error: ")
    assert (box.workspace / "calc.py").read_text() == CALC and not (box.workspace / "tests").exists()


def test_workspace_files_cannot_replace_the_patch_module(make_box, expected):
    fake = "raise SystemExit('FAKE apply_patch')\n"
    box = make_box({"calc.py": CALC, "logmine/__init__.py": fake, "logmine/patch/__init__.py": fake,
                    "logmine/patch/__main__.py": fake})
    result = box.run(f"PYTHONPATH=$PWD PYTHONSTARTUP=$PWD/logmine/__init__.py apply_patch {shlex.quote(PATCH)}")
    assert (result.exit_code, result.output) == (0, SUCCESS)
    assert {k: v for k, v in _tree(box.workspace).items() if not k.startswith("logmine/")} == expected
