"""Earlier work of a session, redone on a rebuilt tree: patches and the shell commands that edited files.

A task's start state is the session's commit plus everything earlier tasks did to the files. Patches
are applied on the host with :mod:`logmine.patch`; once a shell command edited files (``python - <<'PY'
… write_text``, ``sed -i``, ``cat > f <<EOF``, ``mv``, ``rm``, a formatter), the earlier work is replayed
in order in a sandbox instead — the commands are deterministic in almost every case — and the tree it
leaves is the start state. What the session shows checks the result: a later patch that does not apply
says the replay diverged (or the session started elsewhere), with the reason.

Patch paths are made relative to the repository root: Codex wrote them relative to the call's working
directory, or absolute (``/home/u/proj/src/x.py``). An absolute path inside the repository is the same
file; one outside is refused with the reason.

A patch that fails on a file which nothing earlier in the session changed — its text is still the
text of the rebuilt start — is evidence that the author's tree differed from the commit the session
recorded (uncommitted changes at the start): :class:`StartDiffered`, never validated.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from logmine.commandline import written_files
from logmine.environment.detect import detect
from logmine.environment.host import host_environment
from logmine.errors import LogmineError
from logmine.patch import REDACTED_MARK, FileOp, PatchError, apply_hunks, apply_patch, render_patch, rooted, within
from logmine.sandbox import CommandResult, Limits, Sandbox, backend_unavailable, open_sandbox
from logmine.sandbox.workspace import copy_regular
from logmine.segment.records import Action


class NotRebuilt(LogmineError):
    """The start state cannot be rebuilt; the message is the reason."""


@dataclass(frozen=True, slots=True)
class FailedEdit:
    """An editing command that failed at replay where the session saw it succeed."""

    seq: int
    why: str  # ``exit 1``, ``exit 127: bash: pnpm: command not found``, a sandbox error
    command: str

    def __str__(self) -> str:
        return f"seq {self.seq} ({self.why})"

    def may_have_made(self, path: str) -> bool:
        """Could the command have written ``path``, so that its failure explains a patch of that file
        not applying? Yes when it names the file or its top folder, or runs a script of the project
        (a script may write anything); an install or a build of other files does not explain it."""
        name, top = os.path.basename(path), path.split("/")[0]
        return name in self.command or top in self.command or self.ran_script()

    def ran_script(self) -> bool:
        """Did the command run a script of the project that may write files (not one that only checks)?"""
        return bool(_RUNS_SCRIPT.search(_CHECKS_ONLY.sub(" ", self.command)))

    def missing_script(self) -> str | None:
        """The project script (a relative path) the command ran that the replayed tree lacks, else
        None: the session ran it, so the author's tree had it (untracked, as spec-kit's ``.specify/``
        often is), or a command before it made it."""
        found = _NO_SCRIPT.match(self.why)
        return found.group("path") if found else None


#: How bash says a script it was told to run is not there: ``exit 127: bash: line 1: ./x.sh: No such …``.
_NO_SCRIPT = re.compile(r"^exit 12[67]: (?:\S+: )?(?:line \d+: )?(?P<path>(?!/)[\w.-]*/[\w./-]+): No such file or directory$")


#: Scripts of an agent's workflow kit known to write nothing: spec-kit's ``check-prerequisites`` only
#: checks that the feature's documents exist and prints their paths (its failure at replay is no edit).
_CHECKS_ONLY = re.compile(r"\S*check-prerequisites\.(?:sh|ps1)\b")

#: A command that runs a script of the project: ``./x``, ``.specify/scripts/…``, ``python x.py``,
#: ``npm run …``/``pnpm exec …``/``npx``.
_RUNS_SCRIPT = re.compile(r"(?:^|[\s;&|(])(?:\.{1,2}/|\.?[\w-]+/[\w./-]*\.(?:sh|py|js|mjs|cjs|ts|rb|pl)\b"
                          r"|(?:bash|sh|zsh|python3?|node|ruby|perl|deno|bun)\s+[\w./-]+\.\w+"
                          r"|(?:npm|pnpm|yarn)\s+(?:run|exec|dlx)\b|npx\s)")


class StartDiffered(NotRebuilt):
    """The session's own edits show that its start tree was not the rebuilt one."""

    def __init__(self, path: str, against: str = "commit", untracked: bool = False, ran: bool = False,
                 read_at: int | None = None, found_by: str | None = None, listed_at: int | None = None,
                 listed_in: int | None = None):
        detail = ", untracked at the session's start" if untracked else ""
        detail += ", a script the session ran that the repository does not hold" if ran else ""
        detail += f", which the session read at seq {read_at} and the tree lacks" if read_at is not None else ""
        detail += f", which {found_by} found in the session and not at replay" if found_by else ""
        detail += (f", which the session's `git status` at seq {listed_at} showed changed as it began"
                   if listed_at is not None else "")
        detail += f", which the session's `ls` at seq {listed_in} showed as it began" if listed_in is not None else ""
        super().__init__(f"start tree differed from {against} (first mismatch: {path}{detail})")
        self.path = path


