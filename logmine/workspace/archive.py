"""A commit's tree out of a clone: exported redacted with links left out, one file's blob, a git
command's output. The bottom of the workspace package: :mod:`.start` and :mod:`.later` use it."""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from pathlib import Path

from logmine.redact import PLACEHOLDERS, Mask, Redactor, redact_bytes, redact_tree
from logmine.workspace.edits import NotRebuilt

__all__ = ["blob", "export_commit", "git", "links_note"]


def git(repo: Path, *args: str) -> str | None:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def export_commit(repo: Path, commit: str, dest: Path, mask: Mask = PLACEHOLDERS) -> list[str]:
    """Extract ``commit``'s tree into ``dest``, its text redacted when ``mask`` has a key (pseudonyms);
    returns the links left out (to absolute paths or out of the tree: a repository may commit a link
    to its author's home, which must never be followed). A clone that lacks objects of the tree
    (partial, shallow or damaged) is :class:`NotRebuilt`."""
    left_out: list[str] = []

    def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError:
            if member.issym() or member.islnk():
                left_out.append(member.name)
                return None
            raise

    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: git never blocks on what it says
        proc = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", commit],
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
        why = said[0] if said else failure or f"exit {code}"
        raise NotRebuilt(f"git archive of {commit[:12]} failed: the clone lacks objects of its tree or cannot "
                         f"be read ({why})")
    if mask.key:
        redact_tree(dest, Redactor(mask=mask))
    return left_out


def blob(live: Path, commit: str, path: str, mask: Mask = PLACEHOLDERS) -> bytes | None:
    """The bytes of ``path`` in ``commit`` of ``live``, else None (not in that commit); redacted as
    :func:`export_commit` redacts a tree with ``mask``."""
    done = subprocess.run(["git", "-C", str(live), "show", f"{commit}:{path}"], capture_output=True)
    if done.returncode != 0:
        return None
    return redact_bytes(done.stdout, Redactor(mask=mask)) if mask.key and b"\0" not in done.stdout[:8192] else done.stdout


def links_note(links: list[str]) -> list[str]:
    return [f"{len(links)} link(s) to absolute paths or out of the tree left out: " + ", ".join(links[:3])] \
        if links else []
