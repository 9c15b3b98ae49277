"""What a sandboxed command returns, and the one exception a sandbox raises."""

from __future__ import annotations

from dataclasses import dataclass

from logmine.errors import LogmineError


@dataclass(frozen=True, slots=True)
class CommandResult:
    """One command's outcome.

    ``exit_code`` is None when there is none (timeout, sandbox failure). ``output`` is stdout and
    stderr interleaved, capped: head + ``"\\n[... N bytes cut ...]\\n"`` + tail (``truncated``).
    ``error`` names an infrastructure problem (the sandbox could not start, the shell is gone):
    such a result, like a timeout, is *unscored*: it says nothing about the command.
    """

    exit_code: int | None
    output: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None

    @property
    def unscored(self) -> bool:
        """True when the result must not be graded: never turn it into a reward of 0."""
        return self.error is not None or self.timed_out


class SandboxError(LogmineError, RuntimeError):
    """The sandbox could not be created or started at all (retryable infrastructure failure)."""
