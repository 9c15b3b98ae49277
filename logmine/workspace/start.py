"""Rebuild a task's starting workspace from its ``start_state`` recipe.

The repository is found at the session's recorded cwd (or where ``--repo-map OLD=NEW`` says it
moved), its recorded commit (or the turn's ghost-snapshot commit) is exported with ``git archive``,
and the earlier tasks' work is redone on top: their successful patches with the same patch module
that parsed them, and their file-editing shell commands in a sandbox (:mod:`logmine.workspace.edits`).
Links to absolute paths are left out of the exported tree, and a clone missing objects is a reason,
not a crash. The result is a fresh git repository (one commit), so that replayed ``git status``/
``git diff`` commands work. A mapped directory that is not a git repository is taken as it is, which
the status reason says.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from logmine.redact import PLACEHOLDERS, Mask, Redactor
from logmine.redact.files import TreeTooLarge, copy_tree
from logmine.sandbox import Limits
from logmine.segment.powershell import is_windows, posix_path
from logmine.segment.records import Action, Chain, Listed, Listing, Repo, Shown, StartState, TaskInput
from logmine.workspace.archive import epoch, export_commit, git
from logmine.workspace.clones import find_clone
from logmine.workspace.edits import (
    FailedEdit,
    NotRebuilt,
    StartDiffered,
    agent_home,
    redo_earlier,
    within,
)
from logmine.workspace.empty import check_began, first_commit, started_empty
from logmine.workspace.fit import fit, misfit, own_ops, patch_calls, undecided
from logmine.workspace.later import LaterCommit, start_later
from logmine.workspace.listed import check_listed, touched_by
from logmine.workspace.shown import ShownFiles
from logmine.workspace.tooling import restore_tooling, tooling_used
from logmine.workspace.untracked import carried_note, carry_untracked

__all__ = ["NotRebuilt", "RebuiltTree", "map_path", "read_inside", "rebuild", "rebuild_task", "within"]

_GIT_ENV = {"GIT_AUTHOR_NAME": "logmine", "GIT_AUTHOR_EMAIL": "logmine@localhost",
            "GIT_COMMITTER_NAME": "logmine", "GIT_COMMITTER_EMAIL": "logmine@localhost"}


PLAIN_DIR_MAX_BYTES = 256 << 20  # a working directory that is not a repository: copied up to this


@dataclass(frozen=True, slots=True)
class RebuiltTree:
    """A task's start state, rebuilt on the host."""

    path: Path  # host directory holding the rebuilt work tree of the repository root
    root: str  # the repository root's original absolute path (where the sandbox mounts it)
    cwd: str  # the session's original cwd (inside root)
    note: str | None = None  # a caveat about how it was rebuilt
    live: Path | None = None  # the live repository on this host (its ignored dependency directories)
    method: str | None = None  # ghost_snapshot | git_commit+patches | dated_commit | later_commit | working tree
    failed_edits: tuple[FailedEdit, ...] = ()  # earlier shell edits that failed at replay
    carried: tuple[str, ...] = ()  # files untracked at the session's start, made from earlier sessions' patches
    shown: tuple[str, ...] = ()  # files written as the session's reads showed them (the commit differed)


def read_inside(base: Path, rel: str) -> str | None:
    """The text of the regular file ``base/rel``, or None when it is missing, not UTF-8, a link, or
    lies outside ``base`` once links in its directories are followed (a replayed command may leave a
    link to a host file)."""
    if (base / rel).is_symlink():
        return None
    path = (base / rel).resolve()
    if not path.is_relative_to(base.resolve()) or not path.is_file():
        return None
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


#: A package manager adding a dependency to the project's manifest (``npm install -D jsdom``, ``pnpm
#: add zod``, ``uv add httpx``): replayed without a network it fails, and the start's manifests lack
#: what it added. (``pip install x`` changes no manifest.)
_INSTALLS = re.compile(r"\b(?:(?:npm|pnpm|yarn|bun)\s+(?:install|i|add)\s+(?:(?!-g\b|--global\b)-\S+\s+)*[@\w]|"
                       r"(?:uv|poetry)\s+add\s)")


