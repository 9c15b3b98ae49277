"""A disk quota for a sandbox's writable workspace: its state directory is a size-limited tmpfs.

When logmine runs as root (the only case in which it may mount), the state directory of each
sandbox (the workspace copy, the tool and account files) is a tmpfs of ``Limits.disk_mb`` mounted on
the host before the copy is made: the kernel refuses every write past the size with ENOSPC, whatever
writes it (``dd``, ``fallocate``, many small files), and the host reads and writes the copy as
before. The pages are host memory (swappable), used only as files are written. An unprivileged
logmine cannot mount: the per-file limit (``Limits.file_mb``, RLIMIT_FSIZE) is all that applies.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

_MNT_DETACH = 2
_MS_NOSUID, _MS_NODEV = 2, 4
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def mount_quota(path: Path, size_mb: int) -> bool:
    """Mount a ``size_mb`` tmpfs (mode 0700) on the empty directory ``path``; False when not permitted."""
    if os.geteuid() != 0:
        return False
    options = f"size={size_mb}m,mode=0700".encode()
    if _libc.mount(b"logmine-quota", str(path).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        return False
    return True


def unmount_quota(path: Path) -> None:
    """Detach the tmpfs at ``path`` if there is one (its contents go with it)."""
    if os.path.ismount(path):
        _libc.umount2(str(path).encode(), _MNT_DETACH)
