"""A forkserver started as early as possible, which dies with the process that started it.

Ingest's worker processes are forked from a forkserver that first imports ingest and compiles the
redaction rules (a third of a second). Started by :func:`start` before the driver has imported its
own modules (``logmine ingest`` does so in :func:`logmine.__main__.main`), that import runs on the
other core instead of before the first file is read.

Neither the forkserver nor a worker outlives the driver: each asks the kernel for SIGKILL when its
parent dies (:func:`die_with_parent`; the forkserver from its preload module through
:func:`adopt_if_forkserver`, each worker through the pool initializer :func:`worker_start`).
Without it, a driver killed with ``kill -9`` left its workers blocked for ever writing results to a
pipe nobody read, and the forkserver with them.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.forkserver
import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

INGEST_PRELOAD = ("logmine.ingest.worker",)  # what ingest's forkserver imports: the rules, compiled once
PARENT_ENV = "LOGMINE_FORKSERVER_PARENT"  # the pid of the process that started the forkserver
_PR_SET_PDEATHSIG = 1


def start(preload: Sequence[str]) -> multiprocessing.context.BaseContext:
    """The forkserver context, its server started (if it is not yet) with ``preload`` imported."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    with _environ_set(PARENT_ENV, str(os.getpid())):  # read by adopt_if_forkserver in the server
        multiprocessing.forkserver.ensure_running()
    return context


@contextmanager
def _environ_set(name: str, value: str) -> Iterator[None]:
    """``os.environ[name] = value`` for the duration, then as it was."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


def adopt_if_forkserver() -> None:
    """Called by a preload module: in a forkserver that :func:`start` started, die with its parent."""
    if os.environ.get(PARENT_ENV) == str(os.getppid()):
        die_with_parent(os.getppid())


def worker_start() -> None:
    """Pool initializer: a worker dies with the forkserver that forked it."""
    die_with_parent()


def die_with_parent(parent: int | None = None) -> None:
    """On Linux, be killed when the parent process dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere
    nothing. ``parent``: the pid the parent must have, when known (it may have died already)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:  # gone before the request took effect
        os.kill(os.getpid(), signal.SIGKILL)
