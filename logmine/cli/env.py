"""``logmine env show TASK_ID``: what software a task needs and how verify provided it."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from logmine.cli.errors import fail
from logmine.cli.main import app
from logmine.cli.options import JsonOpt, StoreOpt, store_path
from logmine.cli.output import out
from logmine.store import CATALOG, Store
from logmine.verify.report import environment_of, render_environment

env_app = typer.Typer(help="Task environments: what each task's start state needs (docs/environments.md).",
                      no_args_is_help=True)
app.add_typer(env_app, name="env")


@env_app.command("show")
def env_show_cmd(
    task_id: Annotated[str, typer.Argument(help="A task id (see the tasks view, or `logmine export tmax` rows).")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The detected environment of a verified task (languages, manifests, tools, versions) and the mode
    verify used to provide it (host binds, a built prefix or image), with its reasons."""
    path = store_path(store)
    if not (path / CATALOG).exists():
        fail(f"no logmine store at {path}", "run `logmine ingest` first or pass --store")
    with Store(path, read_only=True) as opened:
        row = environment_of(opened, task_id)
    if row is None:
        fail(f"no environment recorded for task {task_id} in {path}", "run `logmine verify` first")
    if as_json:
        out.print_json(json.dumps(row, default=str))
    else:
        render_environment(out, row)
