"""What a session's ``git diff`` shows of its files: real git output parsed, applied to the blob it
names and kept only where the result is the blob git named for the work tree's file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from logmine.segment.gitdiff import apply_hunks, blob_id, diff_command, parse_diff
from logmine.segment.shown import SessionReads, SessionStep, shown_for_task

BASE = "".join(f"line {i}\n" for i in range(1, 41))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text(BASE)
    (repo / "b.txt").write_text("no newline at the end")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    return repo


def _blob(repo: Path, sha: str) -> str:
    return _git(repo, "cat-file", "blob", sha)


def test_a_real_diff_gives_each_files_work_tree_text_and_the_blob_id_checks_it(tmp_path):
    repo = _repo(tmp_path)
    a = BASE.replace("line 3\n", "line three\n").replace("line 30\n", "") + "line 41\n"
    (repo / "a.txt").write_text(a)
    (repo / "b.txt").write_text("no newline at the end, now longer")
    (repo / "c.txt").write_text("brand new\n")
    _git(repo, "add", "-N", "c.txt")  # intent to add: a new file in a work-tree diff
    output = _git(repo, "diff")
    parts = {p.path: p for p in parse_diff("git diff", output)}
    assert set(parts) == {"a.txt", "b.txt", "c.txt"}
    for path, part in parts.items():
        base = "" if set(part.base) == {"0"} else _blob(repo, part.base)
        text = apply_hunks(base, part.hunks)
        assert text == (repo / path).read_text(), path
        assert blob_id(text.encode()).startswith(part.after)


def test_a_cut_or_mangled_part_gives_nothing_and_its_neighbours_still_count(tmp_path):
    repo = _repo(tmp_path)
    (repo / "a.txt").write_text(BASE.replace("line 3\n", "line three\n"))
    (repo / "b.txt").write_text("changed")
    output = _git(repo, "diff")
    cut = {p.path: p for p in parse_diff("git diff", output.replace("-line 3\n", "[... omitted 2 of 30 lines ...]\n"))}
    assert apply_hunks(_blob(repo, cut["a.txt"].base), cut["a.txt"].hunks) is None
    assert apply_hunks(_blob(repo, cut["b.txt"].base), cut["b.txt"].hunks) == "changed"
    mangled = parse_diff("git diff", output.replace("+line three", "+line  three"))[0]
    text = apply_hunks(_blob(repo, mangled.base), mangled.hunks)
    assert text is not None and not blob_id(text.encode()).startswith(mangled.after)  # the id refuses it


@pytest.mark.parametrize(("command", "worktree"), [
    ("git diff", True), ("git diff -- a.txt b.txt", True), ("git --no-pager diff -U5 -- a.txt", True),
    ("git diff HEAD -- a.txt", True), ("git diff 5c2031e3", True), ("cd sub && git diff -- x.py", True),
    ("git diff -- a.txt | sed -n '1,200p'", True), ("git status --short && git diff", True),
    ("git diff --cached", False), ("git diff --staged -- a.txt", False), ("git diff -R", False),
    ("git diff HEAD~1 HEAD", False), ("git diff main..feature", False), ("git diff --stat", False),
    ("git diff --name-only", False), ("git show HEAD", False), ("cat change.patch && git diff", False),
    ("git diff --no-index a b", False), ("git diff && git diff --cached", False),
])
def test_only_diffs_whose_new_side_is_the_work_tree_count(command, worktree):
    assert diff_command(command) is worktree


def test_a_diff_shows_the_file_until_a_step_may_change_it(tmp_path):
    repo = _repo(tmp_path)
    (repo / "a.txt").write_text(BASE.replace("line 3\n", "line three\n"))
    output = _git(repo, "diff", "--", "a.txt")
    cwd = "/home/u/proj"
    steps = [SessionStep.command(1, "git diff -- a.txt", cwd, 0, output),
             SessionStep(5, patched=(f"{cwd}/a.txt",))]
    reads = SessionReads(steps)
    [before] = reads.at(-1)
    assert (before.path, before.base, before.seq) == ("a.txt", output.split("index ")[1][:7], 1)
    assert reads.at(6) == ()  # the patch at 5 may have changed it
    assert [s.before for s in shown_for_task(reads, 9, prior=(5,))] == [-1]  # known once, as the session began
    assert SessionStep.command(1, "git diff -- a.txt", cwd, 1, output).diffs == ()  # a failed command shows nothing
