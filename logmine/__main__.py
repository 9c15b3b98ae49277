"""The ``logmine`` program: ``python -m logmine`` and the console script both call :func:`main`.

Importing this module costs nothing but the standard library, on purpose. A worker process that
multiprocessing starts (ingest's forkserver pool) re-imports the program's main script, the console
script that does ``from logmine.__main__ import main``, before it runs its unit: were the command
modules imported here, every worker would import the whole CLI (and a worker importing
:mod:`logmine.cli` used to start a forkserver of its own from the copied ``sys.argv``, and die).

A command line imports only the CLI module of the command it names (:data:`COMMAND_MODULES`;
all of them only for ``--help`` or no command). Before that, :func:`main` starts what the command
will need: for ``logmine ingest`` with local workers (the default), ingest's forkserver, which
imports ingest and compiles the redaction rules on the other core meanwhile
(:mod:`logmine.executor.forkserver`).
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


def main() -> None:
    """Run the command line in ``sys.argv``; it ends the process (an ``ingest`` at once, once its
    exit handlers have run: :func:`exit_without_teardown`)."""
    started = time.monotonic()
    if answered_unchanged(sys.argv[1:], started):
        return
    module = command_module(sys.argv[1:])
    if module == "ingest":
        # numpy (which pyarrow imports) starts OpenBLAS's thread pool, whose threads spin on import:
        # 0.09 CPU s in each of the driver and the forkserver, on 2 cores, for BLAS ingest never calls
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    start_for(sys.argv[1:])
    if module is None:
        from logmine.cli.commands import app
    else:  # only the command's own module: `logmine ingest` imports neither training nor export
        importlib.import_module(f"logmine.cli.{module}")
        from logmine.cli.main import app
    if module == "ingest":
        exit_without_teardown(app)
    app()


def exit_without_teardown(app) -> None:
    """Run ``app``, then end the process as soon as its exit handlers have run and its output is
    flushed, without tearing the interpreter down: freeing every object of pyarrow, DuckDB and the
    rest took a third of a second after an ingest had printed its summary (strace: last write to
    exit). Only for commands whose process holds no thread of its own at exit (``ingest``, ``stats``)."""
    try:
        app()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()  # what Python runs at exit before its teardown (temporary dirs, logging)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said on it
            pass
    os._exit(code or 0)


#: The module of :mod:`logmine.cli` that registers each command (tests/cli/test_early.py keeps this
#: complete and true).
COMMAND_MODULES = {
    "ingest": "ingest", "stats": "ingest", "segment": "segment", "verify": "verify", "export": "export",
    "train": "train", "filter": "evaluate", "eval": "evaluate", "run": "run", "doctor": "maintenance",
    "scan": "maintenance", "sql": "maintenance", "env": "env", "yield": "funnel",
}


def command_module(argv: Sequence[str]) -> str | None:
    """The module registering the command ``argv`` names, else None (no command, ``--help``, an
    unknown name: the whole CLI loads)."""
    return COMMAND_MODULES.get(command_name(argv))


def command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is no option (the root options take no value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def answered_unchanged(argv: Sequence[str], started: float) -> bool:
    """Print the summary of an ``ingest`` whose input is unchanged since the store's last ingest,
    without importing the CLI (:mod:`logmine.ingest.seen`); whether it did. Only the plainest
    command lines qualify (:func:`quick_ingest_args`); anything else runs in full."""
    args = quick_ingest_args(argv)
    if args is None:
        return False
    from logmine.ingest.discover import default_inputs
    from logmine.ingest.seen import quick_summary

    inputs = list(args.paths) or default_inputs()
    summary = quick_summary(args.store, inputs) if inputs else None
    if summary is None:
        return False
    from logmine.ingest.summary import print_summary

    summary.elapsed_s = time.monotonic() - started
    print_summary(None, summary, args.store, args.as_json)
    return True


@dataclass(frozen=True, slots=True)
class QuickIngest:
    """The options of an ``ingest`` command line that matter when nothing is to be read."""

    paths: tuple[Path, ...]
    store: Path
    as_json: bool


def quick_ingest_args(argv: Sequence[str]) -> QuickIngest | None:
    """``argv`` as an ``ingest`` of paths (or the default inputs, or ``--demo``) into a store, when it
    is one that only these options shape; None for anything else (another command, ``--help``, an
    executor other than local, a pipeline file, a value typer would refuse, an option this does not
    know). ``$LOGMINE_STORE`` and ``$RAY_ADDRESS`` are read as the CLI reads them (:mod:`logmine.locations`)."""
    from logmine.locations import ray_address, store_from_env  # standard library only

    args = list(argv)
    if args[:1] == ["--debug"]:
        args = args[1:]
    if args[:1] != ["ingest"] or ray_address():
        return None
    paths: list[Path] = []
    store = store_from_env() or DEFAULT_STORE
    flags: set[str] = set()
    rest = iter(args[1:])
    for arg in rest:
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in INGEST_FULL_PATH:
            return None
        if name in INGEST_VALUED:
            value = value if eq else next(rest, None)
            if value is None or not INGEST_VALUED[name](value):
                return None
            if name == "--store":
                store = value
        elif arg in INGEST_FLAGS:
            flags.add(INGEST_FLAGS[arg])
        elif arg.startswith("-") or not arg:
            return None
        else:
            paths.append(Path(arg))
    if any(not os.path.lexists(p) for p in paths):
        return None  # the full run's one-line error
    if "demo" in flags:
        from logmine.demo import DEMO_INPUTS

        paths = list(DEMO_INPUTS)
    return QuickIngest(tuple(paths), Path(store), "json" in flags)


# What the quick path knows of `logmine ingest`'s options (declared in logmine/cli/ingest.py).
# tests/cli/test_quick_ingest.py walks the typer command and fails on an option missing here, on a
# flag taken for a valued option or the reverse, and on a value one accepts and the other refuses.
DEFAULT_STORE = "logmine-store"  # logmine.store.DEFAULT_STORE (a test pins them equal)
#: the flags it reads, with what each means here
INGEST_FLAGS = {"--json": "json", "-q": "quiet", "--quiet": "quiet", "--demo": "demo"}


def _count(value: str) -> bool:
    return value.isdigit() and int(value) >= 1


#: the options taking a value, each with the test of a value typer accepts
INGEST_VALUED = {"--store": bool, "--jobs": _count, "-j": _count, "--batch-mb": _count, "--max-line-mb": _count,
                 "--executor": lambda value: value == "local"}
#: the options only the full path answers: another executor, a pipeline file (it can change any
#: default), a redaction style to record, a source filter, the help text
INGEST_FULL_PATH = frozenset({"--ray-address", "--pipeline", "--redact-style", "--source", "--help"})


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
    if command_name(args) != "ingest" or {"--help", "-h"} & set(args):
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
