"""A commit's tree out of a clone: exported redacted with links left out, one file's blob, a git
command's output. The bottom of the workspace package: :mod:`.start` and :mod:`.later` use it."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from logmine.redact import PLACEHOLDERS, Mask, Redactor, redact_bytes, redact_tree
from logmine.workspace.edits import NotRebuilt, agent_home

__all__ = ["blob", "epoch", "export_commit", "extract_paths", "git", "media"]


def git(repo: Path, *args: str) -> str | None:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def epoch(when: datetime) -> int:
    """``when`` in seconds since the epoch, as git dates commits (a naive time is UTC, as logs record it)."""
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp())


def export_commit(repo: Path, commit: str, dest: Path, mask: Mask = PLACEHOLDERS) -> list[str]:
    """Extract ``commit``'s tree into ``dest``, its text redacted when ``mask`` has a key (pseudonyms);
    returns notes on what was left out: links to absolute paths or out of the tree (a repository may
    commit a link to its author's home, which must never be followed), and an agent's own files
    (``.codex/log/codex-tui.log``) and media files (an uploaded ``cover.jpg``: no code reads it as
    code) the clone lacks. A clone that lacks other objects of the tree (partial, shallow or damaged)
    is :class:`NotRebuilt`: the start would differ from the author's in what its code does."""
    links: list[str] = []
    failure = _extract(repo, commit, dest, links)
    absent = _absent_blobs(repo, commit) if failure else []
    if failure and absent and all(agent_home(p) or media(p) for p in absent):  # leave them out
        shutil.rmtree(dest)
        dest.mkdir()
        links.clear()
        failure = _extract(repo, commit, dest, links, leave_out=absent)
    if failure:
        lacks = f"; it lacks {', '.join(absent[:3])}" if absent else ""
        raise NotRebuilt(f"git archive of {commit[:12]} failed: the clone lacks objects of its tree or cannot "
                         f"be read ({failure}){lacks}")
    if mask.key:
        redact_tree(dest, Redactor(mask=mask))
    notes = [f"{len(links)} link(s) to absolute paths or out of the tree left out: " + ", ".join(links[:3])] \
        if links else []
    agents = [p for p in absent if agent_home(p)]
    for kind, paths in (("agent", agents), ("media", [p for p in absent if p not in agents])):
        if paths:
            notes.append(f"{len(paths)} {kind} file(s) the clone lacks left out: " + ", ".join(paths[:3]))
    return notes


_MEDIA = frozenset(
    "png jpg jpeg gif webp bmp ico tif tiff heic avif psd mp3 wav ogg flac m4a aac mp4 mov webm avi mkv "
    "woff woff2 ttf otf eot pdf zip gz tgz 7z rar".split())


def media(path: str) -> bool:
    """An image, sound, video, font, PDF or archive by its name: data a project ships or its users
    uploaded, never its code (``.svg``, which code imports as markup, is not)."""
    return path.rsplit(".", 1)[-1].lower() in _MEDIA if "." in path.rsplit("/", 1)[-1] else False


def extract_paths(repo: Path, commit: str, dest: Path, paths: Sequence[str]) -> str | None:
    """Only ``paths`` (files or folders) of ``commit`` extracted into ``dest``, links to absolute paths
    or out of the tree left out, not redacted; returns why it failed, else None."""
    return _extract(repo, commit, dest, [], only=paths)


def _extract(repo: Path, commit: str, dest: Path, links: list[str], leave_out: Sequence[str] = (),
             only: Sequence[str] = ()) -> str | None:
    """``git archive`` of ``commit`` (only the paths ``only``; without the paths ``leave_out``)
    extracted into ``dest``, the links it cannot keep appended to ``links``; returns why it failed,
    else None."""

    def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError:
            if member.issym() or member.islnk():
                links.append(member.name)
                return None
            raise

    kept = [f":(literal){p}" for p in only] or ["."]
    spec = ["--", *kept, *(f":(exclude,literal){p}" for p in leave_out)] if only or leave_out else []
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: git never blocks on what it says
        proc = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", commit, *spec],
                                stdout=subprocess.PIPE, stderr=errors)
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
                archive.extractall(dest, filter=keep)
            failure = None
        except (tarfile.TarError, OSError) as exc:
            proc.kill()
            failure = f"{type(exc).__name__}: {exc}"
        if proc.stdout is not None:
            proc.stdout.close()
        code = proc.wait()
        errors.seek(0)
        said = errors.read().decode(errors="replace").strip().splitlines()
    if failure or code != 0:
        return said[0] if said else failure or f"exit {code}"
    return None


def _absent_blobs(repo: Path, commit: str) -> list[str]:
    """The paths of ``commit``'s tree whose blobs the clone lacks (a partial or damaged clone)."""
    listing = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", "--full-tree", commit],
                             capture_output=True)
    if listing.returncode != 0:
        return []
    entries = [line.decode(errors="replace").split("\t", 1) for line in listing.stdout.split(b"\0") if line]
    blobs = [(head.split()[2], path) for head, path in entries if head.split()[1] == "blob"]
    checked = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-check=%(objectname)"],
                             input="".join(f"{sha}\n" for sha, _ in blobs), capture_output=True, text=True)
    missing = {line.split()[0] for line in checked.stdout.splitlines() if line.endswith(" missing")}
    return [path for sha, path in blobs if sha in missing]


def blob(live: Path, commit: str, path: str, mask: Mask = PLACEHOLDERS) -> bytes | None:
    """The bytes of ``path`` in ``commit`` of ``live``, else None (not in that commit); redacted as
    :func:`export_commit` redacts a tree with ``mask``."""
    done = subprocess.run(["git", "-C", str(live), "show", f"{commit}:{path}"], capture_output=True)
    if done.returncode != 0:
        return None
    return redact_bytes(done.stdout, Redactor(mask=mask)) if mask.key and b"\0" not in done.stdout[:8192] else done.stdout