def check_untracked(path: str | None, tree: Path, untracked: frozenset[str], against: str = "commit") -> None:
    """Raise :class:`StartDiffered` when a patch failed on ``path``, a file missing from ``tree`` that
    Codex's first snapshot of the session found untracked: the author had it, the commit has not."""
    if path is not None and path in untracked and not (tree / path).exists():
        raise StartDiffered(path, against, untracked=True)


def failing_path(ops: Sequence[FileOp], tree: Path | Callable[[str], str | None]) -> str | None:
    """The root-relative path of the first op of ``ops`` that cannot apply to ``tree`` (a directory, or
    a function giving a root-relative file's text or None), else None."""
    read = tree if callable(tree) else (lambda rel: _read(tree, rel))
    return _apply(ops, {}, read)


def patches_applying(patches: Sequence[Sequence[FileOp]], tree: Path) -> int:
    """How many of ``patches`` (each a patch call's root-relative ops, in order) apply to ``tree``, each
    onto what the ones before it that applied made; commands between them are not run."""
    texts: dict[str, str | None] = {}
    fit = 0
    for ops in patches:
        mine = dict(texts)
        if _apply(ops, mine, lambda rel: _read(tree, rel)) is None:
            texts, fit = mine, fit + 1
    return fit


def _apply(ops: Sequence[FileOp], texts: dict[str, str | None], read: Callable[[str], str | None]) -> str | None:
    """Apply ``ops`` to the file texts in ``texts`` (a path missing there is ``read``; None: no file),
    recording each result there; the path of the first op that does not apply, else None."""
    for op in ops:
        if op.op == "add":
            texts[op.path] = op.content
            continue
        text = texts[op.path] if op.path in texts else read(op.path)
        if text is None:
            return op.path
        if op.op == "delete":
            texts[op.path] = None
            continue
        try:
            texts[op.target] = apply_hunks(text, op.path, op.hunks)
        except PatchError:
            return op.path
        if op.move_to is not None:
            texts[op.path] = None
    return None


def differed(path: str, now: Path, start: Path) -> bool:
    """Does a patch's failure on ``path`` show that the author's start tree differed from ``start``?
    Yes when the file is in ``start`` and still as it was there in ``now`` (nothing replayed changed it).
    A file missing from both was made by a command the log does not show as an edit (a generator
    script): that is a replay gap, not a dirty tree."""
    a, b = now / path, start / path
    return b.is_file() and a.is_file() and a.read_bytes() == b.read_bytes()


def explain(ops: Sequence[FileOp], now: Path, start: Path | None, *, touched: set[str] | None = None,
            untracked: frozenset[str] = frozenset(), failed_before: Sequence[FailedEdit | str] = (),
            against: str = "commit") -> None:
    """Raise what a patch's failure on tree ``now`` shows, or return when it shows nothing certain.

    In order: a hunk holding a redaction placeholder that still does not match (redaction replaced
    text the patch needs: not the author's fault); the file is missing and Codex's first snapshot saw
    it ``untracked`` at the session's start (:class:`StartDiffered`); a replayed command that
    failed ran a project script the tree lacks that nothing failed before could have made
    (:func:`missing_script`: the author had it, :class:`StartDiffered`); an earlier replayed command that
    failed and may have written the file (``failed_before``: it may have been the edit the patch
    expected; a :class:`FailedEdit` that could not have made it is no reason); the file is in the start
    tree and nothing replayed changed it — compared with tree ``start``, or (``start`` None) not among
    the ``touched`` paths — so the author's start tree differed (:class:`StartDiffered`)."""
    path = failing_path(ops, now)
    if path is None:
        return
    if any(REDACTED_MARK in line for op in ops if path in (op.path, op.move_to) for h in op.hunks for line in h.lines):
        raise NotRebuilt(f"a patch of {path} does not apply: redaction replaced text it needs")
    check_untracked(path, now, untracked, against)  # Codex saw the file untracked at the start: certain
    script = missing_script([f for f in failed_before if isinstance(f, FailedEdit)])
    if script is not None:  # nothing that failed before it could have made it: the author's tree had it
        raise StartDiffered(script, against, ran=True)
    blamed = [str(f) for f in failed_before if not isinstance(f, FailedEdit) or f.may_have_made(path)]
    if blamed:
        raise NotRebuilt(f"a patch of {path} does not apply after an earlier shell edit failed at replay "
                         f"({', '.join(blamed[:3])})")
    if start is not None and differed(path, now, start):
        raise StartDiffered(path, against)
    if start is None and touched is not None and path not in touched and _read(now, path) is not None:
        raise StartDiffered(path, against)


