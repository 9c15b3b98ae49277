"""What a command line runs, word by word (logmine.commandline)."""

from __future__ import annotations

import pytest

from logmine.commandline import simple_commands


def runs(line: str) -> list[str]:
    return [c.text for c in simple_commands(line)]


@pytest.mark.parametrize(("line", "expected"), [
    ('gh pr create --body "fix: uv run --with pytest pytest"', ["gh pr create --body fix: uv run --with pytest pytest"]),
    ("bash -lc 'cd pkg && python -m pytest -q 2>&1 | tail -5'", ["python -m pytest -q", "tail -5"]),
    ("source .venv/bin/activate && python -m pytest", ["source .venv/bin/activate", "python -m pytest"]),
    ("FOO=1 env -i BAR=2 uv run --with pytest pytest -x", ["uv run --with pytest pytest -x"]),
    ("cat <<'EOF' > a.py\nimport pytest\nEOF\nnpm test", ["cat", "npm test"]),
    ("timeout 60 npm test", ["npm test"]),
    (".venv/bin/python -m pytest -q >out.txt 2>&1; echo $?", [".venv/bin/python -m pytest -q", "echo $?"]),
    ("if [ -f x ]; then pytest; fi", ["[ -f x ]", "pytest"]),
    ("python -c 'import sys; print(1)' && node -e \"x\"", ["python -c import sys; print(1)", "node -e x"]),
    ("echo ok # pytest", ["echo ok"]),
    ("echo 'unclosed", []),
    ("sh -c \"bash -c 'make test'\"", ["make test"]),
])
def test_executed_words_only(line, expected):
    assert runs(line) == expected


def test_cd_and_assignments_are_kept():
    first, second = simple_commands("cd /repo && cd sub; PYTHONPATH=src pytest -q && ls")
    assert first.cd == "/repo/sub" and first.assignments == ("PYTHONPATH=src",) and first.program == "pytest"
    assert second.text == "ls" and second.cd == "/repo/sub"
    (inner,) = simple_commands("bash -lc 'cd pkg && .venv/bin/python -m pytest'")
    assert inner.cd == "pkg" and inner.program == "python" and inner.argv[0] == ".venv/bin/python"
