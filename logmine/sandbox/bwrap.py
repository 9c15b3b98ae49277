"""The bubblewrap backend: no daemon, one short-lived bwrap process per command (or per shell).

What a command sees (nothing else of the host; see hostview.py for the read-only part):

* read-only: the host view (system dirs, curated ``/etc`` with this sandbox's passwd/group, the
  Python running logmine) and ``/opt/logmine`` (start-up script, ``apply_patch``);
* writable: the workspace copy at ``mount_at``; a private ``/tmp`` (tmpfs of ``Limits.tmp_mb``,
  fresh for every ``run``, kept for the life of a shell) holding ``HOME=/tmp/home``;
* a fresh ``/proc`` (new PID namespace: the command is alone) and a minimal ``/dev``;
* new IPC, UTS, cgroup and network namespaces (only a loopback of its own) unless ``network``.

Privileges and limits: when logmine runs as root, ``setpriv`` first drops to a per-sandbox
unprivileged uid (identity.py); then bash's start-up script (inside.py) lowers data memory, CPU,
processes, file size and core limits before the command runs. The wall clock is enforced from the
host: SIGKILL to the sandbox's PID 1 (its pid comes from ``--json-status-fd``) takes the whole
namespace down before the outer bwrap can be reaped. ``--die-with-parent`` ends a sandbox whose
host process dies.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .hostview import SYSTEM_DIRS, host_view, python_roots, scratch_dirs, under, under_any
from .identity import Identity, drop_argv
from .inside import (
    PATCH_MOUNT,
    TOOL_BIN,
    TOOL_ROOT,
    host_interpreter,
    offline_env,
    patch_source,
    start_token,
    startup_env,
    with_tool_path,
)
from .isolated import IsolatedSandbox
from .limits import MIB, Limits
from .process import Launched, spawn
from .result import SandboxError
from .workspace import prepare

HOME = "/tmp/home"
PATH = f"{TOOL_BIN}:/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin:/usr/local/sbin"
BASE_ENV = {
    "PATH": PATH, "HOME": HOME, "USER": "agent", "LOGNAME": "agent", "SHELL": "/bin/bash",
    "LANG": "C.UTF-8", "TERM": "dumb", "TMPDIR": "/tmp",
    # replays rewrite files within a second at the same size: a cached .pyc would pass for fresh
    "PYTHONDONTWRITEBYTECODE": "1",
}


@dataclass(frozen=True, slots=True)
class Layout:
    """Host paths bound into the sandbox, and where the workspace appears."""

    workspace: Path
    tool: Path
    etc: Path
    patch_source: Path
    mount_at: str
    binds: tuple[tuple[str, str], ...] = ()  # read-only (host, inside), mounted after the workspace
    env: tuple[tuple[str, str], ...] = ()  # variables for every command


def open_bwrap(source: Path, *, mount_at: str, limits: Limits, network: bool,
               binds: tuple[tuple[str, str], ...] = (), env: dict[str, str] | None = None) -> IsolatedSandbox:
    """Copy ``source`` and return a sandbox over the copy. Raises SandboxError or ValueError."""
    mount_at = check_mount_at(mount_at)
    identity, state = prepare(source, str(host_interpreter()), limits,
                              lambda ws, ident: _write_accounts(ws.root / "etc", ident))
    layout = Layout(state.path, state.root / "tool", state.root / "etc", patch_source(), mount_at,
                    binds=tuple(b for b in binds if os.path.exists(b[0])), env=tuple(with_tool_path(env).items()))
    return IsolatedSandbox(state, BwrapBackend(layout, identity, limits, network), mount_at, limits)


class BwrapBackend:
    """Implements :class:`~logmine.sandbox.protocol.Backend`: one bwrap process per launch.

    Nothing outlives its launch (the PID namespace dies with the command or the shell), so there is
    nothing to reset or close.
    """

    def __init__(self, layout: Layout, identity: Identity, limits: Limits, network: bool) -> None:
        self._layout = layout
        self._identity = identity
        self._limits = limits
        self._network = network

    def launch(self, inner: list[str], cwd: str, env: dict[str, str] | None, stdin: int) -> Launched:
        token = start_token()
        status_r, status_w = os.pipe()
        argv = bwrap_argv(self._layout, self._identity, network=self._network, cwd=cwd, status_fd=status_w,
                          tmp_mb=self._limits.tmp_mb)
        argv += [*drop_argv(self._identity), *inner]
        try:
            return spawn(argv, {**BASE_ENV, **offline_env(self._network), **dict(self._layout.env), **(env or {}),
                                **startup_env(token)},
                         token=token, stdin=stdin,
                         pass_fds=(status_w,), kill=_killer(status_r), release=lambda: os.close(status_r))
        except OSError:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass


def bwrap_argv(layout: Layout, identity: Identity, *, network: bool, cwd: str, status_fd: int,
               tmp_mb: int) -> list[str]:
    """The ``bwrap ... --`` prefix of every sandboxed command (order matters: later mounts win)."""
    argv = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        argv.append("--unshare-net")
    if not identity.drop_privileges:
        argv += ["--unshare-user", "--uid", str(identity.uid), "--gid", str(identity.gid)]
    argv += ["--hostname", "sandbox", "--die-with-parent", "--new-session", "--json-status-fd", str(status_fd)]
    plan = MountPlan()
    for option, source, dest in host_view():
        plan.add(option, source, dest)
    plan.add("--ro-bind", str(layout.etc / "passwd"), "/etc/passwd")
    plan.add("--ro-bind", str(layout.etc / "group"), "/etc/group")
    plan.add("--ro-bind", str(layout.tool), TOOL_ROOT)
    plan.add("--ro-bind", str(layout.patch_source), PATCH_MOUNT)
    plan.add("--proc", "/proc")
    plan.add("--dev", "/dev")
    plan.add("--tmpfs", "/tmp", before=("--size", str(tmp_mb * MIB), "--perms", "1777"), empty=True)
    plan.add("--dir", HOME, before=("--perms", "0777"), empty=True)
    plan.add("--bind", str(layout.workspace), layout.mount_at)
    for source, dest in layout.binds:
        plan.add("--ro-bind", source, dest)
    for dest in scratch_dirs(layout.binds):
        plan.add("--tmpfs", dest, before=("--size", str(tmp_mb * MIB), "--perms", "1777"), empty=True)
    return [*argv, *plan.argv, "--chdir", cwd, "--"]



class MountPlan:
    """bwrap mount options in order, each missing parent made first as a 0755 directory.

    bwrap itself creates missing parents 0700, which the unprivileged sandbox user cannot enter.
    """

    def __init__(self) -> None:
        self.argv: list[str] = []
        self._placed: list[str] = []  # every destination so far
        self._empty: set[str] = set()  # destinations whose children must be created (tmpfs, dirs)

    def add(self, option: str, *args: str, before: tuple[str, ...] = (), empty: bool = False) -> None:
        dest = args[-1]
        for parent in _ancestors(dest):
            holder = max((p for p in self._placed if under(parent, p)), key=len, default=None)
            if holder == parent or (holder is not None and holder not in self._empty):
                continue  # already there, or inside a host bind where it exists
            self.argv += ["--perms", "0755", "--dir", parent]
            self._placed.append(parent)
            self._empty.add(parent)
        self.argv += [*before, option, *args]
        self._placed.append(dest)
        if empty:
            self._empty.add(dest)


def check_mount_at(mount_at: str) -> str:
    """``mount_at`` normalised; ValueError when it would hide or sit inside what the sandbox binds."""
    if not mount_at.startswith("/"):
        raise ValueError(f"mount_at must be an absolute path: {mount_at!r}")
    mount_at = posixpath.normpath(mount_at)
    fixed = [*SYSTEM_DIRS, "/etc", "/proc", "/dev", "/sys", TOOL_ROOT, *python_roots()]
    if mount_at in ("/", "/tmp") or under_any(mount_at, fixed) or any(under(p, mount_at) for p in [*fixed, HOME]):
        raise ValueError(f"mount_at {mount_at!r} collides with a path the sandbox mounts itself")
    return mount_at


_PROBED_OK = False


def probe() -> str | None:
    """None when bwrap sandboxes work on this machine, else why not (a success is remembered)."""
    global _PROBED_OK
    if _PROBED_OK:
        return None
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        with tempfile.TemporaryDirectory(prefix="logmine-probe-") as source:
            with open_bwrap(Path(source), mount_at="/workspace", limits=Limits(wall_s=30), network=False) as box:
                result = box.run("true")
    except (SandboxError, OSError) as exc:
        return str(exc)
    if result.exit_code != 0:
        return result.error or f"a trivial command exited {result.exit_code}: {result.output.strip()[:500]}"
    _PROBED_OK = True
    return None


def _killer(status_fd: int) -> Callable[[subprocess.Popen], None]:
    """Kill the sandbox's PID 1 (the namespace dies with it), then reap the outer bwrap."""

    def kill(proc: subprocess.Popen) -> None:
        child = _child_pid(status_fd)
        if child is not None and proc.poll() is None:  # bwrap has not reaped it: the pid is still its
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        elif proc.poll() is None:  # killed before bwrap reported its child (a shell never used): end bwrap,
            os.killpg(proc.pid, signal.SIGKILL)  # --die-with-parent takes the sandbox along
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # --die-with-parent takes the sandbox along
            proc.wait()

    return kill


def _child_pid(status_fd: int) -> int | None:
    """The host pid of the sandbox's PID 1, from bwrap's ``{"child-pid": N}`` status line."""
    os.set_blocking(status_fd, False)
    try:
        data = os.read(status_fd, 4096)
    except OSError:
        return None
    found = re.search(rb'"child-pid"\s*:\s*(\d+)', data)
    return int(found.group(1)) if found else None


def _write_accounts(etc: Path, identity: Identity) -> None:
    """passwd and group naming only root, the sandbox user ``agent`` and nobody."""
    etc.mkdir()
    etc.chmod(0o755)
    (etc / "passwd").write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"agent:x:{identity.uid}:{identity.gid}:sandbox user:{HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\nagent:x:{identity.gid}:\nnogroup:x:65534:\n")
    for name in ("passwd", "group"):
        (etc / name).chmod(0o644)


def _ancestors(path: str) -> list[str]:
    """``/a/b/c`` -> ``["/a", "/a/b"]``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]
