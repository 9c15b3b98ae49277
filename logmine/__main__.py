"""The ``logmine`` program: ``python -m logmine`` and the console script both call :func:`main`.

Importing this module costs nothing but the standard library, on purpose. A worker process that
multiprocessing starts (ingest's forkserver pool) re-imports the program's main script, the console
script that does ``from logmine.__main__ import main``, before it runs its unit: were the command
modules imported here, every worker would import the whole CLI (and a worker importing
:mod:`logmine.cli` used to start a forkserver of its own from the copied ``sys.argv``, and die).

Before the CLI imports its command modules (a third of a second), :func:`main` starts what the
command will need: for ``logmine ingest`` with local workers (the default), ingest's forkserver, which
imports ingest and compiles the redaction rules on the other core meanwhile
(:mod:`logmine.executor.forkserver`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main() -> None:
    """Run the command line in ``sys.argv``."""
    start_for(sys.argv[1:])
    from logmine.cli import app

    app()


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


if __name__ == "__main__":
    main()