def map_path(path: str, repo_map: dict[str, str]) -> str:
    """Apply the longest matching ``OLD=NEW`` prefix of ``repo_map`` to ``path``. A Windows ``OLD``
    (``D:\\repos\\proj``) maps the session's cwd as it is replayed (``/d/repos/proj``)."""
    posix = {posix_path(old) if is_windows(old) else old: new for old, new in repo_map.items()}
    for old in sorted(posix, key=len, reverse=True):
        if path == old or path.startswith(old.rstrip("/") + "/"):
            return posix[old] + path[len(old.rstrip("/")):]
    return path


def rebuild(recipe: StartState, prior: tuple[Action, ...], repo_map: dict[str, str], dest: Path,
            repo_search: tuple[Path, ...] = (), plain_dirs: bool = False, *, backend: str = "bwrap",
            limits: Limits = Limits(), own: tuple[Action, ...] = (), started: datetime | None = None,
            mask: Mask = PLACEHOLDERS, chain: Chain | None = None, carried: tuple[Action, ...] = (),
            shown: tuple[Shown, ...] = (), listed: tuple[Listed, ...] = (),
            began: tuple[Listing, ...] = ()) -> RebuiltTree:
    """Write the task's start state into ``dest`` (created); raises :class:`NotRebuilt`.

    ``chain``: the edits of earlier sessions that recorded the same commit in the same cwd
    (:mod:`logmine.segment.chain`). When the start rebuilt without them is shown not to be the
    author's — an earlier patch does not apply, or the task's first patches fail on it — the start is
    rebuilt again with them redone first, from the branch the oldest of those sessions recorded (its
    commands made the branch this session recorded: spec-kit's ``git checkout -b 001-…``), and taken
    when the task's first patches apply there (the author had not committed between the sessions);
    else the first outcome stands. When the task ran a project script (a command that may edit files)
    before its first patch, its first patches decide nothing: the tree on which more of its patches
    apply is taken, the commit alone on a tie (:func:`~logmine.workspace.fit.undecided`). ``carried``:
    earlier sessions' patches of the files untracked at the session's start, which the commit lacks
    (:mod:`logmine.workspace.untracked`). ``shown``: files as the session's reads showed them
    (:mod:`logmine.workspace.shown`; not with the chain, whose edits came before the session began).
    ``listed``: the tracked files the session's ``git status`` showed changed as it began; a start from
    the session's commit must hold each as the author had it (:mod:`logmine.workspace.listed`).
    ``began``: the directories the session's ``ls`` showed as it began, the evidence for a start from
    nothing before the repository's first commit (:mod:`logmine.workspace.empty`); a chain of sessions
    that recorded no commit serves only such a start. :func:`_rebuild` does the rest.
    """
    def build(actions: tuple[Action, ...], where: Path, branch: str | None, chained: bool = False) -> RebuiltTree:
        return _rebuild(recipe, actions, where, repo_map=repo_map, repo_search=repo_search, plain_dirs=plain_dirs,
                        backend=backend, limits=limits, own=own, started=started, mask=mask, branch=branch,
                        carried=carried, shown=() if chained else shown, listed=listed, began=began,
                        chained=chain.edits if chain is not None and chained else (),
                        empty_only=chain is not None and chained and chain.commitless)

    if chain is None:
        return build(prior, dest, recipe.repo.git_branch)
    first: RebuiltTree | NotRebuilt
    try:
        tree = build(prior, dest, recipe.repo.git_branch)
        if tree.method == "ghost_snapshot":
            return tree
        evidence = misfit(own, tree)
        if evidence is None and not undecided(own, tree):
            return tree
        first = tree
    except NotRebuilt as exc:
        if not (isinstance(exc, StartDiffered) or "does not apply" in str(exc)):
            raise
        first, evidence = exc, str(exc)
    alt = dest.with_name(dest.name + "-chained")
    try:
        second: RebuiltTree | None = build((*chain.edits, *prior), alt, chain.branch or recipe.repo.git_branch, True)
    except NotRebuilt:
        second = None
    if second is not None and isinstance(first, RebuiltTree) and evidence is None:  # undecided: the better fit
        before, after = fit(own, first), fit(own, second)
        evidence = f"{before} of the task's {len(patch_calls(own, first))} patches apply to it, {after} with them"
        second = second if after > before else None
    if second is None or misfit(own, second) is not None:
        shutil.rmtree(alt, ignore_errors=True)
        if isinstance(first, NotRebuilt):
            raise first
        return first
    shutil.rmtree(dest, ignore_errors=True)
    alt.rename(dest)
    where = "in this directory, which recorded no commit either" if chain.commitless else \
        "in this directory at that commit"
    note = (f"started from the session's {'empty directory' if chain.commitless else 'commit'} plus the edits of "
            f"{len(chain.sessions)} earlier session(s) {where} ({', '.join(s[:8] for s in chain.sessions[-3:])}): "
            f"without them, {str(evidence)[:160]}")
    return dataclasses.replace(second, path=dest, note="; ".join(n for n in (note, second.note) if n))


