"""What a task's own actions say about a rebuilt start: do they fit it?

:func:`logmine.workspace.start.rebuild` asks when a session may have begun with earlier sessions'
uncommitted edits (:mod:`logmine.segment.chain`): a command run in a directory the tree lacks, or a
first patch that does not apply, shows the tree is not the start (:func:`misfit`); when the task ran a
project script first, its first patches decide nothing (:func:`undecided`) and the tree on which more
of its patches apply is taken (:func:`fit`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from logmine.patch import FileOp, PatchError, rooted
from logmine.segment.commands import packaged_classifier
from logmine.segment.records import Action
from logmine.workspace.edits import failing_path, patches_applying, within

if TYPE_CHECKING:
    from logmine.workspace.start import RebuiltTree


def misfit(own: tuple[Action, ...], tree: RebuiltTree) -> str | None:
    """Why ``tree`` is not the task's start by what the task did first, else None: a command it ran
    before any patch in a directory the tree lacks, or the first path that the patches it made before
    its first command that may edit files do not apply to. Commands that only read, list, search or
    test (``sed -n``, ``rg``, ``ls``, ``git status``) leave the tree as it was, so the patches after
    them still meet the start."""
    ran: list[str] = []  # commands run before the first patch: they may have made a directory
    first: list[Action] = []
    edits = packaged_classifier().edits_files
    for action in own:
        if action.kind == "patch":
            first.append(action)
            continue
        where = action.workdir if action.workdir and within(action.workdir, tree.root) else None
        rel = os.path.relpath(where, tree.root) if where else "."
        if not first and not (tree.path / rel).is_dir() and not any(rel.split("/")[0] in c for c in ran):
            return f"the task ran a command in {rel}, a directory not in the tree"
        if edits(action.command or ""):
            break
        ran.append(action.command or "")
    path = failing_path(own_ops(tuple(first), tree.cwd, tree.root), tree.path) if first else None
    return f"the task's patch of {path} does not apply" if path else None


def undecided(own: tuple[Action, ...], tree: RebuiltTree) -> bool:
    """Does the task's start stay undecided by its first patches: it ran a command that may edit files
    (a project script) before any patch, and some of its patches do not apply to ``tree``? Then the
    tree where more of them apply is its start (:func:`logmine.workspace.start.rebuild`)."""
    first = next((a for a in own if a.kind == "patch" or (a.command and packaged_classifier().edits_files(a.command))),
                 None)
    return first is not None and first.kind == "command" and fit(own, tree) < len(patch_calls(own, tree))


def fit(own: tuple[Action, ...], tree: RebuiltTree) -> int:
    """How many of the task's patch calls apply to ``tree``, in order (:func:`patches_applying`)."""
    return patches_applying(patch_calls(own, tree), tree.path)


def patch_calls(own: tuple[Action, ...], tree: RebuiltTree) -> list[tuple[FileOp, ...]]:
    """The task's patch calls, each as root-relative ops (up to one whose paths leave the repository)."""
    calls = []
    for action in own:
        if action.kind == "patch":
            try:
                calls.append(rooted(action.ops, action.workdir or tree.cwd, tree.root))
            except PatchError:
                break
    return calls


def own_ops(own: tuple[Action, ...], cwd: str, root: str) -> tuple[FileOp, ...]:
    """The task's own patch ops, root-relative, in order (up to one whose paths leave the repository)."""
    ops: list[FileOp] = []
    for action in own:
        if action.kind == "patch":
            try:
                ops += rooted(action.ops, action.workdir or cwd, root)
            except PatchError:
                break
    return tuple(ops)
