"""The ``logmine`` app: the root command group and its options (``--version``, ``--debug``).

The command modules (:mod:`logmine.cli.ingest`, ...) register their commands on :data:`app`;
:mod:`logmine.cli.commands` imports them all, a command line only its own. Every exception escaping a command passes through
:meth:`_RootGroup.invoke`, the one place it becomes an exit (see :mod:`logmine.cli.errors`).
"""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from logmine import __version__
from logmine.cli.errors import exit_for
from logmine.cli.output import out


class _RootGroup(TyperGroup):
    """The ``logmine`` group: runs the chosen command, and turns whatever escapes it into an exit."""

    def invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, TyperException):
            raise  # --help, typer.Exit, typer.Abort and usage errors keep their own exit
        except (Exception, KeyboardInterrupt) as exc:
            exit_for(exc, debug=bool(ctx.params.get("debug")))


app = typer.Typer(
    name="logmine",
    cls=_RootGroup,
    help="Turn Codex CLI session logs into verified training data: ingest → segment → verify → export → train.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="On an unexpected error, show the Python traceback "
                                        "instead of writing it to a file.")] = False,
) -> None:
    if version:
        out.print(f"logmine {__version__}")
        raise typer.Exit()