def _rebuild(recipe: StartState, prior: tuple[Action, ...], dest: Path, *, repo_map: dict[str, str],
             repo_search: tuple[Path, ...], plain_dirs: bool, backend: str, limits: Limits,
             own: tuple[Action, ...], started: datetime | None, mask: Mask, branch: str | None,
             carried: tuple[Action, ...] = (), shown: tuple[Shown, ...] = (), listed: tuple[Listed, ...] = (),
             began: tuple[Listing, ...] = (), chained: tuple[Action, ...] = (), empty_only: bool = False
             ) -> RebuiltTree:
    """The start state from ``prior``, the earlier work redone on the start commit (checked out on
    ``branch`` for that: the branch the author was on where ``prior`` begins).

    The repository is the recorded cwd (through ``repo_map``), else the clone under ``repo_search``
    holding the recorded commit or remote URL. The turn's ghost-snapshot commit is the start state as
    it is; when the clone lacks it, the session header's commit plus the earlier tasks' work (``prior``:
    patches, and shell edits redone in a ``backend`` sandbox: :mod:`logmine.workspace.edits`).
    A directory that is no git repository is copied only with ``plain_dirs`` (:func:`_copy_plain`).

    ``listed``: what the session's ``git status`` showed changed as it began, which the start must hold
    as the author had it, made by ``chained`` (the chain's edits) or shown (:mod:`.listed`); ``began``:
    what its ``ls`` showed, which a start from nothing must hold (:mod:`.empty`); tooling the commands
    use and the commit lacks comes from the nearest commit holding it (:mod:`.tooling`).

    When the earlier work does not replay on the header commit (an earlier patch fails: the author's
    tree differed, or a shell edit failed here), ``listed`` shows the start differed, or one of the
    task's ``own`` patches fails on a file nothing replayed changed, the author may have committed their
    work during the session: the newest commit of the clone made after the header commit and before the
    task ``started`` on which every one of the task's own patches applies is the start state instead
    (``later_commit``, :func:`logmine.workspace.later.later_commit`).

    ``mask``: the store's; with a key, text files are redacted with it as they are extracted (one
    pseudonym per secret in code and log). """
    cwd, found = _locate(recipe.repo, repo_map, repo_search, recipe.ghost_commit)
    local = Path(found)
    dest.mkdir(parents=True, exist_ok=True)
    top = git(local, "rev-parse", "--show-toplevel")
    notes = [] if found == map_path(cwd, repo_map) else [f"repository found at {found}"]
    method = "working tree"
    failed: list[FailedEdit] = []
    made: tuple[str, ...] = ()
    if top is None:
        if not plain_dirs:
            raise NotRebuilt(f"{local} is not a git repository (a home or scratch directory is copied only "
                             "with --plain-dirs, credential files left out)")
        root, live = cwd, local
        notes.append(_copy_plain(local, dest, mask))
    else:
        live = Path(top)
        rel = os.path.relpath(local.resolve(), live.resolve())
        root = cwd if rel == "." else str(PurePosixPath(cwd).parents[len(PurePosixPath(rel).parts) - 1])
        commit, method, made, exported = _from_commit(recipe, live, dest, root, cwd, len(prior), mask, carried,
                                                      tooling_used((*prior, *own), root, began), started, began,
                                                      empty_only)
        notes += exported
    showing = ShownFiles(shown if method != "ghost_snapshot" else (), root, mask, live)
    showing.write(-1, dest)
    unreplayed: NotRebuilt | None = None  # why the earlier work did not replay (a dirty start, or a gap)
    if method != "ghost_snapshot" and prior:  # a snapshot holds the earlier work already
        try:
            redone, failed = _redo(prior, dest, recipe, root, cwd, live, backend=backend, limits=limits,
                                   branch=branch, showing=showing)
            notes += redone
        except NotRebuilt as exc:
            unreplayed = exc
    last = max((a.seq for a in prior), default=-1)
    showing.write_after(last, dest)
    if method == "empty_start":
        check_began(began, root, dest, live)
    if method in ("git_commit+patches", "dated_commit"):
        unreplayed = unreplayed or _as_listed(listed, root, {*showing.paths, *made, *touched_by(chained, root)}, notes)
        later = _later(live, commit, started, prior, own, cwd, root, dest, unreplayed, failed, mask, showing)
        if later is not None:
            method, made = "later_commit", ()
            showing.forget()
            notes, failed, unreplayed = _redo_since(later, prior, dest, recipe, root, cwd, live, backend=backend,
                                                    limits=limits, branch=branch, showing=showing)
            showing.write_after(last, dest)
    if unreplayed is not None:
        raise unreplayed
    notes += [*showing.notes(), *_missing_untracked(recipe, dest)]
    _snapshot(dest, recipe.repo.git_branch)
    return RebuiltTree(dest, root, cwd, "; ".join(notes) or None, live, method, tuple(failed), made, showing.paths)


