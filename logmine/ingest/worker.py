"""What ingest's worker processes share, made once in the forkserver that forks them.

The forkserver imports this module before it forks the first worker (``set_forkserver_preload``),
so every worker starts with ingest imported, the redaction rules compiled, and pyarrow's one look
for pandas done (:mod:`logmine.store.rows`), instead of each paying for them again.

Neither the forkserver nor a worker outlives the ingest that started it: each asks the kernel for
SIGKILL when its parent dies (:func:`die_with_parent`). Without it, a driver killed with ``kill -9``
left its workers blocked for ever on a result pipe that nobody reads, and the forkserver with them.
"""

from __future__ import annotations

import ctypes
import os
import signal

import pyarrow as pa

from logmine.ingest.run import PARENT_ENV  # and what the workers run
from logmine.redact import ruleset
from logmine.store.rows import table_of

_PR_SET_PDEATHSIG = 1


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


if os.environ.get(PARENT_ENV) == str(os.getppid()):  # this is the forkserver that ingest started
    die_with_parent(os.getppid())
ruleset()
table_of([], pa.schema([]))
