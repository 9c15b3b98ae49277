"""Tests for logmine.patch: Codex's apply_patch grammar, matcher, applier and command.

Expected messages are Codex's own (codex-rs/apply-patch), so a change in wording is a change in
fidelity. The last section runs every real patch found in the fixture logs.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from logmine.patch import (
    FileOp,
    Hunk,
    PatchError,
    apply_hunks,
    apply_patch,
    extract_patch,
    main,
    parse_patch,
    parse_patch_document,
    render_patch,
    seek_sequence,
)
from logmine.patch import _apply as apply_module

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures"  # copies of shared/fixtures (see tests/fixtures/README.md)
BAD_HEADER = (
    "is not a valid hunk header. Valid hunk headers: "
    "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
)


def wrap(body: str) -> str:
    return f"*** Begin Patch\n{body}\n*** End Patch\n"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def tree(root: Path) -> dict[str, str]:
    """Every file under root with its text (symlinks shown as '-> target')."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes().decode()
    return out


# --------------------------------------------------------------------------- parsing


def test_parse_add_delete_update_move_in_one_patch():
    ops = parse_patch(
        wrap(
            "*** Add File: path/add.py\n+abc\n+\n+def\n"
            "*** Delete File: path/delete.py\n"
            "*** Update File: path/update.py\n*** Move to: path/update2.py\n"
            "@@ def f():\n-    pass\n+    return 123"
        )
    )
    assert ops == [
        FileOp("add", "path/add.py", content="abc\n\ndef\n"),
        FileOp("delete", "path/delete.py"),
        FileOp(
            "update",
            "path/update.py",
            move_to="path/update2.py",
            hunks=(Hunk("def f():", ("-    pass", "+    return 123")),),
        ),
    ]


def test_parse_update_with_several_hunks_and_end_of_file():
    (op,) = parse_patch(
        wrap("*** Update File: m.txt\n@@\n a\n-b\n+B\n@@ class C:\n d\n-e\n+E\n@@\n f\n+g\n*** End of File")
    )
    assert op.hunks == (
        Hunk(None, (" a", "-b", "+B")),
        Hunk("class C:", (" d", "-e", "+E")),
        Hunk(None, (" f", "+g"), end_of_file=True),
    )
    assert op.hunks[1].old_lines == ["d", "e"] and op.hunks[1].new_lines == ["d", "E"]


def test_first_hunk_may_omit_its_marker_and_blank_lines_are_context():
    (op,) = parse_patch(wrap("*** Update File: f.py\n import foo\n\n+bar\n  \n@@\n-x"))
    # "" is an empty context line, "  " a context line " ".
    assert op.hunks == (Hunk(None, (" import foo", " ", "+bar", "  ")), Hunk(None, ("-x",)))


def test_blank_lines_between_file_ops_and_chunks_are_skipped():
    ops = parse_patch(wrap("*** Update File: a\n\n@@\n-x\n+y\n\n   \n@@\n-z\n*** Delete File: b"))
    assert [len(op.hunks) for op in ops] == [2, 0]


def test_parse_environment_id_preamble():
    doc = parse_patch_document(wrap("*** Environment ID: remote-1\n*** Add File: hello.txt\n+hello"))
    assert doc.environment_id == "remote-1"
    assert doc.ops == (FileOp("add", "hello.txt", content="hello\n"),)
    assert parse_patch_document(wrap("*** Delete File: x")).environment_id is None


def test_whitespace_padded_markers_and_crlf_are_tolerated():
    text = " *** Begin Patch \r\n  *** Update File: f.txt \r\n@@ \r\n-one\r\n+two\r\n *** End Patch \r\n"
    assert parse_patch(text) == [FileOp("update", "f.txt", hunks=(Hunk(None, ("-one", "+two")),))]


@pytest.mark.parametrize("opener", ["<<EOF", "<<'EOF'", '<<"EOF"'])
def test_heredoc_wrapped_argv_body_is_unwrapped(opener):
    # GPT-4.1 sends ["apply_patch", "<<'EOF'\n...\nEOF\n"]: no shell ever strips the heredoc.
    assert parse_patch(f"{opener}\n{wrap('*** Delete File: x.txt')}EOF\n") == [FileOp("delete", "x.txt")]


def test_heredoc_with_mismatched_quotes_is_not_unwrapped():
    with pytest.raises(PatchError, match="first line of the patch must be"):
        parse_patch(f"<<\"EOF'\n{wrap('*** Delete File: x.txt')}EOF\n")


def test_empty_patch_parses_to_no_ops():
    assert parse_patch("*** Begin Patch\n*** End Patch") == []


