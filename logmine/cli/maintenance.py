"""``logmine doctor``, ``logmine scan`` and ``logmine sql``: check a store, check what would be published,
and query a store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from logmine.cli.errors import fail
from logmine.cli.main import app
from logmine.cli.options import JsonOpt, StoreOpt, store_path
from logmine.cli.output import out


@app.command("doctor")
def doctor_cmd(
    store: StoreOpt = None,
    repair: Annotated[bool, typer.Option("--repair", help="Unregister bad parts and re-read the source files "
                                         "whose rows they held.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check every registered part and file state of a store; exit 1 while a problem is left."""
    from logmine.ingest.doctor import doctor, doctor_dict, render_doctor

    report = doctor(store_path(store), repair=repair)
    if as_json:
        out.print_json(json.dumps(doctor_dict(report)))
    else:
        render_doctor(out, report)
    if not report.ok:
        raise typer.Exit(1)


@app.command("scan")
def scan_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Logs, directories or an export (text files, .tar.gz "
                                                "members and .parquet string columns are read).")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    limit: Annotated[int, typer.Option(help="Rows of the per-file and per-finding tables.", min=1)] = 30,
) -> None:
    """Report what redaction would replace, per kind, per file and per finding (its rule, and why it
    counted: its format, or its context and entropy): check an export before publishing it.

    The pseudonyms of the store (--store, else the default store, when it has a redaction key) are
    replacements already, not findings. Exit code 1 when anything was found (so a script can refuse
    to publish), 0 when clean.
    """
    from logmine.redact import scan, store_mask

    missing = [p for p in paths if not p.exists()]
    if missing:
        fail(f"no such file or directory: {missing[0]}")
    report = scan(paths, mask=store_mask(store_path(store)))
    if as_json:
        out.print_json(json.dumps({**report.summary(), "files": report.rows(), "found": report.finding_rows(),
                                   "skipped": report.skipped}))
    else:
        _render_scan(report, limit)
    if report.total:
        raise typer.Exit(1)


def _render_scan(report, limit: int) -> None:
    summary = report.summary()
    if report.total:
        kinds = Table("kind", "found", "files", title="would be redacted", title_justify="left")
        for row in report.kind_rows():
            kinds.add_row(row["kind"], str(row["count"]), str(row["files"]))
        out.print(kinds)
        files = Table("file", "kind", "found", title_justify="left")
        for row in report.rows()[:limit]:
            files.add_row(escape(row["file"]), row["kind"], str(row["count"]))
        out.print(files)
        found = Table("file", "kind", "rule", "why", "where", title="findings", title_justify="left")
        for row in report.finding_rows()[:limit]:
            found.add_row(escape(Path(row["file"]).name), row["kind"], row["rule"], row["why"], escape(row["preview"]))
        out.print(found)
    out.print(f"{summary['findings']} finding(s) in {summary['files_with_findings']} of {summary['files_read']} "
              f"files read ({summary['files_skipped']} skipped, {summary['bytes_read']} bytes)", highlight=False)


@app.command("sql")
def sql_cmd(
    query: Annotated[str, typer.Argument(help="A DuckDB query over the store's views (sessions, events, "
                                         "tool_calls, tasks, verifiers, …).")],
    store: StoreOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per row, one per line.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV with a header line.")] = False,
    limit: Annotated[int, typer.Option(help="Rows shown in the table (--json and --csv print all).", min=1)] = 50,
) -> None:
    """Query a store with SQL, read-only, from any directory and after the store was moved: the same
    views as ``logmine.open_store(path)`` in Python."""
    import duckdb

    from logmine.store import open_store

    con = open_store(store_path(store))
    try:
        cur = con.execute(query)
        if cur.description is None:
            return
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    except duckdb.Error as exc:
        fail(f"query failed: {str(exc).splitlines()[0]}")
    finally:
        con.close()
    _print_rows(names, rows, "json" if as_json else "csv" if csv else "table", limit)


def _print_rows(names: list[str], rows: list[tuple], how: str, limit: int) -> None:
    import sys

    if how == "json":
        for row in rows:
            sys.stdout.write(json.dumps(dict(zip(names, row)), default=str, ensure_ascii=False) + "\n")
    elif how == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(rows)
    else:
        table = Table(*names)
        for row in rows[:limit]:
            table.add_row(*(escape("" if v is None else str(v)) for v in row))
        out.print(table)
        more = f" (first {limit} shown: --limit, --json or --csv for all)" if len(rows) > limit else ""
        out.print(f"{len(rows)} row(s){more}", highlight=False)
