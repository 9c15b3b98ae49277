"""Sandboxes for replaying and grading agent commands: one small protocol, several backends.

    with open_sandbox(repo, mount_at="/home/dev/projects/fixadd") as box:
        result = box.run("python -m pytest -q")        # fresh bash -c, cwd = mount_at
        sh = box.shell()                                 # cwd and exports persist
        sh.run("cd src && export X=1"); sh.run("echo $X")
        box.install_files({"tests/test_hidden.py": text})  # grading time: ends shells, no symlinks followed
        box.run("python -m pytest tests/test_hidden.py")

Backends: ``bwrap`` (bubblewrap, default, no daemon), ``docker`` and ``podman`` (image required).
A :class:`CommandResult` with ``unscored`` true (sandbox error, timeout) must never become a
reward of 0. See docs/sandbox.md.
"""

from __future__ import annotations

from pathlib import Path

from .bwrap import open_bwrap, probe
from .container import ENGINES, engine_available, open_container
from .limits import Limits
from .protocol import Sandbox, Shell
from .result import CommandResult, SandboxError

BACKENDS = ("bwrap", *ENGINES)

__all__ = [
    "BACKENDS",
    "CommandResult",
    "Limits",
    "Sandbox",
    "SandboxError",
    "Shell",
    "available_backends",
    "backend_unavailable",
    "open_sandbox",
]


def open_sandbox(
    source: Path,
    *,
    mount_at: str = "/workspace",
    backend: str = "bwrap",
    image: str | None = None,
    limits: Limits = Limits(),
    network: bool = False,
    binds: tuple[tuple[str, str], ...] = (),
    env: dict[str, str] | None = None,
) -> Sandbox:
    """Copy ``source`` (left untouched) and open a sandbox whose workspace is the copy at ``mount_at``.

    ``binds`` are ``(host path, path inside)`` pairs mounted read-only after the workspace (so a
    dependency directory can appear inside it), a host path that does not exist being skipped; a
    bound ``node_modules`` gets a private writable tmpfs over its ``.vite``/``.cache`` where they
    exist (test runners write their caches there);
    ``env`` adds variables to every command (a ``PATH`` there keeps the sandbox's tool directory
    first). :mod:`logmine.environment` computes both for a task's software environment.

    Raises SandboxError when the backend cannot run here or the copy fails (retryable
    infrastructure), ValueError for a bad argument (unknown backend, ``mount_at`` colliding with a
    system path, a container backend without ``image``).
    """
    if backend == "bwrap":
        reason = probe()
        if reason is not None:
            raise SandboxError(f"the bwrap backend cannot run here: {reason}")
        return open_bwrap(Path(source), mount_at=mount_at, limits=limits, network=network, binds=binds, env=env)
    if backend in ENGINES:
        return open_container(backend, Path(source), image=image, mount_at=mount_at, limits=limits, network=network,
                              binds=binds, env=env)
    raise ValueError(f"unknown sandbox backend {backend!r}; expected one of {', '.join(BACKENDS)}")


def backend_unavailable(backend: str) -> str | None:
    """Why sandboxes of ``backend`` cannot open on this machine, or None (a node check of verify's)."""
    if backend == "bwrap":
        reason = probe()
        return None if reason is None else f"the bwrap sandbox cannot run: {reason}"
    return None if engine_available(backend) else f"no {backend} engine is reachable"


def available_backends() -> list[str]:
    """The backends that can run on this machine, in order of preference."""
    return [backend for backend in BACKENDS if backend_unavailable(backend) is None]