def test_file_op_dict_and_text_round_trip():
    text = wrap(
        "*** Environment ID: e\n*** Add File: a.txt\n+x\n*** Update File: b.py\n*** Move to: c.py\n"
        "@@ def f():\n context\n-old\n+new\n*** End of File\n*** Delete File: d.txt"
    )
    doc = parse_patch_document(text)
    assert render_patch(doc.ops, doc.environment_id) == text
    stored = json.loads(json.dumps([op.to_dict() for op in doc.ops]))
    assert stored[1] == {
        "op": "update",
        "path": "b.py",
        "move_to": "c.py",
        "hunks": [{"header": "def f():", "lines": [" context", "-old", "+new"], "end_of_file": True}],
        "content": None,
    }
    assert tuple(FileOp.from_dict(d) for d in stored) == doc.ops


@pytest.mark.parametrize(
    "kwargs",
    [
        {"op": "rename", "path": "a"},
        {"op": "add", "path": "a"},
        {"op": "update", "path": "a"},
        {"op": "delete", "path": "a", "move_to": "b"},
        {"op": "delete", "path": "a", "content": ""},
    ],
)
def test_file_op_rejects_inconsistent_fields(kwargs):
    with pytest.raises(ValueError):
        FileOp(**kwargs)


def test_render_patch_of_added_content_without_final_newline():
    op = FileOp("add", "a.txt", content="x\ny")
    assert render_patch([op]) == wrap("*** Add File: a.txt\n+x\n+y")
    assert parse_patch(render_patch([FileOp("add", "empty.txt", content="")])) == [
        FileOp("add", "empty.txt", content="")
    ]


def test_patch_error_is_a_value_error():
    assert issubclass(PatchError, ValueError)


def test_hunk_rejects_unprefixed_lines():
    with pytest.raises(ValueError):
        Hunk(None, ("no prefix",))


# --------------------------------------------------------------------------- parse errors


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("bad", "invalid patch: The first line of the patch must be '*** Begin Patch'", None),
        ("", "invalid patch: The first line of the patch must be '*** Begin Patch'", None),
        ("*** Begin Patch\nbad", "invalid patch: The last line of the patch must be '*** End Patch'", None),
        ("*** Begin Patch", "invalid patch: The last line of the patch must be '*** End Patch'", None),
        (wrap("bad"), f"invalid hunk at line 2, 'bad' {BAD_HEADER}", 2),
        (
            wrap("*** Update File: test.py"),
            "invalid hunk at line 2, Update file hunk for path 'test.py' is empty",
            2,
        ),
        (
            wrap("*** Delete File: a\n*** Update File: b\n@@"),
            "invalid hunk at line 5, Update hunk does not contain any lines",
            5,
        ),
        (
            wrap("*** Update File: a\n@@\nbad"),
            "invalid hunk at line 4, Unexpected line found in update hunk: 'bad'. Every line should "
            "start with ' ' (context line), '+' (added line), or '-' (removed line)",
            4,
        ),
        (
            wrap("*** Update File: a\n@@\n-x\n*** End of File\n-y"),
            "invalid hunk at line 6, Expected update hunk to start with a @@ context marker, got: '-y'",
            6,
        ),
        (
            wrap("*** Update File: a\n@@\n*** End of File"),
            "invalid hunk at line 4, Update hunk does not contain any lines",
            4,
        ),
        # A blank line inside an added file ends it; Codex then reads the blank as a header.
        (wrap("*** Add File: a.md\n+# Title\n\n+text"), f"invalid hunk at line 4, '' {BAD_HEADER}", 4),
        (
            wrap("*** Add File: a\n+x\n*** Environment ID: late"),
            f"invalid hunk at line 4, '*** Environment ID: late' {BAD_HEADER}",
            4,
        ),
        (
            wrap("*** Environment ID:   \n*** Delete File: a"),
            "invalid patch: apply_patch environment_id cannot be empty",
            None,
        ),
        (
            wrap("*** Environment ID: a\n*** Environment ID: b\n*** Delete File: a"),
            "invalid patch: apply_patch environment_id cannot be specified more than once",
            None,
        ),
    ],
)
def test_malformed_patches_raise_codex_messages(text, message, line):
    with pytest.raises(PatchError) as info:
        parse_patch(text)
    assert str(info.value) == message
    assert info.value.line_number == line


def test_error_line_numbers_count_from_begin_inside_a_heredoc_wrapper():
    with pytest.raises(PatchError, match="at line 3,"):
        parse_patch("<<'EOF'\n*** Begin Patch\n*** Delete File: a\noops\n*** End Patch\nEOF")


# --------------------------------------------------------------------------- extract_patch

PATCH = "*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch"


