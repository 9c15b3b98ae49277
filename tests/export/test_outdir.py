"""The exports' shared output directory: built aside, moved into place whole, never left half-written."""

from __future__ import annotations

import pytest

from logmine.errors import LogmineError
from logmine.export.outdir import staged


class Failed(LogmineError):
    pass


def test_a_finished_block_replaces_the_output_and_leaves_nothing_beside_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with staged(out, Failed) as staging:
        (staging / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_block_keeps_the_old_output_and_says_why_in_one_error(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(Failed, match=f"cannot write {out}"):
        with staged(out, Failed) as staging:
            (staging / "part.txt").write_text("half")
            raise OSError(28, "No space left on device")
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with pytest.raises(Failed, match="cannot write to"):  # nowhere to put it
        with staged(tmp_path / "out" / "old.txt" / "x", Failed):
            pass
