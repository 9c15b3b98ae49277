"""Applying patches: hunks, fuzz, files on disk (moves, modes, escapes, atomicity) and the command.

Expected messages are Codex's own (codex-rs/apply-patch): a change in wording is a change in
fidelity.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from patch_support import REPO_ROOT, tree, wrap, write

from logmine.patch import (
    Hunk,
    PatchError,
    apply_hunks,
    apply_patch,
    main,
    parse_patch,
)
from logmine.patch import _apply as apply_module

# --------------------------------------------------------------------------- apply_hunks


def hunks_of(body: str) -> tuple[Hunk, ...]:
    (op,) = parse_patch(wrap(f"*** Update File: f\n{body}"))
    return op.hunks


def test_apply_hunks_interleaved_chunks():
    hunks = hunks_of("@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File")
    assert apply_hunks("a\nb\nc\nd\ne\nf\n", "f", hunks) == "a\nB\nc\nd\nE\nf\ng\n"


def test_apply_hunks_context_fuzz_levels():
    original = "def f():   \n\tx = 1\n    y = \u201cok\u201d \u2013 2\n"
    hunks = hunks_of('@@\n def f():\n-x = 1\n+    x = 10\n-    y = "ok" - 2\n+    y = 3')
    assert apply_hunks(original, "f", hunks) == "def f():\n    x = 10\n    y = 3\n"


def test_redacted_context_matches_the_secret_and_keeps_it():
    """A patch read from a redacted log: its context holds a placeholder where the file holds the
    secret. The hunk still applies, and the secret beside the change is kept, never the placeholder."""
    original = 'A = 1\nPASSWORD = "hunter2-s3cret"\nB = 2\n'
    body = '@@\n A = 1\n PASSWORD = "[REDACTED:password]"\n-B = 2\n+B = 3\n'
    assert apply_hunks(original, "f", hunks_of(body)) == 'A = 1\nPASSWORD = "hunter2-s3cret"\nB = 3\n'
    # a removed redacted line matches too; the text around a placeholder must still match
    assert apply_hunks(original, "f", hunks_of('@@\n-PASSWORD = "[REDACTED:password]"\n')) == "A = 1\nB = 2\n"
    with pytest.raises(PatchError, match="Failed to find expected lines"):
        apply_hunks(original, "f", hunks_of('@@\n TOKEN = "[REDACTED:password]"\n-B = 2\n'))


def test_apply_hunks_header_seeks_to_its_line():
    original = "def foo():\n    return 1\n\ndef bar():\n    return 1\n"
    result = apply_hunks(original, "f", hunks_of("@@ def bar():\n-    return 1\n+    return 2"))
    assert result == "def foo():\n    return 1\n\ndef bar():\n    return 2\n"


def test_apply_hunks_header_must_exist():
    with pytest.raises(PatchError, match=r"^Failed to find context 'def nope\(\):' in f$"):
        apply_hunks("x\n", "f", hunks_of("@@ def nope():\n-x\n+y"))


def test_apply_hunks_missing_lines_error_lists_them():
    with pytest.raises(PatchError) as info:
        apply_hunks("a\nb\n", "src/f.py", hunks_of("@@\n a\n-c\n+d"))
    assert str(info.value) == "Failed to find expected lines in src/f.py:\na\nc"
    assert info.value.path == "src/f.py"


def test_apply_hunks_end_of_file_anchors_to_the_end():
    assert apply_hunks("x\nmid\nx\n", "f", hunks_of("@@\n-x\n+y\n*** End of File")) == "x\nmid\ny\n"
    assert apply_hunks("x\nmid\nx\n", "f", hunks_of("@@\n-x\n+y")) == "y\nmid\nx\n"
    with pytest.raises(PatchError):  # as in Codex, no fall-back to an earlier match
        apply_hunks("x\nend\n", "f", hunks_of("@@\n-x\n+y\n*** End of File"))


def test_apply_hunks_pure_addition_goes_to_the_end():
    # Codex appends a chunk with no old lines at the end, even after a pure addition's header.
    assert apply_hunks("line1\nline2\n", "f", hunks_of("@@\n+added")) == "line1\nline2\nadded\n"
    result = apply_hunks(
        "line1\nline2\nline3\n",
        "f",
        hunks_of("@@\n+after-context\n+second-line\n@@\n line1\n-line2\n-line3\n+line2-replacement"),
    )
    assert result == "line1\nline2-replacement\nafter-context\nsecond-line\n"


def test_apply_hunks_always_ends_with_a_newline():
    assert apply_hunks("no newline", "f", hunks_of("@@\n-no newline\n+changed")) == "changed\n"
    assert apply_hunks("", "f", hunks_of("@@\n+first")) == "first\n"
    # Codex's quirk, kept: a file ending in a blank line loses one trailing newline.
    assert apply_hunks("a\nb\n\n", "f", hunks_of("@@\n-a\n+A")) == "A\nb\n"


def test_apply_hunks_trailing_empty_context_stands_for_the_final_newline():
    assert apply_hunks("a\nb\n", "f", hunks_of("@@\n a\n-b\n+c\n")) == "a\nc\n"


def test_apply_hunks_crlf_lines_match_and_new_lines_use_lf():
    # Codex's default (LF) mode: "\r" stays in the line and is matched by the trailing-space
    # pass; the lines a hunk covers, context included, are rewritten from the patch.
    assert apply_hunks("a\r\nb\r\nc\r\n", "f", hunks_of("@@\n a\n-b\n+B")) == "a\nB\nc\r\n"


# --------------------------------------------------------------------------- apply_patch


def test_apply_patch_multiple_operations_and_summary(tmp_path):
    write(tmp_path, "delete.txt", "bye\n")
    write(tmp_path, "modify.txt", "line1\nline2\n")
    ops = parse_patch(
        wrap(
            "*** Delete File: delete.txt\n*** Update File: modify.txt\n@@\n-line2\n+changed\n"
            "*** Add File: nested/new.txt\n+created"
        )
    )
    assert apply_patch(ops, tmp_path) == [("A", "nested/new.txt"), ("M", "modify.txt"), ("D", "delete.txt")]
    assert tree(tmp_path) == {"modify.txt": "line1\nchanged\n", "nested/new.txt": "created\n"}


def test_apply_patch_move_to_new_directory(tmp_path):
    write(tmp_path, "old/name.txt", "old content\n")
    write(tmp_path, "old/other.txt", "unrelated\n")
    ops = parse_patch(
        wrap(
            "*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-old content\n+new content"
        )
    )
    assert apply_patch(ops, tmp_path) == [("M", "renamed/dir/name.txt")]
    assert tree(tmp_path) == {"old/other.txt": "unrelated\n", "renamed/dir/name.txt": "new content\n"}


def test_apply_patch_move_and_add_overwrite_existing_files(tmp_path):
    write(tmp_path, "a.txt", "from\n")
    write(tmp_path, "b.txt", "was here\n")
    write(tmp_path, "dup.txt", "old\n")
    ops = parse_patch(
        wrap("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-from\n+moved\n*** Add File: dup.txt\n+new")
    )
    apply_patch(ops, tmp_path)
    assert tree(tmp_path) == {"b.txt": "moved\n", "dup.txt": "new\n"}


def test_apply_patch_move_onto_itself_deletes_the_file_as_codex_does(tmp_path):
    # Codex writes the destination and then removes the source; kept for replay fidelity.
    write(tmp_path, "same.txt", "a\n")
    ops = parse_patch(wrap("*** Update File: same.txt\n*** Move to: same.txt\n@@\n-a\n+b"))
    assert apply_patch(ops, tmp_path) == [("M", "same.txt")]
    assert tree(tmp_path) == {}


def test_apply_patch_ops_see_earlier_ops(tmp_path):
    ops = parse_patch(wrap("*** Add File: a.txt\n+one\n*** Update File: a.txt\n@@\n-one\n+two"))
    assert apply_patch(ops, tmp_path) == [("A", "a.txt"), ("M", "a.txt")]
    assert tree(tmp_path) == {"a.txt": "two\n"}


def test_apply_patch_keeps_file_mode(tmp_path):
    script = write(tmp_path, "run.sh", "echo 1\n")
    script.chmod(0o755)
    apply_patch(parse_patch(wrap("*** Update File: run.sh\n@@\n-echo 1\n+echo 2")), tmp_path)
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("*** Delete File: missing.txt", "Failed to delete file missing.txt: No such file or directory"),
        ("*** Delete File: dir", "Failed to delete file dir: Is a directory"),
        (
            "*** Update File: missing.txt\n@@\n-a\n+b",
            "Failed to read file to update missing.txt: No such file or directory",
        ),
        ("*** Update File: dir\n@@\n-a\n+b", "Failed to read file to update dir: Is a directory"),
        ("*** Add File: dir\n+x", "Failed to write file dir: Is a directory"),
        (
            "*** Add File: keep.txt/x\n+x",
            "Failed to create parent directories for keep.txt/x: Not a directory",
        ),
        (
            "*** Update File: bin.dat\n@@\n-a\n+b",
            "Failed to read file to update bin.dat: stream did not contain valid UTF-8",
        ),
    ],
)
def test_apply_patch_file_system_errors(tmp_path, body, message):
    (tmp_path / "dir").mkdir()
    write(tmp_path, "keep.txt", "keep\n")
    (tmp_path / "bin.dat").write_bytes(b"\xff\xfe\n")
    with pytest.raises(PatchError) as info:
        apply_patch(parse_patch(wrap(body)), tmp_path)
    assert str(info.value) == message


def test_apply_patch_rejects_an_empty_patch(tmp_path):
    with pytest.raises(PatchError, match=r"^No files were modified\.$"):
        apply_patch([], tmp_path)


@pytest.mark.parametrize(
    "body",
    [
        "*** Add File: /tmp/evil.txt\n+x",
        "*** Add File: ../evil.txt\n+x",
        "*** Add File: a/../../evil.txt\n+x",
        "*** Add File: .\n+x",
        "*** Update File: link_out.txt\n@@\n-a\n+b",
        "*** Add File: dir_out/evil.txt\n+x",
        "*** Delete File: link_out.txt",
        "*** Update File: inside.txt\n*** Move to: ../evil.txt\n@@\n-a\n+b",
    ],
)
def test_apply_patch_refuses_paths_outside_root(tmp_path, body):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    write(outside, "target.txt", "a\n")
    write(root, "inside.txt", "a\n")
    (root / "link_out.txt").symlink_to(outside / "target.txt")
    (root / "dir_out").symlink_to(outside)
    before = (tree(root), tree(outside))
    with pytest.raises(PatchError, match="refusing"):
        apply_patch(parse_patch(wrap(f"*** Add File: ok.txt\n+fine\n{body}")), root)
    assert (tree(root), tree(outside)) == before
    assert not (tmp_path / "evil.txt").exists()


def test_apply_patch_follows_symlinks_inside_root(tmp_path):
    write(tmp_path, "real/f.txt", "a\n")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real" / "f.txt")
    apply_patch(parse_patch(wrap("*** Update File: link.txt\n@@\n-a\n+b")), tmp_path)
    apply_patch(parse_patch(wrap("*** Update File: alias/f.txt\n@@\n-b\n+c")), tmp_path)
    assert (tmp_path / "real" / "f.txt").read_text() == "c\n"
    apply_patch(parse_patch(wrap("*** Delete File: link.txt")), tmp_path)  # removes the link only
    assert not (tmp_path / "link.txt").is_symlink() and (tmp_path / "real" / "f.txt").exists()


def test_apply_patch_is_all_or_nothing_when_an_op_fails(tmp_path):
    write(tmp_path, "a.txt", "a\n")
    ops = parse_patch(
        wrap(
            "*** Add File: new/created.txt\n+x\n*** Update File: a.txt\n@@\n-a\n+A\n"
            "*** Delete File: missing.txt"
        )
    )
    with pytest.raises(PatchError, match="missing.txt"):
        apply_patch(ops, tmp_path)
    assert tree(tmp_path) == {"a.txt": "a\n"}
    assert not (tmp_path / "new").exists()


def test_apply_patch_rolls_back_when_writing_fails(tmp_path, monkeypatch):
    write(tmp_path, "a.txt", "a\n")
    write(tmp_path, "gone.txt", "gone\n")
    real_replace, calls = os.replace, []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", dst)
        real_replace(src, dst)

    monkeypatch.setattr(apply_module.os, "replace", failing_replace)
    ops = parse_patch(
        wrap("*** Delete File: gone.txt\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: d/new.txt\n+n")
    )
    with pytest.raises(PatchError, match="No space left on device"):
        apply_patch(ops, tmp_path)
    assert tree(tmp_path) == {"a.txt": "a\n", "gone.txt": "gone\n"}
    assert not (tmp_path / "d").exists()


# --------------------------------------------------------------------------- the command


def test_main_applies_a_patch_argument(tmp_path, monkeypatch, capsys):
    write(tmp_path, "calc.py", "def add(a, b):\n    return a - b\n")
    monkeypatch.chdir(tmp_path)
    patch = wrap("*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b")
    assert main(["apply_patch", patch]) == 0
    assert capsys.readouterr() == ("Success. Updated the following files:\nM calc.py\n", "")
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_main_reports_errors_on_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["apply_patch", wrap("*** Delete File: nope.txt")]) == 1
    assert capsys.readouterr() == ("", "error: Failed to delete file nope.txt: No such file or directory\n")
    assert main(["apply_patch", "junk"]) == 1
    assert (
        capsys.readouterr().err
        == "error: invalid patch: The first line of the patch must be '*** Begin Patch'\n"
    )


def test_main_usage(capsys):
    assert main(["apply_patch", "a", "b"]) == 2
    assert capsys.readouterr().err == "Error: apply_patch accepts exactly one PATCH argument.\n"
    assert main(["apply_patch", "--help"]) == 0
    assert capsys.readouterr().out.startswith("Usage: apply_patch 'PATCH'")


def run_module(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    cmd = [sys.executable, "-m", "logmine.patch", *args]
    return subprocess.run(cmd, cwd=cwd, input=stdin.encode(), capture_output=True, env=env, timeout=60)


def test_python_dash_m_reads_stdin_like_a_heredoc(tmp_path):
    done = run_module(tmp_path, stdin=wrap("*** Add File: src/hello.txt\n+Hello, world!"))
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        b"Success. Updated the following files:\nA src/hello.txt\n",
        b"",
    )
    assert (tmp_path / "src" / "hello.txt").read_text() == "Hello, world!\n"
    empty = run_module(tmp_path)
    assert empty.returncode == 2 and empty.stderr.startswith(b"Usage: apply_patch")