@pytest.mark.parametrize(
    "command",
    [
        PATCH,
        f"\n\n{PATCH}\n",
        f"apply_patch <<'EOF'\n{PATCH}\nEOF",
        f"apply_patch << 'PATCH'\n{PATCH}\nPATCH\n",
        f'applypatch <<"EOF"\n{PATCH}\nEOF\n',
        f"apply_patch <<EOF\n{PATCH}\nEOF",
        f"apply_patch <<-EOF\n\t{PATCH}\n\tEOF",
        f"cd x && apply_patch <<'PATCH'\n{PATCH}\nPATCH",
        f"cd 'my dir' && apply_patch <<'PATCH'\n{PATCH}\nPATCH\necho done",
        f"apply_patch << 'PATCH'\n{PATCH}",  # unterminated heredoc: bash reads to the end
        f"apply_patch '{PATCH}'",
        f"<<'EOF'\n{PATCH}\nEOF\n",
        json.dumps({"input": PATCH}),
        json.dumps({"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}\nEOF"]}),
    ],
)
def test_extract_patch_finds_the_patch(command):
    assert extract_patch(command) == PATCH


def test_extract_patch_accepts_argv():
    assert extract_patch(["apply_patch", PATCH]) == PATCH
    assert extract_patch(["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}\nEOF"]) == PATCH
    assert extract_patch(["bash", "-lc", "ls"]) is None


def test_extract_patch_takes_the_first_heredoc_of_several():
    second = PATCH.replace("foo", "bar")
    script = f"apply_patch <<'A'\n{PATCH}\nA\napply_patch <<'B'\n{second}\nB"
    assert extract_patch(script) == PATCH


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        f"cat > change.patch <<'EOF'\n{PATCH}\nEOF",  # mentions a patch, does not apply one
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: foo\n+hi\nEOF",  # no End marker
        "",
    ],
)
def test_extract_patch_returns_none_without_an_applied_patch(command):
    assert extract_patch(command) is None


# --------------------------------------------------------------------------- seek_sequence


def test_seek_sequence_ladder():
    assert seek_sequence(["foo", "bar", "baz"], ["bar", "baz"], 0, False) == 1
    assert seek_sequence(["foo   ", "bar\t"], ["foo", "bar"], 0, False) == 0  # trailing whitespace
    assert seek_sequence(["    foo   ", "   bar\t"], ["foo", "bar"], 0, False) == 0  # both ends
    assert seek_sequence(["a \u2013 b\u00a0\u201cq\u201d"], ['a - b "q"'], 0, False) == 0  # punctuation
    assert seek_sequence(["x"], ["y"], 0, False) is None


def test_seek_sequence_tries_each_level_over_the_whole_range_first():
    # The exact match further down wins over the fuzzy one at the top.
    assert seek_sequence(["foo ", "x", "foo"], ["foo"], 0, False) == 2


def test_seek_sequence_edges():
    assert seek_sequence(["a"], [], 5, False) == 5
    assert seek_sequence(["a"], ["a", "b", "c"], 0, False) is None
    assert seek_sequence(["x", "a", "x"], ["x"], 1, False) == 2
    # eof: only the position at the very end is tried, whatever `start` says.
    assert seek_sequence(["x", "end", "x"], ["x"], 0, True) == 2
    assert seek_sequence(["x", "end"], ["x"], 0, True) is None


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


# --------------------------------------------------------------------------- real patches from real logs


def tool_calls(log: Path):
    """(form, patch text or None, output text) for each apply_patch-carrying call in a rollout."""
    calls, outputs = [], {}
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        item = record.get("payload", record) if isinstance(record, dict) else None
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("function_call_output", "custom_tool_call_output"):
            out = item.get("output")
            outputs[item.get("call_id")] = out if isinstance(out, str) else json.dumps(out)
        elif kind == "custom_tool_call" and item.get("name") == "apply_patch":
            calls.append((item.get("call_id"), "custom", item.get("input")))
        elif kind == "function_call":
            found = _patch_of_function_call(item.get("name"), item.get("arguments") or "")
            if found is not None:
                calls.append((item.get("call_id"), *found))
    return [(form, text, outputs.get(call_id, "")) for call_id, form, text in calls]


def _patch_of_function_call(name, arguments):
    try:
        args = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    if name == "apply_patch":
        return "function", args.get("input")
    command = args.get("command") or args.get("cmd")
    if isinstance(command, list) and command and command[0] in ("apply_patch", "applypatch"):
        return "argv", command[1]
    if command and "*** Begin Patch" in str(command) and "apply_patch" in str(command):
        return "heredoc", extract_patch(command)
    return None


