"""Net file changes of a task, composed from its apply_patch operations.

A file's net change is kept in two forms, one per grading mode of the ``file_diff`` verifier:

- ``content``: the file's full end-of-task text (``exact`` mode). Known only when the file's whole
  text is known: it was added during the session, or the caller knows its base content. Otherwise
  None: verify computes it by replaying the task on the rebuilt workspace.
- ``added`` / ``removed``: the lines the task added and removed, net of lines added then removed
  again (``hunks`` mode: every added line present, every removed line absent).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from logmine.patch import FileOp, PatchError, apply_hunks


@dataclass
class FileChange:
    path: str
    op: str  # add | update | delete (net over the task)
    move_from: str | None = None
    content: str | None = None  # end-of-task text when known (None for delete or unknown)
    added: Counter = field(default_factory=Counter)
    removed: Counter = field(default_factory=Counter)


class SessionFiles:
    """File texts known so far in a session (files its patches created), carried across its tasks."""

    def __init__(self) -> None:
        self.known: dict[str, str | None] = {}  # path -> text (None: deleted)


def compose(ops: list[FileOp], session: SessionFiles) -> dict[str, FileChange]:
    """Apply ``ops`` (a task's successful patch operations, in order) to the running file state.

    Returns the task's changes by final path. Updates ``session.known`` as it goes.
    """
    changes: dict[str, FileChange] = {}
    for op in ops:
        change = changes.get(op.path)
        if op.op == "add":
            if change is None or change.op == "delete":
                existed = change is not None or session.known.get(op.path) is not None
                change = FileChange(op.path, "update" if existed else "add")
            _diff(change, session.known.get(op.path) or "", op.content or "")
            change.content = op.content or ""
            session.known[op.path] = change.content
        elif op.op == "delete":
            change = change or FileChange(op.path, "delete")
            if change.op == "add":  # created and deleted within the task: no net change
                del changes[op.path]
                session.known[op.path] = None
                continue
            change.op, change.content = "delete", None
            session.known[op.path] = None
        else:
            change = change or FileChange(op.path, "update")
            before = session.known.get(op.path)
            after = None
            if before is not None:
                try:
                    after = apply_hunks(before, op.path, op.hunks)
                except PatchError:
                    after = None
            for hunk in op.hunks:
                _count(change, hunk.old_lines, hunk.new_lines)
            change.content = after
            session.known[op.path] = after
            if op.move_to and op.move_to != op.path:
                del_change = FileChange(op.path, "delete")
                changes[op.path] = del_change
                session.known[op.path] = None
                change.move_from, change.path = op.path, op.move_to
                session.known[op.move_to] = after
                changes[op.move_to] = change
                continue
        changes[op.path] = change
    return changes


def _diff(change: FileChange, before: str, after: str) -> None:
    _count(change, before.splitlines(), after.splitlines())


def _count(change: FileChange, old: list[str] | tuple, new: list[str] | tuple) -> None:
    """Add a hunk's net line changes; a line removed after being added cancels out, and back."""
    removed = Counter(old) - Counter(new)
    added = Counter(new) - Counter(old)
    cancel = removed & change.added
    change.added -= cancel
    removed -= cancel
    back = added & change.removed
    change.removed -= back
    added -= back
    change.added += added
    change.removed += removed