def _as_listed(listed: tuple[Listed, ...], root: str, explained: set[str], notes: list[str]) -> StartDiffered | None:
    """Why the start is not the author's by what the session's ``git status`` showed changed as it
    began (:func:`logmine.workspace.listed.check_listed`), else None, its notes added to ``notes``."""
    try:
        notes += check_listed(listed, root, explained)
    except StartDiffered as exc:
        return exc
    return None


def _later(live: Path, commit: str, started: datetime | None, prior: tuple[Action, ...], own: tuple[Action, ...],
           cwd: str, root: str, dest: Path, unreplayed: NotRebuilt | None, failed: list[FailedEdit], mask: Mask,
           showing: ShownFiles) -> tuple[LaterCommit, list[str]] | None:
    """:func:`logmine.workspace.later.start_later` on the evidence that the start from ``commit`` is not
    the author's (``unreplayed``, or an earlier install that could not reach its registry: the author's
    manifests held what it added); the later commit exported into ``dest`` with the tooling the
    commands of the earlier work (``prior``) and of the task (``own``) use."""
    installs = [f for f in failed if _INSTALLS.search(f.command)] if unreplayed is None else []
    evidence = unreplayed or (NotRebuilt(f"an earlier install did not run offline: {installs[0]}") if installs else None)
    later = start_later(live, commit, started, own_ops(own, cwd, root), dest, evidence, failed, mask, showing.paths)
    if later is not None:
        later[1].extend(restore_tooling(live, later[0].sha, dest, tooling_used((*prior, *own), root), started, mask))
    return later


