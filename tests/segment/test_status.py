"""``git status`` outputs as Codex sessions show them: short (with ``-b``), porcelain, long; what each
says was changed in the work tree, and where."""

from __future__ import annotations

from logmine.segment.status import parse_status

SHORT = "## master...origin/master [ahead 1]\n M .gitignore\n D Dockerfile.web\n?? notes.txt\nR  a.py -> b.py\nA  new.py\n"


def _paths(listed):
    return [(item.path, item.code, item.from_top) for item in listed]


def test_short_form_lists_tracked_changes_from_the_directory_it_ran_in():
    assert _paths(parse_status("git status --short --branch", SHORT, "/u/ship", 5)) == [
        ("/u/ship/.gitignore", " M", False), ("/u/ship/Dockerfile.web", " D", False), ("/u/ship/a.py", "R ", False)]
    # run from a subdirectory, after another command's output: paths are relative to that directory
    assert _paths(parse_status("git branch --show-current && git status -s", "main\n M ../.gitignore\n",
                               "/u/ship/web", 6)) == [("/u/ship/.gitignore", " M", False)]


def test_porcelain_paths_are_from_the_top_and_the_long_form_is_read():
    assert _paths(parse_status("git status --porcelain && echo ---", ' M "docs/a b.md"\n?? x\n---\n', "/u/p/sub", 7)) == [
        ("docs/a b.md", " M", True)]
    long = ("On branch main\nChanges not staged for commit:\n\tmodified:   ../api/x.ts\n\tdeleted:    y.py\n\n"
            "Untracked files:\n\tz.py\n")
    assert _paths(parse_status("cd sub && git status", long, "/u/p", 8)) == [
        ("/u/p/api/x.ts", " M", False), ("/u/p/sub/y.py", " D", False)]


def test_other_commands_and_unread_forms_list_nothing():
    assert parse_status("git log --oneline", " M x.py\n", "/u", 1) == []
    assert parse_status("git status --porcelain=v2", "1 .M N... 100644 100644 100644 a b x.py\n", "/u", 2) == []
    assert parse_status("git -C other status --short", " M x.py\n", "/u", 3) == []
