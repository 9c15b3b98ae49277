"""A bundle's file grader checks what its seeds can hold: the diff of an agent's own file
(``.codex/skills/…``, which the repository tracks and verify's tree holds) is left out, as the seeds
leave that directory out; a task whose file check holds nothing else is not exported."""

from __future__ import annotations

import subprocess
import sys

from logmine.export.bundle import grade_files, graded_diffs
from logmine.export.funnel import categorize
from logmine.segment.records import Candidate, FileDiff

SKILL = FileDiff(".codex/skills/poker/SKILL.md", "update", added=("Use pnpm.",), removed=("Use npm.",))
CODE = FileDiff("src/calc.py", "update", added=("    return a + b",), removed=("    return a - b",))


def _candidate(*diffs: FileDiff) -> Candidate:
    return Candidate("v1", "t1", "s1", "file_diff", 0.5, "file", mode="hunks", diffs=diffs)


def test_the_grader_leaves_out_an_agents_own_file(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")  # as the solution leaves it
    script, expected = grade_files(_candidate(SKILL, CODE), {})
    (tmp_path / "grade_files.py").write_text(script)
    (tmp_path / "expected.json").write_text(expected)
    done = subprocess.run([sys.executable, "grade_files.py", "expected.json"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 0 and ".codex" not in expected, done.stdout
    (tmp_path / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")  # the start: still graded
    assert subprocess.run([sys.executable, "grade_files.py", "expected.json"], cwd=tmp_path).returncode == 1


def test_a_check_of_agent_files_only_grades_nothing():
    assert graded_diffs(_candidate(SKILL, FileDiff(".env", "update", added=("DEBUG=1",)))) == []
    assert graded_diffs(_candidate(SKILL, CODE)) == [CODE]
    reason = "its verifiers check only files the seeds leave out (an agent's own, credentials)"
    assert categorize(reason)[0] == "checks only files the seeds leave out"
