"""The persistent shell: one long-lived ``bash`` in one long-lived sandbox process.

Design: the host writes each command to bash's stdin as ``eval -- 'COMMAND' 9>&- </dev/null``
followed by ``printf 'MARKER%s\\n' "$?" >&9``, where fd 9 is a copy of the original stdout made
once at start and MARKER is a fresh random string per command. ``eval`` in the shell itself is what
makes ``cd`` and ``export`` persist; the command's stdin is /dev/null so it cannot eat the
protocol; the marker goes to fd 9 so a command that redirects its shell's stdout (``exec >f``)
does not lose it. Output is read up to the marker through the same cap as one-shot commands; the
number after it is the exit code.

A command past its deadline kills the whole sandbox (its PID namespace) and the shell is dead:
every later ``run`` returns an unscored error result. So does a shell whose bash exited (``exit``).
"""

from __future__ import annotations

import secrets
import shlex
import subprocess
import time

from .output import OutputCap, Read
from .process import Launched, await_start, finish
from .result import CommandResult

SETUP = b"exec 9>&1\n"


class PersistentShell:
    """Implements :class:`~logmine.sandbox.protocol.Shell` over a launched ``bash`` reading stdin.

    ``launched`` is None when the sandbox could not even be spawned (``start_error`` says why).
    """

    def __init__(self, launched: Launched | None, *, wall_s: float, output_bytes: int,
                 start_error: str | None = None) -> None:
        self._launched = launched
        self._wall_s = wall_s
        self._output_bytes = output_bytes
        self._started = False
        self._dead: str | None = start_error
        if launched is not None:
            self._send(SETUP)

    @property
    def alive(self) -> bool:
        return self._dead is None

    def run(self, command: str, timeout_s: float | None = None) -> CommandResult:
        started = time.monotonic()
        if self._dead is not None:
            return CommandResult(None, "", 0.0, error=self._dead)
        deadline = started + (timeout_s if timeout_s is not None else self._wall_s)
        launched = self._launched
        if not self._started:
            how, preamble = await_start(launched, deadline)
            if how is not Read.FOUND:
                return self._fail(started, how, preamble, OutputCap(self._output_bytes))
            self._started = True
        marker = f"__logmine_done_{secrets.token_hex(8)}__".encode()
        script = f"eval -- {shlex.quote(command)} 9>&- </dev/null\nprintf '%s%s\\n' {marker.decode()} \"$?\" >&9\n"
        self._send(script.encode())
        cap = OutputCap(self._output_bytes)
        how = launched.stream.read_until(marker, cap.write, deadline)
        if how is Read.FOUND:
            digits = bytearray()
            how = launched.stream.read_until(b"\n", digits.extend, deadline)
            if how is Read.FOUND:
                return CommandResult(int(digits), cap.text(), time.monotonic() - started, truncated=cap.truncated)
        return self._fail(started, how, "", cap)

    def close(self) -> None:
        if self._launched is not None:
            finish(self._launched)
            self._launched = None
        if self._dead is None:
            self._dead = "the shell was closed"

    def _fail(self, started: float, how: Read, preamble: str, cap: OutputCap) -> CommandResult:
        """The shell cannot go on: after a timeout, an exit of bash, or a failed start."""
        launched = self._launched
        if how is Read.TIMEOUT:
            launched.kill()
            self._dead = "the shell was killed when an earlier command timed out"
            self.close()
            return CommandResult(None, cap.text(), time.monotonic() - started, timed_out=True,
                                 truncated=cap.truncated)
        try:
            code = launched.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # stdout closed, but the process lives on: end it
            launched.kill()
            code = None
        duration = time.monotonic() - started
        if not self._started:
            self._dead = f"sandbox failed to start (exit {code}): {preamble or 'no message'}"
            self.close()
            return CommandResult(None, preamble, duration, error=self._dead)
        self._dead = f"the shell has exited (exit code {code})"
        self.close()
        return CommandResult(code, cap.text(), duration, truncated=cap.truncated)

    def _send(self, data: bytes) -> None:
        try:
            self._launched.proc.stdin.write(data)
            self._launched.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # bash is gone: the read that follows sees the end of the stream

    def __enter__(self) -> PersistentShell:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
