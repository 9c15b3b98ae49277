"""Temporary directories tagged with their owner, and the sweep that removes those of dead owners.

A process killed with SIGKILL runs no cleanup, so its ``logmine-sandbox-*``, ``logmine-verify-*`` and
``logmine-etc-*`` directories would stay in ``$TMPDIR`` for good. Each is therefore named
``<prefix><pid>.<start>-<random>``: the owner's pid and its start time (clock ticks since boot, from
``/proc/<pid>/stat``, so a recycled pid is not mistaken for the owner). :func:`sweep_stale` removes
the directories whose owner is gone (unmounting a workspace quota first); the sandbox runs it once
per process, before its first sandbox.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .quota import unmount_quota

STALE_PREFIXES = ("logmine-sandbox-", "logmine-verify-", "logmine-etc-")
_TAG = re.compile(r"(\d+)\.(\d+)-")


def tagged_tempdir(prefix: str, dir: str | None = None) -> Path:
    """A new private directory ``<prefix><pid>.<start>-XXXXXXXX`` in ``dir`` (default ``$TMPDIR``)."""
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{pid}.{_start_time(pid)}-", dir=dir))


@contextmanager
def tagged_tempdirectory(prefix: str) -> Iterator[Path]:
    """:func:`tagged_tempdir` removed on exit, like ``tempfile.TemporaryDirectory``."""
    from .workspace import remove_tree

    path = tagged_tempdir(prefix)
    try:
        yield path
    finally:
        remove_tree(path)


def sweep_stale(prefixes: tuple[str, ...] = STALE_PREFIXES, dir: str | None = None) -> list[Path]:
    """Remove the tagged directories whose owner process is gone; returns what was removed.

    Untagged directories (written by older versions) are left alone: their owner is unknown.
    """
    from .workspace import remove_tree

    root = Path(dir or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        prefix = next((p for p in prefixes if entry.name.startswith(p)), None)
        tag = _TAG.match(entry.name[len(prefix):]) if prefix else None
        if tag is None or not entry.is_dir(follow_symlinks=False) or _alive(int(tag[1]), int(tag[2])):
            continue
        path = Path(entry.path)
        unmount_quota(path)
        remove_tree(path)
        removed.append(path)
    return removed


@functools.cache
def sweep_once() -> None:
    """:func:`sweep_stale` at most once per process."""
    sweep_stale()


def _alive(pid: int, start: int) -> bool:
    if pid == os.getpid():
        return True
    return _start_time(pid) == start


def _start_time(pid: int) -> int:
    """Start time of ``pid`` in clock ticks after boot, 0 when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return 0
    return int(stat.rsplit(b")", 1)[1].split()[19])  # field 22; the name (field 2) may hold spaces
