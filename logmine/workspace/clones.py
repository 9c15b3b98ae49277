"""Find the clone of a session's repository under search roots (``--repo-search DIR``).

A session whose cwd was not recorded (Codex 0.20-era files hold only the commit), or whose repository
moved, is matched to a git repository below one of the roots that holds the recorded commit (the
ghost snapshot or the header's commit), else whose remote URL is the recorded one. Roots are
scanned to a small depth once per process; hidden directories and dependency directories are not
entered.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

from logmine.segment.records import Repo

MAX_DEPTH = 4
_SKIP = {"node_modules", "vendor", "target", "dist", "build", "__pycache__", "venv", "site-packages"}


def find_clone(repo: Repo, roots: tuple[Path, ...], ghost_commit: str | None = None) -> Path | None:
    """The clone under ``roots`` that holds the session's commit, else its remote URL; None when none does."""
    clones = [c for root in roots for c in _clones(str(Path(root).expanduser().resolve()))]
    for commit in (ghost_commit, repo.git_commit):
        if commit:
            for clone in clones:
                if _has(clone, commit):
                    return Path(clone)
    wanted = normalise_url(repo.git_repo_url) if repo.git_repo_url else None
    if wanted:
        for clone in clones:
            if wanted in _remote_urls(clone):
                return Path(clone)
    return None


def normalise_url(url: str) -> str:
    """``git@github.com:o/r.git``, ``https://github.com/o/r`` and ``ssh://git@github.com/o/r.git`` → ``github.com/o/r``."""
    url = url.strip().rstrip("/").removesuffix(".git")
    url = re.sub(r"^[a-z+]+://", "", url)
    url = re.sub(r"^[^@/]+@", "", url)
    return url.replace(":", "/", 1) if ":" in url.split("/", 1)[0] else url


@functools.lru_cache(maxsize=64)
def _clones(root: str) -> tuple[str, ...]:
    found: list[str] = []
    for dirpath, dirnames, _ in os.walk(root):
        depth = dirpath[len(root):].count(os.sep)
        if ".git" in dirnames or os.path.isfile(os.path.join(dirpath, ".git")):
            found.append(dirpath)
        dirnames[:] = [d for d in dirnames if depth < MAX_DEPTH and not d.startswith(".") and d not in _SKIP]
    return tuple(sorted(found))


def _has(clone: str, commit: str) -> bool:
    return subprocess.run(["git", "-C", clone, "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode == 0


def _remote_urls(clone: str) -> set[str]:
    done = subprocess.run(["git", "-C", clone, "remote", "-v"], capture_output=True, text=True)
    return {normalise_url(line.split()[1]) for line in done.stdout.splitlines() if len(line.split()) > 1}
