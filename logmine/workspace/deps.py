"""The dependency manifests a task leaves behind: its environment is built from them, as SWE-bench does.

A task that adds a dependency (``python-multipart`` to ``backend/pyproject.toml``) installed it in the
session over the network (``uv add``, ``npm install``). The sandbox that replays and grades it has no
network, so an environment installed from the start tree's manifests lacks the new package and the
task's test fails after the replay for that reason alone. SWE-bench builds each instance's environment
at the gold patch's requirements; so does logmine: :func:`end_manifests` copies the start tree and
applies to the copy the parts of the task's patches that change a manifest, and verify and
``export tmax`` build the environment from that copy. The start tree itself, what the policy sees, is
left as it was.

A lock file the task's patches did not update (the session's ``uv add`` rewrote it with a command)
is stale once its manifest changed; where the installer would trust it blindly (``uv sync --frozen``,
``cargo fetch --locked``, ``poetry install``) the copy drops it and the dependencies are resolved from
the manifest. npm, pnpm and yarn fall back to a plain install when their lock is out of date.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from logmine.environment.detect import MANIFESTS
from logmine.patch import FileOp, PatchError, apply_patch, rooted
from logmine.segment.records import Action

LOCKS = (".lock", "-lock.json", "-lock.yaml", "go.sum")  # written by an install, never the change itself
_STRICT_LOCKS = {"pyproject.toml": ("uv.lock", "poetry.lock"), "Cargo.toml": ("Cargo.lock",)}


def _manifest_ops(actions: tuple[Action, ...], root: str, cwd: str) -> list[list[FileOp]]:
    """Each patch's operations on dependency manifests and locks, relative to the repository ``root``."""
    found = []
    for action in actions:
        if action.kind != "patch":
            continue
        try:
            ops = rooted(action.ops, action.workdir or cwd, root)
        except PatchError:
            continue  # a path outside the repository: not the project's manifest
        mine = [op for op in ops if os.path.basename(op.path) in MANIFESTS
                or os.path.basename(op.move_to or "") in MANIFESTS]
        if mine:
            found.append(mine)
    return found


def changed_manifests(actions: tuple[Action, ...], root: str, cwd: str) -> list[str]:
    """The dependency manifests (not locks) the task's patches change, relative to ``root``."""
    return _changed(_manifest_ops(actions, root, cwd))


def _changed(patches: list[list[FileOp]]) -> list[str]:
    return list(dict.fromkeys(op.path for ops in patches for op in ops if not op.path.endswith(LOCKS)))


def end_manifests(actions: tuple[Action, ...], tree: Path, root: str, cwd: str, dest: Path) -> Path | None:
    """A copy of ``tree`` at ``dest`` whose manifests are those the task leaves, or None when its
    patches change no manifest or do not apply to them (the start's environment is then the one)."""
    patches = _manifest_ops(actions, root, cwd)
    changed = _changed(patches)
    if not changed:
        return None
    # hard links are enough: a patch replaces the files it writes (a new inode), never writes in place
    shutil.copytree(tree, dest, symlinks=True, copy_function=_link_or_copy)
    try:
        for ops in patches:
            apply_patch(ops, dest)
    except PatchError:
        shutil.rmtree(dest, ignore_errors=True)
        return None
    updated = {op.path for ops in patches for op in ops}
    for manifest in changed:
        _drop_stale_lock(dest, manifest, updated)
    return dest


def _drop_stale_lock(tree: Path, manifest: str, updated: set[str]) -> None:
    """Remove the nearest lock of ``manifest`` that its installer trusts blindly, unless the task's
    patches updated it too."""
    names = _STRICT_LOCKS.get(os.path.basename(manifest), ())
    folder = os.path.dirname(manifest)
    while names:
        for name in names:
            lock = os.path.join(folder, name) if folder else name
            if (tree / lock).is_file():
                if lock not in updated:
                    (tree / lock).unlink()
                return
        if not folder:
            return
        folder = os.path.dirname(folder)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)

