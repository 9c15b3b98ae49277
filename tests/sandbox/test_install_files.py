"""``install_files``: grading-time files land exactly, and never through what the agent left there."""

from __future__ import annotations

import pytest


def test_files_are_written_with_their_parents_and_exact_content(make_box):
    box = make_box()
    box.install_files({"tests/unit/test_x.py": "α = 1", "top.txt": "a\r\nb\n"})
    assert (box.workspace / "tests" / "unit" / "test_x.py").read_bytes() == "α = 1".encode()
    assert (box.workspace / "top.txt").read_bytes() == b"a\r\nb\n"
    result = box.run("cat tests/unit/test_x.py; echo more >> top.txt && echo writable")
    assert result.output == "α = 1writable\n"  # the sandbox user may read and change them


def test_a_file_replaces_a_symlink_without_writing_through_it(make_box, public_dir):
    target = public_dir / "target.txt"
    target.write_text("untouched\n")
    box = make_box(links={"test_a.py": str(target)})
    box.install_files({"test_a.py": "recorded\n"})
    path = box.workspace / "test_a.py"
    assert not path.is_symlink() and path.read_text() == "recorded\n"
    assert target.read_text() == "untouched\n"


def test_a_symlinked_parent_directory_is_replaced_not_followed(make_box, public_dir):
    box = make_box(links={"tests": str(public_dir)})
    box.install_files({"tests/test_a.py": "recorded\n"})
    assert not (box.workspace / "tests").is_symlink()
    assert (box.workspace / "tests" / "test_a.py").read_text() == "recorded\n"
    assert list(public_dir.iterdir()) == []


def test_a_directory_or_a_file_in_the_way_is_replaced(make_box):
    box = make_box({"test_a.py/inner.txt": "dir in the way\n", "tests": "file in the way\n"})
    box.install_files({"test_a.py": "one\n", "tests/test_b.py": "two\n"})
    assert (box.workspace / "test_a.py").read_text() == "one\n"
    assert (box.workspace / "tests" / "test_b.py").read_text() == "two\n"


@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside.py", "a/../../outside.py", "", "."])
def test_paths_outside_the_workspace_are_refused_before_anything_is_written(make_box, bad):
    box = make_box()
    with pytest.raises(ValueError, match="not a relative path inside the workspace"):
        box.install_files({"ok.py": "x\n", bad: "y\n"})
    assert not (box.workspace / "ok.py").exists()


def test_installing_ends_every_shell(make_box):
    box = make_box()
    shell = box.shell()
    assert shell.run("echo hi").exit_code == 0
    box.install_files({"a.txt": "a\n"})
    assert shell.run("echo hi").error == "the shell was closed"
    assert box.shell().run("cat a.txt").output == "a\n"  # a new shell works


def test_directories_the_agent_locked_get_owner_access_back(make_box):
    box = make_box({"tests/old.py": "x\n"})
    assert box.run("chmod 000 tests && chmod 500 .").exit_code == 0
    box.install_files({"tests/test_a.py": "recorded\n"})
    assert (box.workspace / "tests" / "test_a.py").read_text() == "recorded\n"
    for path in (box.workspace, box.workspace / "tests"):
        assert path.stat().st_mode & 0o700 == 0o700
