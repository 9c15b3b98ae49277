"""Files untracked at a session's start, made again from the earlier sessions' patches that wrote them.

An author runs a session, commits part of its work, and starts the next session with the rest still
untracked: Codex's first snapshot of the new session lists those files
(``preexisting_untracked_files``), and the commit the session records lacks them. A task that edits
one of them would fail on the commit alone (a start that differed). When the earlier sessions in the
same directory wrote such a file with patches only — created it (``Add File``) and then updated it —
applying those patches in order gives the file as the author had it, and :func:`carry_untracked` puts
it into the rebuilt tree. A file one of whose patches does not apply (a shell command or an editor
changed it too) is left out, so the task's own patches still show the start that differed.
"""

from __future__ import annotations

from pathlib import Path

from logmine.patch import PatchError, apply_patch, rooted
from logmine.segment.records import Action


def carry_untracked(carried: tuple[Action, ...], untracked: tuple[str, ...], tree: Path, root: str,
                    cwd: str) -> list[str]:
    """Write into ``tree`` each file of ``untracked`` (root-relative) that it lacks and that the
    ``carried`` patches (earlier sessions', oldest first) make whole; returns those made, sorted."""
    wanted = {p for p in untracked if not (tree / p).exists() and not (tree / p).is_symlink()}
    broken: set[str] = set()
    for action in carried:
        try:
            ops = rooted(action.ops, action.workdir or cwd, root)
        except PatchError:
            continue
        for op in ops:
            if op.path not in wanted or op.path in broken or (op.move_to and op.move_to not in wanted):
                continue
            try:
                apply_patch((op,), tree)
            except PatchError:
                broken.add(op.path)
    made = sorted(p for p in wanted - broken if (tree / p).is_file())
    for path in broken:  # half made: the start is shown to differ by the task's own patches instead
        (tree / path).unlink(missing_ok=True)
    return made


def carried_note(made: tuple[str, ...]) -> str:
    return f"{len(made)} file(s) untracked at the session's start made from earlier sessions' patches: " + \
        ", ".join(made[:3])
