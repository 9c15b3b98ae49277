"""Parsing Codex patches: grammar, leniency, Codex's error messages, extraction, seeking.

Expected messages are Codex's own (codex-rs/apply-patch): a change in wording is a change in
fidelity.
"""

from __future__ import annotations

import json

import pytest
from patch_support import BAD_HEADER, wrap

from logmine.patch import (
    FileOp,
    Hunk,
    PatchError,
    extract_patch,
    parse_patch,
    parse_patch_document,
    render_patch,
    seek_sequence,
)

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
