"""A store is a directory: it works from any cwd, after `mv`, and a `cp -r` copy is independent."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, query
from typer.testing import CliRunner

import logmine
from logmine.cli.commands import app
from logmine.ingest.report import stats
from logmine.ingest.run import IngestConfig, ingest
from logmine.store import Store

SESSION = next((FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl"))


def _ingest_relative(tmp_path: Path) -> Path:
    """Ingest with a cwd-relative store path, as `logmine ingest` run from a project directory does."""
    work = tmp_path / "work"
    work.mkdir()
    old = os.getcwd()
    os.chdir(work)
    try:
        ingest(IngestConfig(paths=(SESSION,), store=Path("store")))
    finally:
        os.chdir(old)
    return work / "store"


def _events(store: Path) -> int:
    with Store(store, read_only=True) as opened:
        return opened.con.execute("SELECT count(*) FROM events").fetchone()[0]


def test_stats_by_absolute_path_from_another_cwd(tmp_path):
    store = _ingest_relative(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    old = os.getcwd()
    os.chdir(elsewhere)
    try:
        counts = stats(store)
    finally:
        os.chdir(old)
    assert counts["by_version"] and counts["by_version"][0]["events"] > 0


def test_persisted_part_paths_are_relative(tmp_path):
    store = _ingest_relative(tmp_path)
    paths = [r["path"] for r in query(store, "SELECT path FROM parts")]
    assert paths and all("/" not in p for p in paths)


def test_moved_store_reads_and_ingests(tmp_path):
    store = _ingest_relative(tmp_path)
    n = _events(store)
    moved = tmp_path / "moved"
    shutil.move(store, moved)
    assert _events(moved) == n
    assert stats(moved)["by_version"][0]["events"] == n
    summary = ingest(IngestConfig(paths=(SESSION,), store=moved))
    assert summary.changes["unchanged"] == 1 and _events(moved) == n


def test_copy_is_independent_of_its_original(tmp_path):
    store = _ingest_relative(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    for part in (copy / "events").glob("part-*.parquet"):
        part.unlink()
    with Store(copy, read_only=True) as opened:  # never reads the original's events part
        assert opened.con.execute("SELECT count(*) FROM events").fetchone()[0] == 0
        assert any("events/part-" in p for p in opened.problems)
    assert stats(copy)["by_version"][0]["events"] == 0
    assert _events(store) > 0


def _plain_count(catalog: Path, **config) -> int:
    con = duckdb.connect(str(catalog), read_only=True, config=config)
    try:
        return con.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        con.close()


def test_a_plain_duckdb_connection_reads_a_moved_store_from_any_cwd(tmp_path, monkeypatch):
    store = _ingest_relative(tmp_path)
    n = _events(store)
    moved = tmp_path / "moved"
    shutil.move(store, moved)
    os.chmod(moved / "catalog.duckdb", 0o444)  # nothing rewrote the views since the move
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    try:
        assert _plain_count(moved / "catalog.duckdb") == n
        monkeypatch.chdir(moved)
        assert _plain_count(Path("catalog.duckdb")) == n
    finally:
        os.chmod(moved / "catalog.duckdb", 0o644)


def test_a_reader_with_its_own_temp_directory_reads_the_store_where_it_was_written(tmp_path):
    store = _ingest_relative(tmp_path)
    n = _events(store)
    assert _plain_count(store / "catalog.duckdb", temp_directory=str(tmp_path / "spill")) == n


def test_an_older_catalog_naming_absolute_paths_is_rewritten_by_a_read_only_command(tmp_path):
    store = _ingest_relative(tmp_path)
    n = _events(store)
    con = duckdb.connect(str(store / "catalog.duckdb"))  # the views as logmine wrote them before
    parts = [f"'{store}/events/{p}'" for (p,) in con.execute(
        "SELECT path FROM parts WHERE table_name = 'events'").fetchall()]
    con.execute(f"CREATE OR REPLACE VIEW events AS SELECT * FROM read_parquet(['{store}/events/_empty.parquet', "
                f"{', '.join(parts)}], union_by_name = true)")
    con.close()
    moved = tmp_path / "moved"
    shutil.move(store, moved)
    with pytest.raises(duckdb.IOException):  # the old views name the old place
        _plain_count(moved / "catalog.duckdb")
    stats(moved)  # a read-only command rewrites them for the new place
    assert _plain_count(moved / "catalog.duckdb") == n


def test_open_store_and_logmine_sql_read_a_moved_store_from_any_cwd(tmp_path, monkeypatch):
    store = _ingest_relative(tmp_path)
    n = _events(store)
    moved = tmp_path / "moved"
    shutil.move(store, moved)
    os.chmod(moved / "catalog.duckdb", 0o444)  # the views cannot be rewritten: open_store needs no rewrite
    monkeypatch.chdir(tmp_path)
    try:
        con = logmine.open_store(moved)
        try:
            assert con.execute("SELECT count(*) FROM events").fetchone()[0] == n
        finally:
            con.close()
        done = CliRunner().invoke(app, ["sql", "SELECT kind, count(*) AS n FROM events GROUP BY kind",
                                        "--store", str(moved), "--json"])
        assert done.exit_code == 0, done.output
        rows = [json.loads(line) for line in done.output.splitlines()]
        assert sum(r["n"] for r in rows) == n
        csv = CliRunner().invoke(app, ["sql", "SELECT count(*) AS n FROM events", "--store", str(moved), "--csv"])
        assert csv.output.splitlines() == ["n", str(n)]
        bad = CliRunner().invoke(app, ["sql", "SELECT nope FROM events", "--store", str(moved)])
        assert bad.exit_code == 1 and "query failed: Binder Error" in bad.output and "Traceback" not in bad.output
    finally:
        os.chmod(moved / "catalog.duckdb", 0o644)
