"""``logmine yield``: how many sessions became validated tasks, and at each step why the rest stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from logmine.cli.errors import fail
from logmine.cli.main import app
from logmine.cli.options import JsonOpt, StoreOpt, store_path
from logmine.cli.output import out
from logmine.store import CATALOG


@app.command("yield")
def yield_cmd(
    store: StoreOpt = None,
    export: Annotated[Optional[Path], typer.Option(
        "--export", help="A `logmine export tmax --out` directory: adds the last step, bundles reproduced.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The yield funnel: sessions → sessions with tasks → tasks → tasks with verifier candidates →
    rebuilt → environment provided → validated (→ bundle reproduced, with --export), and at each
    step how many stopped, why, and the flag or action that would fix it (docs/verify.md)."""
    from logmine.export.funnel import read_funnel, render_funnel

    store = store_path(store)
    if not (store / CATALOG).exists():
        fail(f"no logmine store at {store}", "run `logmine ingest` first or pass --store")
    if export is not None and not export.is_dir():
        fail(f"no such directory: {export}", "pass the --out directory of `logmine export tmax`")
    funnel = read_funnel(store, export)
    if as_json:
        out.print_json(json.dumps(funnel.to_dict()))
    else:
        render_funnel(out, funnel)
