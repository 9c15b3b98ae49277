"""Composing a task's patch operations into net file changes."""

from __future__ import annotations

from logmine.patch import parse_patch
from logmine.segment.diffs import SessionFiles, compose


def _ops(text: str):
    return parse_patch(text)


def test_add_then_update_is_one_add_with_end_content():
    files = SessionFiles()
    ops = _ops("*** Begin Patch\n*** Add File: a.py\n+x = 1\n+y = 2\n*** End Patch\n")
    ops += _ops("*** Begin Patch\n*** Update File: a.py\n@@\n x = 1\n-y = 2\n+y = 3\n*** End Patch\n")
    change = compose(ops, files)["a.py"]
    assert change.op == "add"
    assert change.content == "x = 1\ny = 3\n"
    assert sorted(change.added.elements()) == ["x = 1", "y = 3"] and not change.removed


def test_update_with_several_hunks_of_an_unknown_file():
    ops = _ops("*** Begin Patch\n*** Update File: m.py\n@@ def a():\n-    return 1\n+    return 2\n"
               "@@ def b():\n-    pass\n+    return 3\n*** End Patch\n")
    change = compose(ops, SessionFiles())["m.py"]
    assert change.op == "update" and change.content is None  # base text unknown: verify computes it
    assert sorted(change.added.elements()) == ["    return 2", "    return 3"]
    assert sorted(change.removed.elements()) == ["    pass", "    return 1"]


def test_move_and_delete():
    files = SessionFiles()
    files.known["old.py"] = "a\nb\n"
    ops = _ops("*** Begin Patch\n*** Update File: old.py\n*** Move to: new.py\n@@\n a\n-b\n+c\n"
               "*** Delete File: gone.py\n*** End Patch\n")
    changes = compose(ops, files)
    assert changes["new.py"].move_from == "old.py" and changes["new.py"].content == "a\nc\n"
    assert changes["old.py"].op == "delete" and changes["gone.py"].op == "delete"
    assert files.known["old.py"] is None and files.known["new.py"] == "a\nc\n"


def test_added_then_removed_lines_cancel():
    files = SessionFiles()
    files.known["f"] = "a\n"
    ops = _ops("*** Begin Patch\n*** Update File: f\n@@\n a\n+tmp\n*** End Patch\n")
    ops += _ops("*** Begin Patch\n*** Update File: f\n@@\n a\n-tmp\n*** End Patch\n")
    change = compose(ops, files)["f"]
    assert not change.added and not change.removed and change.content == "a\n"


def test_created_and_deleted_within_a_task_is_no_change():
    ops = _ops("*** Begin Patch\n*** Add File: t.txt\n+x\n*** End Patch\n")
    ops += _ops("*** Begin Patch\n*** Delete File: t.txt\n*** End Patch\n")
    assert compose(ops, SessionFiles()) == {}