def _redo(actions: tuple[Action, ...], dest: Path, recipe: StartState, root: str, cwd: str, live: Path, *,
          backend: str, limits: Limits, branch: str | None, showing: ShownFiles) -> tuple[list[str], list[FailedEdit]]:
    """Redo ``actions`` (earlier work) on the tree in ``dest``, the files the session showed written
    before each step (:func:`logmine.workspace.edits.redo_earlier`; :class:`NotRebuilt` when it does
    not replay); returns (notes, the edits that failed at replay)."""
    if any(a.kind == "command" for a in actions):
        _snapshot(dest, branch)  # replayed git commands (git mv, git checkout) expect one
    return redo_earlier(actions, dest, root, cwd, backend=backend, limits=limits, live=live,
                        untracked=frozenset(recipe.untracked), restore=showing.write)


def _redo_since(found: tuple[LaterCommit, list[str]], prior: tuple[Action, ...], dest: Path, recipe: StartState,
                root: str, cwd: str, live: Path, *, backend: str, limits: Limits, branch: str | None,
                showing: ShownFiles) -> tuple[list[str], list[FailedEdit], NotRebuilt | None]:
    """Redo on the later commit the earlier work the session did after it was made (the commit holds
    what came before); returns (notes, the edits that failed at replay, why the work did not replay).
    Work that does not replay there leaves the start unknown: the author's tree held it."""
    later, notes = found
    since = tuple(a for a in prior if a.ts is not None and a.ts > later.when)
    if not since:
        return notes, [], None
    try:
        redone, failed = _redo(since, dest, recipe, root, cwd, live, backend=backend, limits=limits, branch=branch,
                               showing=showing)
    except NotRebuilt as exc:
        return notes, [], NotRebuilt(f"{exc} (on later commit {later.sha[:12]}, redoing the earlier work done after "
                                     "it was made)")
    return [*notes, f"{len(since)} earlier edit(s) made after it redone", *redone], failed, None


def _from_commit(recipe: StartState, live: Path, dest: Path, root: str, cwd: str, n_prior: int, mask: Mask,
                 carried: tuple[Action, ...], tooling: tuple[str, ...] = (), started: datetime | None = None,
                 began: tuple[Listing, ...] = (), empty_only: bool = False) -> tuple[str, str, tuple[str, ...], list[str]]:
    """Export the start commit (:func:`_start_commit`) into ``dest`` with the untracked files
    ``carried`` makes and the agent's ``tooling`` the commit lacks (:mod:`.tooling`); returns (commit,
    method, files carried, notes). Before the repository's first commit, nothing is exported: the
    session's listing ``began`` must show what its directory held (:mod:`.empty`); ``empty_only``: no
    other start is wanted (the earlier sessions' edits to redo recorded no commit)."""
    notes = []
    commit, method = _start_commit(recipe, live, started)
    if empty_only and method != "empty_start":
        raise NotRebuilt("the earlier sessions recorded no commit: their edits make only a start from nothing")
    if method == "empty_start":
        notes.append(started_empty(began, root, commit, recipe.session_started, live))
        return commit, method, (), [*notes, *restore_tooling(live, commit, dest, tooling, started, mask)]
    if method == "dated_commit":
        notes.append(f"no commit recorded: started from {commit[:12]}, the newest commit made before the "
                     f"session began ({recipe.session_started})")
    if method == "git_commit+patches" and recipe.ghost_commit:
        notes.append(f"ghost snapshot {recipe.ghost_commit[:12]} is not in the clone: "
                     f"header commit {commit[:12]} plus {n_prior} earlier edit(s)")
    notes += export_commit(live, commit, dest, mask)
    made: tuple[str, ...] = ()
    if method != "ghost_snapshot" and carried:  # a snapshot holds the untracked files already
        made = _carry(recipe, carried, dest, root, cwd)
        notes += [carried_note(made)] if made else []
    if method != "ghost_snapshot":
        notes += restore_tooling(live, commit, dest, tooling, started, mask)
    return commit, method, made, notes


