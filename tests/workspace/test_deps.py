"""The manifests a task leaves (:mod:`logmine.workspace.deps`): its environment is installed from them."""

from __future__ import annotations

from pathlib import Path

from logmine.patch import parse_patch
from logmine.segment.records import Action
from logmine.workspace.deps import changed_manifests, end_manifests

ROOT = "/home/u/app"
ADD = ("*** Begin Patch\n*** Update File: {where}pyproject.toml\n@@\n dependencies = [\n+  \"python-multipart\",\n"
       " ]\n*** Update File: {where}app.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n")


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "start"
    (tree / "backend").mkdir(parents=True)
    (tree / "backend/pyproject.toml").write_text('[project]\nname = "a"\ndependencies = [\n]\n')
    (tree / "backend/uv.lock").write_text("version = 1\n")
    (tree / "backend/app.py").write_text("x = 1\n")
    return tree


def _patch(text: str, workdir: str) -> tuple[Action, ...]:
    return (Action(0, "command", "c1", command="uv add python-multipart", workdir=workdir),
            Action(1, "patch", "c2", ops=tuple(parse_patch(text)), workdir=workdir))


def test_the_end_manifests_are_a_copy_with_the_tasks_manifest_edits_and_no_stale_lock(tmp_path):
    tree = _tree(tmp_path)
    actions = _patch(ADD.format(where=f"{ROOT}/backend/"), ROOT)  # an absolute path, as agents write it
    assert changed_manifests(actions, ROOT, ROOT) == ["backend/pyproject.toml"]
    deps = end_manifests(actions, tree, ROOT, ROOT, tmp_path / "deps")
    assert deps is not None and '"python-multipart"' in (deps / "backend/pyproject.toml").read_text()
    assert (deps / "backend/app.py").read_text() == "x = 1\n"  # only manifests: the code stays the start's
    assert not (deps / "backend/uv.lock").exists()  # `uv sync --frozen` would install the old lock
    # the start tree itself is untouched (the copy is made of hard links)
    assert "multipart" not in (tree / "backend/pyproject.toml").read_text()
    assert (tree / "backend/uv.lock").is_file()


def test_a_lock_the_task_updated_too_is_kept(tmp_path):
    tree = _tree(tmp_path)
    both = ADD.format(where="").replace("*** End Patch\n", "*** Update File: uv.lock\n@@\n-version = 1\n+version = 2\n*** End Patch\n")
    deps = end_manifests(_patch(both, f"{ROOT}/backend"), tree, ROOT, ROOT, tmp_path / "deps")
    assert deps is not None and (deps / "backend/uv.lock").read_text() == "version = 2\n"


def test_no_manifest_changed_or_a_patch_that_does_not_apply_leaves_the_start(tmp_path):
    tree = _tree(tmp_path)
    code_only = "*** Begin Patch\n*** Update File: backend/app.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
    assert end_manifests(_patch(code_only, ROOT), tree, ROOT, ROOT, tmp_path / "a") is None
    stale = ADD.format(where="backend/").replace("dependencies = [\n", "requires = [\n")
    assert end_manifests(_patch(stale, ROOT), tree, ROOT, ROOT, tmp_path / "b") is None
    assert not (tmp_path / "b").exists()
