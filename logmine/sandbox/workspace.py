"""The sandbox's host side: a private state directory holding the writable workspace copy.

Layout (``root`` is mode 0700, removed by :meth:`Workspace.remove`)::

    root/workspace/   the copy of the source, bound writable at mount_at (``sandbox.workspace``)
    root/tool/        the start-up script and apply_patch (see inside.py), bound read-only
    root/etc/         passwd and group naming the sandbox user, bound read-only

The copy keeps symlinks as symlinks (never follows them) and skips fifos, sockets and devices.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from .identity import Identity, sandbox_identity
from .inside import write_tools
from .limits import Limits
from .quota import mount_quota, unmount_quota
from .result import SandboxError
from .tmp import sweep_once, tagged_tempdir


class Workspace:
    """The host side of one sandbox: its state directory and the workspace copy in it."""

    def __init__(self, root: Path, identity: Identity) -> None:
        self.root = root
        self.path = root / "workspace"
        self.identity = identity
        self.quota = False  # the state directory is a size-limited tmpfs

    @classmethod
    def create(cls, source: Path, identity: Identity, disk_mb: int | None = None) -> Workspace:
        """Copy ``source`` into a fresh state directory, a ``disk_mb`` tmpfs where logmine may mount
        one (see quota.py). Stale state directories of dead processes are swept first. Raises SandboxError."""
        source = Path(source)
        if not source.is_dir():
            raise SandboxError(f"workspace source is not a directory: {source}")
        sweep_once()
        root = tagged_tempdir("logmine-sandbox-")
        workspace = cls(root, identity)
        workspace.quota = disk_mb is not None and mount_quota(root, disk_mb)
        try:
            shutil.copytree(source, workspace.path, symlinks=True, copy_function=copy_regular)
            workspace.adopt()
        except (OSError, shutil.Error) as exc:
            workspace.remove()
            raise SandboxError(f"could not copy the workspace {source}: {exc}") from exc
        return workspace

    def install(self, files: dict[str, str]) -> None:
        """Write ``files`` (relative path -> text) into the copy, replacing whatever is at each path.

        No symlink is ever followed: a symlink, file or directory standing where a parent directory
        or the file belongs is removed first. A directory on the way whose owner access the sandbox
        took away (``chmod 000``) gets it back, so an agent cannot make grading fail. Raises
        ValueError for a path that is absolute, empty or climbs out with ``..``; nothing is written then.
        """
        parts = {rel: _parts(rel) for rel in files}
        for rel, content in files.items():
            fd = _open_directory(str(self.path), None)
            try:
                for name in parts[rel][:-1]:
                    fd = _enter_directory(fd, name)
                name = parts[rel][-1]
                _remove_entry(fd, name)
                out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
                with os.fdopen(out, "wb") as handle:
                    handle.write(content.encode("utf-8"))
            finally:
                os.close(fd)

    def remove(self) -> None:
        """Delete the state directory, whatever the sandbox did to permissions inside it."""
        if self.quota:
            unmount_quota(self.root)
        remove_tree(self.root)

    def adopt(self) -> None:
        """Give the sandbox user everything in the copy that it does not own yet.

        Only when privileges are dropped (logmine runs as root): a file the host writes into the
        copy (a patch applied on the host, say) belongs to root, and the sandbox user could read
        but not change it. Runs before every command; about 4 µs per entry of the tree.
        """
        if not self.identity.drop_privileges:
            return
        uid, gid = self.identity.uid, self.identity.gid
        os.lchown(self.path, uid, gid)
        stack = [str(self.path)]
        while stack:
            try:
                entries = os.scandir(stack.pop())
            except OSError:
                continue
            with entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                        if st.st_uid != uid or st.st_gid != gid:
                            os.lchown(entry.path, uid, gid)
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                    except FileNotFoundError:
                        continue


def _parts(rel: str) -> tuple[str, ...]:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"install_files: not a relative path inside the workspace: {rel!r}")
    return path.parts


def _enter_directory(parent: int, name: str) -> int:
    """Open directory ``name`` under ``parent``, first making it a real directory if it is not one.

    Closes ``parent`` on success only (the caller closes it on error)."""
    try:
        fd = _open_directory(name, parent)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            raise
        _remove_entry(parent, name)
        os.mkdir(name, 0o755, dir_fd=parent)
        fd = _open_directory(name, parent)
    os.close(parent)
    return fd


def _open_directory(name: str, dir_fd: int | None) -> int:
    """Open directory ``name`` (under ``dir_fd``) for reading without following a symlink, first giving
    its owner read/write/search back if it lacks them. Raises OSError (ENOTDIR for a symlink or file)."""
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        mode = os.fstat(handle).st_mode
        if mode & stat.S_IRWXU != stat.S_IRWXU:
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(mode) | stat.S_IRWXU)  # no fchmod on O_PATH
        return os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_DIRECTORY)
    finally:
        os.close(handle)


def _remove_entry(dir_fd: int, name: str) -> None:
    """Remove ``name`` under ``dir_fd`` if present, without following a symlink."""
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        _rmtree(f"/proc/self/fd/{dir_fd}/{name}")  # rmtree's dir_fd needs Python 3.11
    else:
        os.unlink(name, dir_fd=dir_fd)


def copy_regular(src: str, dst: str) -> None:
    """``shutil.copytree``'s copy function for workspaces: regular files only (fifos, sockets and
    devices are skipped)."""
    if stat.S_ISREG(os.lstat(src).st_mode):
        shutil.copy2(src, dst)


def remove_tree(path: str | Path) -> None:
    """Remove a directory tree that a sandbox may have made unwritable."""
    _rmtree(path)


def _rmtree(path: str | Path) -> None:
    """``shutil.rmtree`` (never follows symlinks) that also removes what a sandbox made unwritable."""
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_force_remove)
    else:
        shutil.rmtree(path, onerror=lambda func, failed, info: _force_remove(func, failed, info[1]))


def _force_remove(func, path: str, exc: BaseException) -> None:
    """rmtree error hook: make the parent and the entry writable (a sandbox may chmod 000), retry."""
    if isinstance(exc, FileNotFoundError):
        return
    os.chmod(os.path.dirname(path) or ".", 0o700)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        _rmtree(path)
    else:
        func(path)


def prepare(source: Path, interpreter: str, limits: Limits,
            extra: Callable[[Workspace, Identity], None] | None = None,
            quota: bool = True) -> tuple[Identity, Workspace]:
    """A fresh sandbox identity and a copy of ``source`` with the in-sandbox tools written beside it.

    ``quota``: put the copy on a ``limits.disk_mb`` tmpfs (bwrap; a container engine's daemon may
    not see a mount made in logmine's mount namespace, so container backends pass False).

    ``extra`` adds backend-specific files; any failure removes the copy and raises SandboxError.
    """
    try:
        identity = sandbox_identity()
    except OSError as exc:
        raise SandboxError(str(exc)) from exc
    state = Workspace.create(source, identity, limits.disk_mb if quota else None)
    try:
        write_tools(state.root / "tool", interpreter, limits)
        if extra is not None:
            extra(state, identity)
    except OSError as exc:
        state.remove()
        raise SandboxError(f"could not prepare the sandbox: {exc}") from exc
    return identity, state
