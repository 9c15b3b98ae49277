"""The two protocols every backend implements: a sandbox and the persistent shell it opens."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Protocol

from .process import Launched
from .result import CommandResult


class Shell(Protocol):
    """A long-lived ``bash`` inside a sandbox: ``cd`` and exported variables persist across commands.

    After a timeout or after the shell exits, every later ``run`` returns an unscored error result.
    """

    def run(self, command: str, timeout_s: float | None = None) -> CommandResult: ...

    def close(self) -> None: ...


class Sandbox(Protocol):
    """A writable copy of a workspace, mounted at ``mount_at``, where commands run isolated.

    ``workspace`` is the host path of the copy: read results there; write into it only through
    :meth:`install_files`. ``close`` ends every process and removes the copy.
    """

    workspace: Path
    mount_at: str

    def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        timeout_s: float | None = None,
        env: dict[str, str] | None = None,
    ) -> CommandResult: ...

    def shell(self, cwd: str | None = None) -> Shell: ...

    def install_files(self, files: dict[str, str]) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Backend(Protocol):
    """How one isolation technology starts processes over a prepared workspace (bwrap, containers).

    ``launch`` starts ``inner`` (argv run inside, after the limits and the start token) and raises
    OSError when the process cannot be spawned; ``reset`` ends every process the backend started
    (grading time); ``close`` releases the backend for good.
    """

    def launch(self, inner: list[str], cwd: str, env: dict[str, str] | None, stdin: int) -> Launched: ...

    def reset(self) -> None: ...

    def close(self) -> None: ...