def missing_script(failed: Sequence[FailedEdit]) -> str | None:
    """The project script that a failed edit ran and the replayed tree lacks (:meth:`FailedEdit.missing_script`),
    when no edit that failed before it could have made it (an install step that failed and would
    have written the scripts, ``specify init``), else None."""
    for n, edit in enumerate(failed):
        script = edit.missing_script()
        if script is not None and not any(before.may_have_made(script) for before in failed[:n]):
            return script
    return None


def retried(actions: Sequence[Action]) -> frozenset[int]:
    """The positions in ``actions`` of commands the session saw fail and then ran again — the same command in the same
    directory — and saw succeed: Codex's sandbox refused the first (a ``git checkout -b`` that could
    not write ``.git``: "Operation not permitted") and the agent re-ran it with escalated permissions.
    A replay runs only the retry: here the first run would succeed, and the retry would then fail on
    what it made (a branch that already exists), taken for a shell edit that failed at replay."""
    skipped = set()
    for i, action in enumerate(actions):
        if action.kind == "command" and action.failed and any(
                later.kind == "command" and later.failed is False and later.command == action.command
                and later.workdir == action.workdir for later in actions[i + 1:]):
            skipped.add(i)
    return frozenset(skipped)


def patch_command(ops: Sequence[FileOp]) -> str:
    """The ``apply_patch`` heredoc that makes ``ops`` (the sandbox's own apply_patch)."""
    patch = render_patch(ops)
    mark = "LOGMINE_PATCH"
    while mark in patch:
        mark += "_"
    return f"apply_patch <<'{mark}'\n{patch.rstrip(chr(10))}\n{mark}"


def redo_earlier(prior: Sequence[Action], tree: Path, root: str, cwd: str, *, backend: str = "bwrap",
                 limits: Limits = Limits(), live: Path | None = None, untracked: frozenset[str] = frozenset(),
                 restore: Callable[[int, Path], object] | None = None) -> tuple[list[str], list[FailedEdit]]:
    """Redo the earlier tasks' ``prior`` work on ``tree`` (the repository root, at its start commit);
    returns notes and the editing commands that failed at replay. Raises
    :class:`StartDiffered` when a patch fails on a file nothing earlier touched (or on one missing that
    was ``untracked`` at the session's start), :class:`NotRebuilt` when one fails after earlier work
    touched it. ``restore(seq, tree)`` runs before each step: it writes the files the session's reads
    showed as they were before that step (:class:`logmine.workspace.shown.ShownFiles`)."""
    restore = restore or (lambda seq, where: None)
    if not any(a.kind == "command" for a in prior):
        touched: set[str] = set()
        for action in prior:
            restore(action.seq, tree)
            ops = _present(_rooted(action, cwd, root), tree)
            if not ops:
                continue
            try:
                apply_patch(ops, tree)
            except PatchError as exc:
                explain(ops, tree, None, touched=touched, untracked=untracked)
                raise NotRebuilt(f"an earlier task's patch does not apply (at seq {action.seq}): {exc}") from exc
            touched |= {p for op in ops for p in (op.path, op.move_to) if p}
        return [], []
    return _redo_in_sandbox(prior, tree, root, cwd, backend, limits, live, untracked, restore)


