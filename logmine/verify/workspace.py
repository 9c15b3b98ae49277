"""Rebuild a task's starting workspace from its ``start_state`` recipe.

The repository is found at the session's recorded cwd (or where ``--repo-map OLD=NEW`` says it
moved), its recorded commit (or the turn's ghost-snapshot commit) is exported with ``git archive``,
and the successful patches of earlier tasks of the session are applied on top with the same patch
module that parsed them. The result is a fresh git repository (one commit), so that replayed
``git status``/``git diff`` commands work. A mapped directory that is not a git repository is taken
as it is, which the status reason says.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from logmine.errors import LogmineError
from logmine.patch import FileOp, PatchError, apply_patch
from logmine.segment.records import StartState

_GIT_ENV = {"GIT_AUTHOR_NAME": "logmine", "GIT_AUTHOR_EMAIL": "logmine@localhost",
            "GIT_COMMITTER_NAME": "logmine", "GIT_COMMITTER_EMAIL": "logmine@localhost"}


class NotRebuilt(LogmineError):
    """The start state cannot be rebuilt; the message is the reason."""


@dataclass(frozen=True, slots=True)
class RebuiltTree:
    """A task's start state, rebuilt on the host."""

    path: Path  # host directory holding the rebuilt work tree of the repository root
    root: str  # the repository root's original absolute path (where the sandbox mounts it)
    cwd: str  # the session's original cwd (inside root)
    note: str | None = None  # a caveat about how it was rebuilt


def within(path: str | None, root: str) -> bool:
    """Is ``path`` the directory ``root`` or below it?"""
    return bool(path) and (path == root or path.startswith(root.rstrip("/") + "/"))


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


def map_path(path: str, repo_map: dict[str, str]) -> str:
    """Apply the longest matching ``OLD=NEW`` prefix of ``repo_map`` to ``path``."""
    for old in sorted(repo_map, key=len, reverse=True):
        if path == old or path.startswith(old.rstrip("/") + "/"):
            return repo_map[old] + path[len(old.rstrip("/")):]
    return path


def rebuild(recipe: StartState, prior_ops: tuple[tuple[FileOp, ...], ...], repo_map: dict[str, str],
            dest: Path) -> RebuiltTree:
    """Write the task's start state into ``dest`` (created); raises :class:`NotRebuilt`."""
    cwd, commit = recipe.repo.cwd, recipe.commit
    if not cwd:
        raise NotRebuilt("no cwd recorded for the session")
    local = Path(map_path(cwd, repo_map))
    if not local.is_dir():
        raise NotRebuilt(f"repository not found at {local} (map it with --repo-map {cwd}=PATH)")
    dest.mkdir(parents=True, exist_ok=True)
    top = _git(local, "rev-parse", "--show-toplevel")
    note = None
    if top is None:
        shutil.copytree(local, dest, symlinks=True, dirs_exist_ok=True)
        root, note = cwd, f"{local} is not a git repository: its files were taken as they are"
    else:
        rel = os.path.relpath(local.resolve(), Path(top).resolve())
        root = cwd if rel == "." else str(PurePosixPath(cwd).parents[len(PurePosixPath(rel).parts) - 1])
        if not commit:
            raise NotRebuilt("no commit recorded for the session")
        if _git(Path(top), "cat-file", "-e", f"{commit}^{{commit}}") is None:
            raise NotRebuilt(f"commit {commit[:12]} is not in the repository at {top}")
        _export(Path(top), commit, dest)
    workdir = dest / os.path.relpath(cwd, root)
    for ops in prior_ops:
        try:
            apply_patch(ops, workdir)
        except PatchError as exc:
            raise NotRebuilt(f"an earlier task's patch does not apply: {exc}") from exc
    _snapshot(dest)
    return RebuiltTree(dest, root, cwd, note)


def _git(repo: Path, *args: str) -> str | None:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def _export(repo: Path, commit: str, dest: Path) -> None:
    proc = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", commit], stdout=subprocess.PIPE)
    with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
        archive.extractall(dest, filter="data")
    if proc.wait() != 0:
        raise NotRebuilt(f"git archive of {commit[:12]} failed")


def _snapshot(dest: Path) -> None:
    """Make the rebuilt tree a one-commit git repository (replayed git commands expect one)."""
    if (dest / ".git").exists():
        return
    env = {**os.environ, **_GIT_ENV}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "logmine start state", "--allow-empty"]):
        subprocess.run(["git", "-C", str(dest), *args], env=env, capture_output=True, check=True)
