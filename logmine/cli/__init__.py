"""The ``logmine`` command line: thin typer commands over the library.

Each command parses its flags into the stage's config dataclass and calls one library function.
The app and its root options are in :mod:`.main`; the shared pieces in :mod:`.output` (consoles,
progress bars), :mod:`.options` (shared options, flags → config) and :mod:`.errors` (the one error
path: ``Error: …`` on stderr, never a bare traceback); one module per command group registers its
commands on the app when imported. :mod:`.commands` imports them all (``from logmine.cli.commands
import app``); this package imports none, so a command line loads only its own command's module
(:func:`logmine.__main__.main`).
"""
