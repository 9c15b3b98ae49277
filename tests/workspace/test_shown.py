"""Writing the files a session's reads showed into a rebuilt start: only where the text differs, only
inside the repository, never an ignored, credential, agent or linked path."""

from __future__ import annotations

import subprocess

from logmine.redact import PLACEHOLDERS
from logmine.segment.records import Shown
from logmine.workspace.shown import ShownFiles, write_shown

ROOT = "/home/u/proj"


def _repo(path):
    path.mkdir()
    (path / ".gitignore").write_text("node_modules/\n.env.local\n")
    (path / "app.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def test_only_differing_project_files_are_written(tmp_path):
    live = _repo(tmp_path / "live")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "app.py").write_text("x = 1\n")
    (tree / "same.py").write_text("y = 2")  # no newline at its end: the read's text has one
    (tree / "link.py").symlink_to(tmp_path / "elsewhere.py")
    shown = tuple(Shown(f"{ROOT}/{rel}", text, i) for i, (rel, text) in enumerate([
        ("app.py", "x = 2\n"), ("same.py", "y = 2\n"), ("new/dir/made.py", "z = 3\n"), ("link.py", "w\n"),
        ("node_modules/pkg/index.js", "module.exports = 1\n"), (".env.local", "A=1\n"), (".codex/config.toml", "a\n"),
        ("id_rsa", "key\n"), ("../other/file.py", "o\n")]))
    written = write_shown(shown, tree, ROOT, mask=PLACEHOLDERS, live=live)
    assert written == ["app.py", "new/dir/made.py"]
    assert (tree / "app.py").read_text() == "x = 2\n" and (tree / "same.py").read_text() == "y = 2"
    assert not (tree / "node_modules").exists() and not (tree / ".env.local").exists()
    assert not (tmp_path / "elsewhere.py").exists()


def test_each_point_of_the_rebuild_gets_its_files_and_says_so(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    shown = (Shown(f"{ROOT}/a.py", "a\n", 1), Shown(f"{ROOT}/b.py", "b\n", 3, before=4),
             Shown(f"{ROOT}/c.py", "c\n", 9, before=9))
    files = ShownFiles(shown, ROOT, PLACEHOLDERS, None)
    files.write(-1, tree)
    assert files.paths == ("a.py",)
    files.write(4, tree)  # before the earlier step at seq 4
    files.write_after(4, tree)  # the task's start: after the earlier work's last step
    assert files.paths == ("a.py", "b.py", "c.py")
    assert files.notes() == [
        "1 file(s) differed from the commit as the session began, written as the session's reads showed them: a.py",
        "1 file(s) differed during the earlier tasks' replay, written as the session's reads showed them: b.py",
        "1 file(s) differed as the task began, written as the session's reads showed them: c.py"]