def codex_parse_error(output: str) -> str | None:
    """The parse error Codex reported for a call, if it rejected the patch text itself."""
    for marker in ("error: invalid hunk", "error: invalid patch"):
        if marker in output:
            start = output.index(marker) + len("error: ")
            return output[start:].split("\n")[0].rstrip('"}')
    return None


def public_logs() -> list[Path]:
    logs = sorted((FIXTURES / "codex-public").glob("*.jsonl")) + sorted(
        (FIXTURES / "codex-generated").glob("*/*.jsonl")
    )
    if not logs:
        pytest.skip("fixture logs not available")
    return logs


def test_every_real_patch_parses_as_codex_parsed_it():
    parsed, rejected, forms = 0, 0, set()
    for log in public_logs():
        for form, text, output in tool_calls(log):
            assert text is not None, f"{log.name}: {form} call without a patch"
            forms.add(form)
            expected_error = codex_parse_error(output)
            if expected_error is None:
                assert parse_patch(text), f"{log.name}: no ops"
                parsed += 1
            else:
                with pytest.raises(PatchError) as info:
                    parse_patch(text)
                assert str(info.value).startswith(expected_error[:150]), log.name
                rejected += 1
    print(f"real patches: {parsed} parsed, {rejected} rejected as Codex rejected them")
    assert forms == {"custom", "function", "argv", "heredoc"}
    assert parsed >= 230 and rejected >= 7


def test_real_sessions_replay_where_their_files_are_known(tmp_path):
    """Replay each session's patches in order; files an Add File created can be checked exactly.

    Wherever every file a patch touches was created earlier in the same session, Codex's recorded
    outcome (success, or a failure to apply) must be ours too.
    """
    agreed = 0
    for n, log in enumerate(public_logs()):
        root, known = tmp_path / str(n), set()
        root.mkdir()
        for _, text, output in tool_calls(log):
            if codex_parse_error(output) is not None:
                continue
            ops = parse_patch(text)
            codex_ok = "Success. Updated the following files:" in output
            if not all(op.op == "add" or op.path in known for op in ops):
                ops = [op for op in ops if op.op == "add"] if codex_ok else []
                if not ops:
                    continue
            try:
                apply_patch(ops, root)
                ours_ok = True
            except PatchError:
                ours_ok = False
            if len(ops) == len(parse_patch(text)):
                assert ours_ok == codex_ok, f"{log.name}: {text[:200]!r} -> {output[:200]!r}"
                agreed += 1
            if ours_ok:
                known.update(op.target for op in ops if op.op != "delete")
    assert agreed >= 70


def scenario_copy(tmp_path: Path) -> Path:
    source = FIXTURES / "codex-generated" / "scenario-fixadd" / "repo"
    if not source.is_dir():
        pytest.skip("scenario fixture not available")
    repo = tmp_path / "repo"
    shutil.copytree(source, repo)
    for path in repo.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the fixture is read-only
    return repo


def run_pytest(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=repo,
        capture_output=True,
        timeout=120,
    )


def test_scenario_patches_fix_the_repo(tmp_path):
    repo = scenario_copy(tmp_path)
    scenario = json.loads((FIXTURES / "codex-generated" / "scenario-fixadd" / "scenario.json").read_text())
    turns = [[s["patch"] for req in turn["steps"] for s in req if "patch" in s] for turn in scenario["turns"]]
    assert run_pytest(repo).returncode != 0
    for patch in turns[0]:
        assert apply_patch(parse_patch(patch), repo) == [("M", "calc.py")]
    assert run_pytest(repo).returncode == 0
    for patch in turns[1]:
        apply_patch(parse_patch(patch), repo)
    assert (
        repo / "calc.py"
    ).read_text() == "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    done = run_pytest(repo)
    assert done.returncode == 0 and b"2 passed" in done.stdout


@pytest.mark.parametrize("version", ["codex-0.20.0", "codex-0.45.0", "codex-0.90.0", "codex-0.171.0"])
def test_generated_sessions_replay_with_codex_summaries(tmp_path, version):
    """Real Codex CLIs ran the fix-add scenario; our applier must print what each one printed."""
    logs = sorted((FIXTURES / "codex-generated" / version).glob("*.jsonl"))
    if not logs:
        pytest.skip("fixture logs not available")
    repo = scenario_copy(tmp_path)
    calls = tool_calls(logs[0])
    assert calls
    for _, text, output in calls:
        summary = apply_patch(parse_patch(text), repo)
        printed = "Success. Updated the following files:\n" + "".join(f"{a} {p}\n" for a, p in summary)
        assert printed in json.loads(output)["output"] if output.startswith("{") else printed in output
    assert run_pytest(repo).returncode == 0
