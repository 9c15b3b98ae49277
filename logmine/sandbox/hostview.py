"""What of the host a bwrap sandbox sees, read-only: never ``/``, only what commands need.

* the system dirs (``/usr``; ``/bin``, ``/sbin``, ``/lib*`` as the links or dirs they are);
* ``/etc`` as a copy of an allow-list (no shadow, ssh, sudoers, pip/npm credentials, profile),
  made once per process and holding only what any host user may read;
* the Python installation running logmine, so ``apply_patch`` runs the same interpreter; only its
  directory is bound (its parents are empty directories inside).
"""

from __future__ import annotations

import atexit
import functools
import glob
import os
import shutil
import stat
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from .inside import host_interpreter
from .tmp import tagged_tempdir

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "alternatives", "ca-certificates", "ca-certificates.conf", "debian_version", "gai.conf", "gitconfig",
    "host.conf", "hosts", "inputrc", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "locale.alias", "localtime",
    "magic", "magic.mime", "mime.types", "networks", "nsswitch.conf", "os-release", "perl", "protocols",
    "resolv.conf", "services", "shells", "ssl", "terminfo", "timezone", "vim", "java-*", "python3*",
)


_LOCK = threading.Lock()  # verify opens sandboxes from several threads: build the view once


def host_view() -> tuple[tuple[str, str, str], ...]:
    """bwrap (option, source, destination) triples for the read-only host view."""
    with _LOCK:
        return _host_view()


@functools.cache
def _host_view() -> tuple[tuple[str, str, str], ...]:
    view: list[tuple[str, str, str]] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            view.append(("--symlink", os.readlink(path), path))
        elif os.path.isdir(path):
            view.append(("--ro-bind", path, path))
    view.append(("--ro-bind", etc_view(), "/etc"))
    for root in python_roots():
        view.append(("--ro-bind", root, root))
    return tuple(view)


@functools.cache
def etc_view() -> str:
    """A copy of the allow-listed part of /etc: one bind instead of dozens (each costs ~0.1 ms).

    Only what any host user may read is copied (not /etc/ssl/private, say); symlinks stay
    symlinks. Empty ``passwd`` and ``group`` are mount points for each sandbox's own. The copy is
    made at the first sandbox of the process and removed at exit.
    """
    root = tagged_tempdir("logmine-etc-")
    atexit.register(_remove_from, os.getpid(), root)
    for pattern in ETC_ENTRIES:
        for path in sorted(glob.glob(f"/etc/{pattern}")):
            _copy_public(Path(path), root / os.path.basename(path))
    for name in ("passwd", "group"):
        (root / name).touch(0o644)
    root.chmod(0o755)
    return str(root)


@functools.cache
def python_roots() -> tuple[str, ...]:
    """Installation dirs of the interpreter that runs apply_patch, unless the system dirs hold it."""
    interpreter = str(host_interpreter())
    roots: list[str] = []
    for root in (os.path.realpath(sys.base_prefix), os.path.dirname(os.path.dirname(interpreter))):
        if not under_any(root, [*SYSTEM_DIRS, *roots]):
            roots.append(root)
    return tuple(roots)


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it (both absolute and normalised)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def under_any(path: str, roots: Iterable[str]) -> bool:
    return any(under(path, root) for root in roots)


def _copy_public(source: Path, dest: Path) -> None:
    st = os.lstat(source)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), dest)
    elif stat.S_ISDIR(st.st_mode) and st.st_mode & 0o005 == 0o005:
        dest.mkdir()
        for entry in os.scandir(source):
            _copy_public(Path(entry.path), dest / entry.name)
        dest.chmod(stat.S_IMODE(st.st_mode))
    elif stat.S_ISREG(st.st_mode) and st.st_mode & 0o004:
        shutil.copyfile(source, dest)
        dest.chmod(stat.S_IMODE(st.st_mode))


def _remove_from(pid: int, path: Path) -> None:
    if os.getpid() == pid:  # not when a forked child exits
        shutil.rmtree(path, ignore_errors=True)


# Caches test runners write under a dependency directory (vite/vitest: node_modules/.vite, and since
# vite 6 the bundled config file in node_modules/.vite-temp; babel, jest, eslint and others:
# node_modules/.cache). A read-only bind of the directory gets a private, empty, writable tmpfs at
# each of them that exists in its source: the run writes there, the source stays as it was.
SCRATCH_NAMES = (".vite", ".vite-temp", ".cache")


def scratch_dirs(binds: Iterable[tuple[str, str]]) -> list[str]:
    """Where inside the sandbox a writable tmpfs goes over a read-only bind (see ``SCRATCH_NAMES``)."""
    return [f"{dest.rstrip('/')}/{name}" for source, dest in binds if os.path.basename(dest) == "node_modules"
            for name in SCRATCH_NAMES if os.path.isdir(os.path.join(source, name))]
