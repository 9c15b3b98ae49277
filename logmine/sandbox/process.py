"""Running one sandbox process from the host: start it, read it against a deadline, end all of it.

Backends supply the argv and how to kill everything the process started; this module owns reading
up to the start token (see inside.py), capping, timing.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .output import OutputCap, Read, Stream
from .result import CommandResult

PREAMBLE_BYTES = 4000  # what a sandbox that failed to start printed (bwrap: ..., setpriv: ...)


@dataclass
class Launched:
    """A running sandbox process; ``kill`` ends it and every process it started, then reaps it."""

    proc: subprocess.Popen
    stream: Stream
    token: bytes
    kill: Callable[[], None]
    release: Callable[[], None] = field(default=lambda: None)  # close extra fds once it is over


def spawn(
    argv: Sequence[str],
    env: dict[str, str],
    *,
    token: str,
    stdin: int = subprocess.DEVNULL,
    pass_fds: Sequence[int] = (),
    kill: Callable[[subprocess.Popen], None],
    release: Callable[[], None] = lambda: None,
) -> Launched:
    """Start ``argv`` in a new session, stdout and stderr on one pipe. Raises OSError."""
    proc = subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    return Launched(proc, Stream(proc.stdout.fileno()), token.encode(), lambda: kill(proc), release)


def await_start(launched: Launched, deadline: float) -> tuple[Read, str]:
    """Read up to the start token. Returns how the read ended and what came before the token."""
    preamble = OutputCap(PREAMBLE_BYTES)
    how = launched.stream.read_until(launched.token, preamble.write, deadline)
    return how, preamble.text().strip()


def run_once(launched: Launched, started: float, timeout_s: float, output_bytes: int) -> CommandResult:
    """Read a one-shot command to its end (or its deadline) and collect its result."""
    deadline = started + timeout_s
    try:
        how, preamble = await_start(launched, deadline)
        if how is Read.EOF:
            code = _wait(launched)
            return CommandResult(None, preamble, time.monotonic() - started,
                                 error=f"sandbox failed to start (exit {code}): {preamble or 'no message'}")
        cap = OutputCap(output_bytes)
        if how is Read.FOUND:
            how = launched.stream.read_until(None, cap.write, deadline)
        if how is Read.TIMEOUT:
            launched.kill()
            return CommandResult(None, cap.text(), time.monotonic() - started, timed_out=True,
                                 truncated=cap.truncated)
        try:
            code = launched.proc.wait(timeout=max(deadline - time.monotonic(), 0.001))
        except subprocess.TimeoutExpired:  # output closed early, process still running
            launched.kill()
            return CommandResult(None, cap.text(), time.monotonic() - started, timed_out=True,
                                 truncated=cap.truncated)
        return CommandResult(code, cap.text(), time.monotonic() - started, truncated=cap.truncated)
    finally:
        finish(launched)


def finish(launched: Launched) -> None:
    """Make sure nothing is left running, then release the pipes."""
    if launched.proc.poll() is None:
        launched.kill()
    launched.proc.stdout.close()
    if launched.proc.stdin:
        try:
            launched.proc.stdin.close()
        except OSError:
            pass
    launched.release()


def _wait(launched: Launched) -> int | None:
    try:
        return launched.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        launched.kill()
        return None