def _redo_in_sandbox(prior: Sequence[Action], tree: Path, root: str, cwd: str, backend: str, limits: Limits,
                     live: Path | None, untracked: frozenset[str],
                     restore: Callable[[int, Path], object]) -> tuple[list[str], list[FailedEdit]]:
    """Replay patches and editing commands in order in a sandbox over a copy of ``tree``, then make
    ``tree`` what the replay left. With bwrap the commands find the tools they name (``python``,
    ``perl``, a formatter) as the user's shell did (:func:`logmine.environment.host.host_environment`)."""
    notes: list[str] = []
    failed: list[FailedEdit] = []
    if backend != "bwrap":  # the rebuild happens on this host: a container backend replays with bwrap here
        reason = backend_unavailable("bwrap")
        if reason:
            raise NotRebuilt(f"earlier tasks edited files by shell; replaying them needs bwrap here ({reason})")
    with _replaying(prior, tree, root, limits, live) as (box, steps):
        for _, action in steps:
            restore(action.seq, Path(box.workspace))
            if action.kind == "patch":
                ops = _present(_rooted(action, cwd, root), Path(box.workspace))
                if not ops:
                    continue
                result = box.run(patch_command(ops), cwd=root)
                if result.exit_code != 0:
                    explain(ops, box.workspace, tree, untracked=untracked, failed_before=failed)
                    raise NotRebuilt(f"an earlier task's patch does not apply after replaying its shell edits "
                                     f"(at seq {action.seq}): {(result.error or result.output).strip()[:200]}")
            else:
                workdir = action.workdir if within(action.workdir, root) else cwd
                if action.failed is False:
                    _make_parents(action.command or "", workdir or cwd, root, Path(box.workspace))
                result = box.run(action.command, cwd=workdir)
                if action.failed_again(result.exit_code, result.error):
                    failed.append(FailedEdit(action.seq, _why(result), action.command or ""))
    # the replay's .git stays until the rebuilt tree gets its own snapshot commit, on the branch it left
    n = sum(a.kind == "command" for a in prior)
    notes.append(f"{n} earlier shell edit(s) replayed" + (f"; failed at replay: {', '.join(map(str, failed[:3]))}"
                                                          if failed else ""))
    return notes, failed


def _make_parents(command: str, workdir: str, root: str, tree: Path) -> None:
    """Make the missing directories of the files ``command`` writes by redirection or ``tee``, in ``tree``
    (the repository ``root``): it succeeded in the session, so they were there — empty, as git keeps no
    empty directory, and no start rebuilt from a commit has them (BMAD's ``_bmad-output/planning-artifacts/``)."""
    for target in written_files(command):
        full = os.path.normpath(os.path.join(workdir, target))
        if within(full, root) and full != root:
            parent = (tree / os.path.relpath(full, root)).parent
            if not parent.exists() and tree in parent.parents:
                parent.mkdir(parents=True, exist_ok=True)


#: What :func:`replay_patches` gives for one patch: the files it changed, root-relative, and each
#: one's text after it (None: deleted), or why it did not apply.
PatchWrites = list[tuple[str, str | None]] | str


def replay_patches(actions: Sequence[Action], tree: Path, root: str, cwd: str, *,
                   limits: Limits = Limits(wall_s=60.0)) -> dict[int, PatchWrites]:
    """Replay ``actions`` in order (a refused command re-run counts once, :func:`retried`) in a bwrap
    sandbox over a copy of ``tree`` mounted at ``root``, commands included, and say what each patch
    wrote, by its position: a patch whose file a command made (a project script copying a template)
    applies only after that command. ``tree`` becomes what the replay left."""
    writes: dict[int, PatchWrites] = {}
    with _replaying(actions, tree, root, limits, None) as (box, steps):
        for i, action in steps:
            if action.kind != "patch":
                box.run(action.command or "", cwd=action.workdir if within(action.workdir, root) else cwd)
                continue
            try:
                ops = without_agent_files(rooted(action.ops, action.workdir or cwd, root), Path(box.workspace))
            except PatchError:
                continue  # outside the repository: never replayed
            if not ops:  # an agent's own files the tree lacks, only
                writes[i] = []
                continue
            result = box.run(patch_command(ops), cwd=root)
            if result.exit_code != 0:
                writes[i] = (result.error or result.output).strip()[:300]
                continue
            written = {p: None for op in ops if op.op == "delete" or op.move_to for p in [op.path]}
            made = {p: _read(Path(box.workspace), p) for op in ops if op.op != "delete" for p in [op.move_to or op.path]}
            unread = [p for p, text in made.items() if text is None]
            writes[i] = f"{unread[0]} could not be read after the patch" if unread else list((written | made).items())
    return writes