def rebuild_task(item: TaskInput, repo_map: dict[str, str], dest: Path, repo_search: tuple[Path, ...] = (),
                 plain_dirs: bool = False, *, backend: str = "bwrap", limits: Limits = Limits(),
                 mask: Mask = PLACEHOLDERS) -> RebuiltTree:
    """:func:`rebuild` for a loaded task: its recipe, earlier work, own actions, start time, and what
    the log shows of its start beyond the commit (earlier sessions' edits, files its reads showed)."""
    return rebuild(item.task.start_state, item.prior, repo_map, dest, repo_search, plain_dirs, backend=backend,
                   limits=limits, own=item.actions, started=item.task.started_at, mask=mask, chain=item.chain,
                   carried=item.carried, shown=item.shown, listed=item.listed, began=item.began)


def _carry(recipe: StartState, carried: tuple[Action, ...], dest: Path, root: str, cwd: str) -> tuple[str, ...]:
    """The files untracked at the session's start that ``carried`` made in ``dest`` (:mod:`.untracked`)."""
    return tuple(carry_untracked(carried, tuple(p for p in recipe.untracked if not agent_home(p)), dest, root, cwd))


def _missing_untracked(recipe: StartState, dest: Path) -> list[str]:
    """A note naming the files untracked at the session's start that the rebuilt tree lacks."""
    missing = [p for p in recipe.untracked if not agent_home(p) and not (dest / p).exists()]
    return [f"{len(missing)} file(s) untracked at the session's start are not in the rebuilt tree: "
            + ", ".join(missing[:3])] if missing else []


def _copy_plain(local: Path, dest: Path, mask: Mask) -> str:
    """Copy a working directory that is not a repository into ``dest``, redacted, credential files left out."""
    try:
        left_out = copy_tree(local, dest, Redactor(mask=mask), max_bytes=PLAIN_DIR_MAX_BYTES)
    except TreeTooLarge as exc:
        raise NotRebuilt(f"{local} is not a git repository and holds more than "
                         f"{PLAIN_DIR_MAX_BYTES >> 20} MiB") from exc
    return (f"{local} is not a git repository: its files were copied (redacted; "
            f"{len(left_out)} credential file(s) left out)")


def _start_commit(recipe: StartState, live: Path, started: datetime | None = None) -> tuple[str, str]:
    """The commit to export and the recipe used: the ghost snapshot, else the header's commit, else
    (none recorded) the newest commit made before the session began (:func:`_dated_commit`)."""
    if recipe.ghost_commit and _has_commit(live, recipe.ghost_commit):
        return recipe.ghost_commit, "ghost_snapshot"
    commit = recipe.repo.git_commit
    if not commit:
        if recipe.ghost_commit:
            raise NotRebuilt(f"ghost snapshot {recipe.ghost_commit[:12]} is not in the repository at {live} "
                             "and the session recorded no commit to fall back to")
        dated = _dated_commit(live, recipe.session_started, recipe.repo.git_branch)
        began = recipe.session_started
        first = first_commit(live) if dated is None and began else None
        if first is not None and began and first[1].timestamp() > epoch(datetime.fromisoformat(began)):
            return first[0], "empty_start"
        if dated is None:
            raise NotRebuilt("no commit recorded for the session" + (
                f", and the repository at {live} has none made before it began ({recipe.session_started})"
                if recipe.session_started else ""))
        return dated, "dated_commit"
    if not _has_commit(live, commit):
        what = f"ghost snapshot {recipe.ghost_commit[:12]} nor commit" if recipe.ghost_commit else "commit"
        raise NotRebuilt(f"{'neither ' if recipe.ghost_commit else ''}{what} {commit[:12]} is "
                         f"{'' if recipe.ghost_commit else 'not '}in the repository "
                         f"at {live} (fetch it, or point --repo-search at a clone that has it{_rewritten(live, started)})")
    return commit, "git_commit+patches"


