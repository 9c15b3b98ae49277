"""The docker / podman backend: one long-lived container per sandbox, one ``exec`` per command.

Same semantics as bwrap, enforced by the engine: the image (the task's env_config) as a read-only
root, the workspace copy bound writable at ``mount_at``, a private tmpfs ``/tmp``, no network
(``--network none``), an unprivileged user with no capabilities and ``no-new-privileges``, a PID
limit and a memory cgroup limit, CPU/file-size/process rlimits, ``--init`` reaping orphans.

Killing an ``exec`` client does not kill what it started inside, so a timeout removes the whole
container (the workspace is a bind mount and survives); the next command starts a fresh one.
``reset`` (grading time) does the same, which also empties ``/tmp``. The image needs ``sh`` and
``bash``, and ``python3`` >= 3.10 for ``apply_patch``.
"""

from __future__ import annotations

import os
import posixpath
import resource
import secrets
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from .hostview import scratch_dirs, under
from .identity import Identity
from .inside import (
    PATCH_MOUNT,
    TOOL_BIN,
    TOOL_ROOT,
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
from .workspace import Workspace, prepare

ENGINES = ("docker", "podman")
HOME = "/tmp/home"
PATH = f"{TOOL_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV = {"PATH": PATH, "HOME": HOME, "USER": "agent", "LOGNAME": "agent", "LANG": "C.UTF-8", "TERM": "dumb",
            "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}  # see bwrap.BASE_ENV
KEEP_ALIVE = f"mkdir -p {HOME} && exec sleep infinity"
ENGINE_TIMEOUT_S = 60.0

_ENGINE_OK: dict[str, bool] = {}


def engine_available(engine: str) -> bool:
    """True when ``engine``'s command exists and reaches a running engine. ``ENGINE version`` asks the
    engine (Docker's daemon, Podman's runtime) without touching image storage, which ``info`` locks
    and a running build holds for minutes. A missing command is remembered; a probe that failed is
    tried again next time (the engine may have been busy)."""
    if engine not in _ENGINE_OK:
        if not shutil.which(engine):
            _ENGINE_OK[engine] = False
            return False
        try:
            ok = subprocess.run([engine, "version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if not ok:
            return False
        _ENGINE_OK[engine] = True
    return _ENGINE_OK[engine]


def open_container(engine: str, source: Path, *, image: str | None, mount_at: str, limits: Limits,
                   network: bool, binds: tuple[tuple[str, str], ...] = (),
                   env: dict[str, str] | None = None) -> IsolatedSandbox:
    """Copy ``source``; the container itself starts with the first command. Raises SandboxError."""
    if not image:
        raise ValueError(f"the {engine} backend needs an image (the task's env_config)")
    normal = posixpath.normpath(mount_at) if mount_at.startswith("/") else ""
    if normal in ("", "/", "/tmp") or under(normal, TOOL_ROOT) or under(normal, HOME):
        raise ValueError(f"mount_at {mount_at!r} must be an absolute path other than /, /tmp, {HOME}, {TOOL_ROOT}")
    mount_at = normal
    if not engine_available(engine):
        raise SandboxError(f"the {engine} backend cannot run here: no {engine} engine is reachable")
    identity, state = prepare(source, "python3", limits, quota=False)
    backend = ContainerBackend(engine, image, state, mount_at, identity, limits, network,
                               binds=tuple(b for b in binds if os.path.exists(b[0])), env=with_tool_path(env))
    return IsolatedSandbox(state, backend, mount_at, limits)


class ContainerBackend:
    """Implements :class:`~logmine.sandbox.protocol.Backend` with a docker or podman engine."""

    def __init__(self, engine: str, image: str, state: Workspace, mount_at: str, identity: Identity,
                 limits: Limits, network: bool, *, binds: tuple[tuple[str, str], ...] = (),
                 env: dict[str, str] | None = None) -> None:
        self._binds = binds
        self._env = dict(env or {})
        self._engine = engine
        self._image = image
        self._state = state
        self._mount_at = mount_at
        self._identity = identity
        self._limits = limits
        self._network = network
        self._name: str | None = None  # the running container, if any

    def launch(self, inner: list[str], cwd: str, env: dict[str, str] | None, stdin: int) -> Launched:
        name = self._ensure_container()
        token = start_token()
        env = {**BASE_ENV, **offline_env(self._network), **self._env, **(env or {}), **startup_env(token)}
        argv = exec_argv(self._engine, name, cwd=cwd, env=env, interactive=stdin == subprocess.PIPE, inner=inner)
        return spawn(argv, dict(os.environ), token=token, stdin=stdin, kill=self._killer(name))

    def reset(self) -> None:
        if self._name is not None:
            self._remove(self._name)
            self._name = None

    def close(self) -> None:
        self.reset()

    def _ensure_container(self) -> str:
        if self._name is None:
            name = f"logmine-sandbox-{secrets.token_hex(6)}"
            argv = create_argv(self._engine, name, self._image, workspace=self._state.path,
                               tool=self._state.root / "tool", patch_src=patch_source(), mount_at=self._mount_at,
                               identity=self._identity, limits=self._limits, network=self._network,
                               rootless=os.geteuid() != 0, binds=self._binds)
            try:
                done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      timeout=ENGINE_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:
                self._remove(name)
                raise OSError(f"{self._engine} run timed out after {ENGINE_TIMEOUT_S:.0f} s") from exc
            if done.returncode != 0:
                raise OSError(f"{self._engine} run failed (exit {done.returncode}): {done.stdout.strip()[-500:]}")
            self._name = name
        return self._name

    def _killer(self, name: str) -> Callable[[subprocess.Popen], None]:
        def kill(proc: subprocess.Popen) -> None:
            self._remove(name)  # what the exec started lives in the container, not under the client
            if self._name == name:
                self._name = None
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()

        return kill

    def _remove(self, name: str) -> None:
        try:
            subprocess.run([self._engine, "rm", "--force", name], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=ENGINE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            pass


def create_argv(engine: str, name: str, image: str, *, workspace: Path, tool: Path, patch_src: Path,
                mount_at: str, identity: Identity, limits: Limits, network: bool, rootless: bool,
                binds: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """``ENGINE run`` of the long-lived container (it only sleeps; commands come through exec).

    Every ulimit is explicit, ``nofile`` included: once any ``--ulimit`` is given, podman asks for
    nofile/nproc of 1048576 for the rest, which hosts that cannot raise RLIMIT_NOFILE refuse.
    """
    cpu, fsize, procs = limits.cpu_s, limits.file_mb * MIB, limits.processes
    files = nofile_limit()
    argv = [
        engine, "run", "--detach", "--rm", "--name", name, "--init", "--hostname", "sandbox",
        "--user", f"{identity.uid}:{identity.gid}",
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--read-only", "--tmpfs", f"/tmp:rw,exec,nosuid,nodev,size={limits.tmp_mb}m,mode=1777",
        "--pids-limit", str(procs),
        "--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m",
        "--ulimit", f"cpu={cpu}:{cpu + 1}", "--ulimit", f"fsize={fsize}:{fsize}",
        "--ulimit", f"nproc={procs}:{procs}", "--ulimit", f"nofile={files}:{files}", "--ulimit", "core=0:0",
    ]
    if not network:
        argv += ["--network", "none"]
    if rootless and engine == "podman":
        argv += ["--userns", "keep-id"]
    argv += [
        "--volume", f"{workspace}:{mount_at}:rw",
        "--volume", f"{tool}:{TOOL_ROOT}:ro",
        "--volume", f"{patch_src}:{PATCH_MOUNT}:ro",
        *[arg for source, dest in binds for arg in ("--volume", f"{source}:{dest}:ro")],
        *[arg for dest in scratch_dirs(binds) for arg in ("--tmpfs", f"{dest}:rw,exec,size={limits.tmp_mb}m,mode=1777")],
        "--workdir", mount_at,
        "--entrypoint", "sh", image, "-c", KEEP_ALIVE,
    ]
    return argv


def nofile_limit(wanted: int = 4096) -> int:
    """Open files per container process: ``wanted``, or this host's hard limit when lower."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def exec_argv(engine: str, name: str, *, cwd: str, env: dict[str, str], interactive: bool,
              inner: list[str]) -> list[str]:
    """``ENGINE exec`` of one command (or one shell, ``interactive``: stdin kept open)."""
    argv = [engine, "exec"]
    if interactive:
        argv.append("--interactive")
    argv += ["--workdir", cwd]
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    return [*argv, name, *inner]
