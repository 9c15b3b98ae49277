"""The app with every command registered: what ``logmine --help`` lists and what tests drive.

A command line that names its command imports only the module registering it
(:data:`logmine.__main__.COMMAND_MODULES`), so ``logmine ingest`` does not import training or export.
"""

from logmine.cli import (  # noqa: F401 - registers the commands
    env,
    evaluate,
    export,
    funnel,
    ingest,
    maintenance,
    run,
    segment,
    train,
    verify,
)
from logmine.cli.main import app

__all__ = ["app"]