def _rewritten(live: Path, started: datetime | None) -> str:
    """A note when the clone's whole history is newer than the task: rewritten, or made anew."""
    first = first_commit(live) if started is not None else None
    if first is None or started is None or first[1].timestamp() <= epoch(started):
        return ""
    return f"; the clone's oldest commit ({first[1]:%Y-%m-%d}) is newer than the session: its history was rewritten"


def _dated_commit(live: Path, started: str | None, branch: str | None) -> str | None:
    """The newest commit of ``live`` committed no later than ``started`` (an ISO time): on the
    recorded ``branch`` when the clone has it (local, else ``origin/``), else on any ref. The tasks'
    own patches then check it as they check a recorded commit: one that fails on a file nothing
    replayed changed makes the task a dirty start (or finds a later commit), never validated."""
    if not started:
        return None
    until = epoch(datetime.fromisoformat(started))
    refs = next(([ref] for ref in (branch, f"origin/{branch}") if ref and git(live, "rev-parse", "--verify", "-q",
                                                                                  f"{ref}^{{commit}}")), ["--all"])
    listing = git(live, "log", *refs, "--format=%ct %H", f"--until={until}")
    dated = sorted((line.split() for line in (listing or "").splitlines()), key=lambda p: int(p[0]))
    return dated[-1][1] if dated else None


def _has_commit(repo: Path, commit: str) -> bool:
    return git(repo, "cat-file", "-e", f"{commit}^{{commit}}") is not None


def _locate(repo: Repo, repo_map: dict[str, str], repo_search: tuple[Path, ...],
            ghost: str | None) -> tuple[str, str]:
    """(the session's cwd as recorded or stood in for, the host directory holding it)."""
    if repo.cwd and not repo.cwd.startswith("/"):  # a Windows one is made POSIX on loading (segment.powershell)
        raise NotRebuilt(f"the session ran in {repo.cwd}, not a POSIX path: its commands do not replay here")
    if repo.cwd:
        local = map_path(repo.cwd, repo_map)
        if Path(local).is_dir():
            return repo.cwd, local
    found = find_clone(repo, repo_search, ghost) if repo_search else None
    if found is not None:
        return repo.cwd or str(found), str(_below(found, repo.cwd))
    if not repo.cwd:
        raise NotRebuilt("no cwd recorded for the session"
                         + ("" if repo_search else " (find its clone with --repo-search DIR)"))
    raise NotRebuilt(f"repository not found at {map_path(repo.cwd, repo_map)} "
                     f"(map it with --repo-map {repo.cwd}=PATH, or search with --repo-search DIR)")


def _below(top: Path, cwd: str | None) -> Path:
    """The directory of the clone ``top`` that stands for the recorded ``cwd`` (its part below a
    directory named like the clone), else ``top``."""
    parts = PurePosixPath(cwd).parts if cwd else ()
    if top.name in parts:
        i = len(parts) - 1 - parts[::-1].index(top.name)
        candidate = top.joinpath(*parts[i + 1:])
        if candidate.is_dir():
            return candidate
    return top


def _snapshot(dest: Path, branch: str | None = None) -> None:
    """Make the rebuilt tree a one-commit git repository (replayed git commands expect one) on the
    branch the author was on: the one a replay left checked out, else ``branch`` (the session's
    recorded one), else git's default. Tools read it: spec-kit's scripts (``.specify/``) refuse to
    run off a feature branch (``001-…``) and find the feature's directory by its name."""
    if (dest / ".git").exists():
        branch = git(dest, "symbolic-ref", "--short", "-q", "HEAD") or branch
        shutil.rmtree(dest / ".git")
    env = {**os.environ, **_GIT_ENV}
    if not branch or git(dest, "init", "-q", "-b", branch) is None:  # a name git refuses: its default
        subprocess.run(["git", "-C", str(dest), "init", "-q"], env=env, capture_output=True, check=True)
    for args in (["add", "-A"], ["commit", "-qm", "logmine start state", "--allow-empty"]):
        subprocess.run(["git", "-C", str(dest), *args], env=env, capture_output=True, check=True)
