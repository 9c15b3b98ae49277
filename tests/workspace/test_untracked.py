"""Files untracked at a session's start, made again from earlier sessions' patches
(:mod:`logmine.workspace.untracked`)."""

from __future__ import annotations

from logmine.patch import parse_patch
from logmine.segment.records import Action
from logmine.workspace.untracked import carry_untracked

ROOT = "/home/u/app"


def _patch(n: int, text: str, workdir: str = ROOT) -> Action:
    return Action(n, "patch", f"c{n}", ops=tuple(parse_patch(text)), workdir=workdir)


def test_a_file_made_and_updated_by_patches_is_made_again_in_order(tmp_path):
    carried = (_patch(0, f"*** Begin Patch\n*** Add File: {ROOT}/src/a.py\n+x = 1\n*** End Patch\n"),
               _patch(1, "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n", f"{ROOT}/src"))
    made = carry_untracked(carried, ("src/a.py", "src/elsewhere.py"), tmp_path, ROOT, ROOT)
    assert (tmp_path / "src/a.py").read_text() == "x = 2\n"
    assert made == ["src/a.py"]


def test_a_file_whose_patches_do_not_all_apply_is_left_out(tmp_path):
    """An update that does not apply: something the log does not show changed the file in between."""
    carried = (_patch(0, "*** Begin Patch\n*** Add File: a.py\n+x = 1\n*** End Patch\n"),
               _patch(1, "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 5\n+x = 6\n*** End Patch\n"))
    assert carry_untracked(carried, ("a.py",), tmp_path, ROOT, ROOT) == []
    assert not (tmp_path / "a.py").exists()


def test_a_file_the_tree_holds_and_one_not_listed_are_left_alone(tmp_path):
    (tmp_path / "a.py").write_text("kept\n")
    carried = (_patch(0, "*** Begin Patch\n*** Add File: a.py\n+x = 1\n*** Add File: b.py\n+y = 1\n*** End Patch\n"),)
    assert carry_untracked(carried, ("a.py",), tmp_path, ROOT, ROOT) == []
    assert (tmp_path / "a.py").read_text() == "kept\n" and not (tmp_path / "b.py").exists()
