"""The CLI's one error path: how an exception that escapes a command becomes an exit.

- A :class:`~logmine.errors.LogmineError` (the library's, or :class:`CliError` for a flag the CLI
  refuses) is expected: one line ``Error: <message> (<hint>)`` on stderr, exit code 1.
- ``KeyboardInterrupt``: ``Error: interrupted``, exit code 130. A closed stdout (``| head``): exit 1, quietly.
- Anything else is a bug: one line naming it and the file its full traceback was written to (after
  secret redaction: exception messages can quote log contents), exit code 1. ``logmine --debug``
  lets it propagate instead, so Python prints the traceback (and a debugger can stop there).

:func:`exit_for` is called from one place, the root command group in :mod:`logmine.cli.main`.
"""

from __future__ import annotations

import functools
import os
import platform
import select
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import typer
from rich.markup import escape

from logmine import __version__
from logmine.cli.output import err
from logmine.errors import LogmineError
from logmine.redact import default_redactor

INTERRUPTED_EXIT = 130  # what a shell reports for a process ended by SIGINT


class CliError(LogmineError):
    """A flag or argument the CLI refuses before calling the library (``--repo-map nonsense``)."""


def fail(message: str, hint: str | None = None) -> NoReturn:
    """Refuse the command line: ``Error: <message> (<hint>)``, exit code 1."""
    raise CliError(message, hint)


def require_torch() -> None:
    """Fail in one line, with the install hint, when the ``train`` extra (torch) is missing."""
    try:
        import accelerate  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        fail(f"logmine train needs torch, transformers and accelerate ({exc.name} is missing)",
             "pip install 'logmine[train]'")


def with_hints(hints: dict[type[LogmineError], str]) -> Callable:
    """Decorate a command: a library error of one of these types that carries no hint of its own gets
    the command's (the library cannot know which flag or command to suggest), and goes on up to
    :func:`exit_for`, which prints it."""
    def decorate(command: Callable) -> Callable:
        @functools.wraps(command)
        def run(*args, **kwargs):
            try:
                return command(*args, **kwargs)
            except tuple(hints) as exc:
                if exc.hint is None:
                    exc.hint = next(hint for kind, hint in hints.items() if isinstance(exc, kind))
                raise
        return run
    return decorate


def print_error(text: str) -> None:
    err.print(f"[bold red]Error:[/] {escape(text)}", highlight=False, soft_wrap=True)


def exit_for(exc: BaseException, debug: bool) -> NoReturn:
    """Print ``exc`` as one line and exit; re-raise an unexpected one when ``debug``."""
    if isinstance(exc, LogmineError):
        print_error(exc.one_line())
        raise typer.Exit(1) from None
    if isinstance(exc, KeyboardInterrupt):
        print_error("interrupted")
        raise typer.Exit(INTERRUPTED_EXIT) from None
    if isinstance(exc, BrokenPipeError) and _stdout_closed():  # `logmine ... | head`: nothing to report
        raise typer.Exit(1) from None
    if debug:
        raise exc
    try:
        message = _first_line(str(exc))
        where = f"traceback written to {write_traceback(exc)}"
    except Exception as failure:  # reporting a bug must not raise a second one, nor print unredacted text
        message, where = "", f"its traceback could not be written ({type(failure).__name__})"
    print_error(f"unexpected {type(exc).__name__}{': ' + message if message else ''} — {where} "
                "(run with --debug to see it)")
    raise typer.Exit(1) from None


def write_traceback(exc: BaseException) -> Path:
    """Write the redacted traceback of ``exc`` (with its causes) to a new file in the temporary
    directory, readable by its owner only; returns the path."""
    header = (f"logmine {__version__}, Python {platform.python_version()} on {platform.platform()}\n"
              f"command: {shlex.join(sys.argv)}\n\n")
    text = default_redactor().redact_text(header + "".join(traceback.format_exception(exc)))
    fd, name = tempfile.mkstemp(prefix=f"logmine-traceback-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return Path(name)


def _stdout_closed() -> bool:
    """Is stdout a pipe whose reader left (``logmine … --help | head``)? If so, point it at
    /dev/null: Python's own flush at exit would fail again. The write that failed may have emptied
    the buffer, so a flush that succeeds is not enough: a pipe without a reader polls as an error."""
    try:
        sys.stdout.flush()
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        if not any(events & select.POLLERR for _, events in poll.poll(0)):
            return False
    except (BrokenPipeError, ValueError, OSError):
        pass
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return True


def _first_line(text: str, limit: int = 300) -> str:
    """The first line of an exception message, redacted and cut to ``limit`` characters."""
    line = default_redactor().redact_text(text.strip().split("\n", 1)[0]) if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
