"""What ``logmine`` starts before it imports its command modules (a third of a second of imports).

For ``logmine ingest`` with worker processes (the default), that is ingest's forkserver, which
imports ingest and compiles the redaction rules on the other core meanwhile, instead of after the
driver is ready (:mod:`logmine.executor.forkserver`). Nothing here may import more than the
standard library and :mod:`logmine.executor`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def start_early() -> bool:
    """:func:`start_for` this process's arguments, when it is the ``logmine`` program (the console
    script, or ``python -m logmine``), not another program that imports the CLI (a test runner)."""
    launcher = sys.argv[0] if sys.argv else ""
    if os.path.basename(launcher) != "logmine" and not launcher.endswith(os.path.join("logmine", "__main__.py")):
        return False
    return start_for(sys.argv[1:])


def start_for(argv: Sequence[str]) -> bool:
    """Start what the command in ``argv`` (the arguments after ``logmine``) will need; whether it did."""
    if not wants_ingest_workers(argv):
        return False
    from logmine.executor import forkserver

    forkserver.start(forkserver.INGEST_PRELOAD)
    return True


def wants_ingest_workers(argv: Sequence[str]) -> bool:
    """Is ``argv`` an ``ingest`` that reads with local worker processes (not ``--help``, ``--jobs 1``
    or another executor)? A pipeline file may still say ``jobs = 1``: the server then idles."""
    args = list(argv)
    command = next((a for a in args if not a.startswith("-")), None)
    if command != "ingest" or {"--help", "-h"} & set(args):
        return False
    return _option(args, "--jobs", "-j") != "1" and _option(args, "--executor") in (None, "local")


def _option(args: list[str], *names: str) -> str | None:
    """The value of the last ``--name VALUE`` or ``--name=VALUE`` in ``args``."""
    value = None
    for i, arg in enumerate(args):
        if arg in names and i + 1 < len(args):
            value = args[i + 1]
        elif arg.split("=", 1)[0] in names and "=" in arg:
            value = arg.split("=", 1)[1]
    return value