@contextmanager
def _replaying(actions: Sequence[Action], tree: Path, root: str, limits: Limits,
               live: Path | None) -> Iterator[tuple[Sandbox, list[tuple[int, Action]]]]:
    """A bwrap sandbox over a copy of ``tree`` at ``root`` whose commands find the tools they name
    (``python``, ``perl``, a formatter) as the user's shell did
    (:func:`logmine.environment.host.host_environment`), with the positions and actions to replay (a
    refused command re-run counts once, :func:`retried`); ``tree`` becomes what the replay left,
    unless the replay raised."""
    host = host_environment(detect(tree, [a.command for a in actions if a.command]), live, root)
    skipped = retried(actions)
    with open_sandbox(tree, mount_at=root, backend="bwrap", limits=limits, binds=host.binds, env=host.env) as box:
        yield box, [(i, a) for i, a in enumerate(actions) if i not in skipped]
        shutil.rmtree(tree)
        _copy_back(Path(box.workspace), tree)


_MISSING = re.compile(r"(?:command not found|No such file or directory|not found)\s*$", re.M)


def _why(result: CommandResult) -> str:
    """How a replayed command failed: the sandbox's error, else its exit status, with the line that
    names what was missing when it was a command or file (``exit 127: ./ship/x.sh: No such file``):
    a script the session ran from a folder the repository does not hold reads as such."""
    if result.error:
        return result.error
    missing = _MISSING.search(result.output) if result.exit_code in (126, 127) else None
    if missing is None:
        return f"exit {result.exit_code}"
    line = result.output[result.output.rfind("\n", 0, missing.start()) + 1:missing.end()].strip()
    return f"exit {result.exit_code}: {line[-160:]}"


def _rooted(action: Action, cwd: str, root: str) -> tuple[FileOp, ...]:
    try:
        return rooted(action.ops, action.workdir or cwd, root)
    except PatchError as exc:
        raise NotRebuilt(str(exc)) from exc


def agent_home(path: str) -> bool:
    """An agent's or the OS's own file in the work tree (``.codex/``, ``.claude/``, ``.DS_Store``):
    never the project's."""
    first = path.split("/", 1)[0]
    return first in (".codex", ".claude", ".agent", ".cursor", ".vscode", ".idea") or path.endswith(".DS_Store")


def without_agent_files(ops: tuple[FileOp, ...], tree: Path) -> tuple[FileOp, ...]:
    """``ops`` without the changes of an agent's own files that ``tree`` lacks (a patch of
    ``.codex/prompts/speckit.tasks.md``, a file the author's repository ignored): never the project's,
    they fail a replay that has nothing else against it."""
    return tuple(op for op in ops if op.op == "add" or not agent_home(op.path) or _exists(tree / op.path))


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _present(ops: tuple[FileOp, ...], tree: Path) -> tuple[FileOp, ...]:
    """``ops`` without the deletions of files ``tree`` lacks: a file an earlier step made that the
    replay could not (a script the repository does not hold), which the patch removed (often to add
    it anew). What the tree holds after the patch is the author's either way. Nor the changes of an
    agent's own files it lacks (:func:`without_agent_files`)."""
    return tuple(op for op in without_agent_files(ops, tree) if op.op != "delete" or _exists(tree / op.path))


def _copy_back(source: Path, dest: Path) -> None:
    """Copy what a replay left, as a sandbox copies a workspace (links kept as links, only regular
    files), leaving out the links a command made to an absolute path or out of the tree."""
    top = source.resolve()

    def escaping(folder: str, names: list[str]) -> set[str]:
        links = [(name, os.readlink(os.path.join(folder, name))) for name in names
                 if os.path.islink(os.path.join(folder, name))]
        return {name for name, link in links
                if os.path.isabs(link) or not (Path(folder) / link).resolve().is_relative_to(top)}

    shutil.copytree(source, dest, symlinks=True, ignore=escaping, copy_function=copy_regular)


def _read(tree: Path, rel: str) -> str | None:
    """The text of ``tree/rel`` (through links that stay inside ``tree``), else None."""
    path = (tree / rel).resolve()
    try:
        return path.read_text() if path.is_relative_to(tree.resolve()) and path.is_file() else None
    except (OSError, UnicodeDecodeError):
        return None
