"""The one Sandbox implementation: a workspace copy plus a backend that starts isolated processes.

Backends differ only in how a process is started and ended (protocol.Backend); everything the
verify stage and the trainer rely on (fresh ``bash -c`` per ``run``, persistent shells, grading-time
files, unscored results) is here, once. Before each launch, whatever the host wrote into the copy
is handed to the sandbox user (Workspace.adopt), so host-side edits stay editable inside.
"""

from __future__ import annotations

import posixpath
import subprocess
import time
from pathlib import Path

from .limits import Limits
from .process import run_once
from .protocol import Backend
from .result import CommandResult, SandboxError
from .shell import PersistentShell
from .workspace import Workspace


class IsolatedSandbox:
    """Implements :class:`~logmine.sandbox.protocol.Sandbox`."""

    def __init__(self, state: Workspace, backend: Backend, mount_at: str, limits: Limits) -> None:
        self.workspace: Path = state.path
        self.mount_at = mount_at
        self.identity = state.identity
        self._state = state
        self._backend = backend
        self._limits = limits
        self._shells: list[PersistentShell] = []
        self._closed = False

    def run(self, command: str, *, cwd: str | None = None, timeout_s: float | None = None,
            env: dict[str, str] | None = None) -> CommandResult:
        """A fresh ``bash -c command``; ``cwd`` (relative: to mount_at) defaults to mount_at."""
        started = time.monotonic()
        if self._closed:
            return CommandResult(None, "", 0.0, error="the sandbox is closed")
        try:
            self._state.adopt()
            launched = self._backend.launch(["bash", "-c", command], self._inside(cwd), env, subprocess.DEVNULL)
        except OSError as exc:
            return CommandResult(None, "", time.monotonic() - started, error=f"could not start the sandbox: {exc}")
        # the command's wall clock starts once it is spawned: a container backend first starts its
        # container (bounded by its own engine timeout), which is not the command's time
        wall_s = timeout_s if timeout_s is not None else self._limits.wall_s
        return run_once(launched, time.monotonic(), wall_s, self._limits.output_bytes)

    def shell(self, cwd: str | None = None) -> PersistentShell:
        """A persistent shell starting in ``cwd``; a start failure shows in its first result."""
        launched, error = None, "the sandbox is closed" if self._closed else None
        if not self._closed:
            try:
                self._state.adopt()
                launched = self._backend.launch(["bash", "--noprofile", "--norc"], self._inside(cwd), None,
                                                subprocess.PIPE)
            except OSError as exc:
                error = f"could not start the sandbox: {exc}"
        shell = PersistentShell(launched, wall_s=self._limits.wall_s, output_bytes=self._limits.output_bytes,
                                start_error=error)
        self._shells.append(shell)
        return shell

    def install_files(self, files: dict[str, str]) -> None:
        """Write grading-time files (relative path -> text), replacing whatever the agent left there.

        Every shell and every process the agent started is ended first, so nothing can race the
        writes or touch the files before the grader runs. Symlinks are never followed.
        """
        if self._closed:
            raise SandboxError("the sandbox is closed")
        self._end_processes()
        self._state.install(files)

    def close(self) -> None:
        """End every process, release the backend, remove the workspace copy. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._end_processes()
            self._backend.close()
        finally:
            self._state.remove()

    def __enter__(self) -> IsolatedSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _end_processes(self) -> None:
        for shell in self._shells:
            shell.close()
        self._shells.clear()
        self._backend.reset()

    def _inside(self, cwd: str | None) -> str:
        if cwd is None:
            return self.mount_at
        return posixpath.normpath(posixpath.join(self.mount_at, cwd))
