"""``logmine ingest`` on unchanged input is answered from the store's record of what it last read
(``logmine.ingest.seen``), with the summary the full run prints, and only when nothing changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from logmine.__main__ import quick_ingest_args
from logmine.ingest import seen
from logmine.ingest.run import IngestConfig, ingest
from logmine.ingest.summary import summary_dict
from logmine.store import CATALOG, DEFAULT_STORE, Store

GENERATED = FIXTURES / "codex-generated"


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    shutil.copytree(GENERATED, corpus)
    return corpus


def _full(store: Path, *paths: Path) -> dict:
    return _comparable(summary_dict(ingest(IngestConfig(paths=paths, store=store)), store))


def _quick(store: Path, *paths: Path) -> dict | None:
    summary = seen.quick_summary(store, list(paths))
    return None if summary is None else _comparable(summary_dict(summary, store))


def _comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "elapsed_s"}


def test_an_unchanged_rerun_is_answered_as_the_full_run_answers_it(tmp_path):
    corpus, store = _corpus(tmp_path), tmp_path / "store"
    live = corpus / "live.jsonl"  # a session still being written: its last line waits
    live.write_bytes(next(GENERATED.rglob("*.jsonl")).read_bytes() + b'{"type":"event_msg","payl')
    assert _quick(store, corpus) is None  # no store yet
    _full(store, corpus)
    quick = _quick(store, corpus)
    assert quick is not None and quick["pending_partial_lines"]
    assert quick == _full(store, corpus)  # the full run finds the same: every file unchanged
    assert _quick(store, corpus) == quick  # and leaves its record again
    subset = sorted(corpus.rglob("*.jsonl"))[:2]
    assert _quick(store, *subset)["files"] == {"seen": 2, "unchanged": 2}


@pytest.mark.parametrize("change", ["touch", "append", "add", "remove_record", "catalog_written", "wal", "version",
                                    "part_deleted", "part_replaced"])
def test_any_change_sends_the_rerun_to_the_full_run(tmp_path, change):
    corpus, store = _corpus(tmp_path), tmp_path / "store"
    _full(store, corpus)
    assert _quick(store, corpus) is not None
    path = sorted(corpus.rglob("*.jsonl"))[0]
    if change == "touch":
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    elif change == "append":
        with path.open("ab") as handle:
            handle.write(path.read_bytes().splitlines(keepends=True)[-1])
    elif change == "add":
        shutil.copy(path, corpus / "another.jsonl")
    elif change == "remove_record":
        (store / seen.SEEN).unlink()
    elif change == "catalog_written":  # any command that opens the store to write (segment, verify, ...)
        Store(store).close()
    elif change == "wal":
        (store / f"{CATALOG}.wal").write_bytes(b"")
    elif change == "version":
        body = json.loads((store / seen.SEEN).read_text())
        (store / seen.SEEN).write_text(json.dumps({**body, "logmine": "0.0.0"}))
    elif change == "part_deleted":  # the full run drops it and reads its files again
        next((store / "events").glob("part-*.parquet")).unlink()
    elif change == "part_replaced":  # a damaged or foreign part: same name, other bytes
        part = next((store / "sessions").glob("part-*.parquet"))
        part.write_bytes(part.read_bytes()[:-9] + b"PAR1")
    assert _quick(store, corpus) is None
    if change != "wal":
        _full(store, corpus)
        assert _quick(store, corpus) is not None  # the full run records it again


def test_no_record_while_a_file_is_bad_nor_while_a_writer_holds_the_store(tmp_path):
    corpus, store = _corpus(tmp_path), tmp_path / "store"
    (corpus / "empty.jsonl").write_bytes(b"")
    _full(store, corpus)
    assert not (store / seen.SEEN).exists() and _quick(store, corpus) is None  # the bad file is reported again
    (corpus / "empty.jsonl").unlink()
    _full(store, corpus)
    with Store(store):
        assert _quick(store, corpus) is None  # a writer holds the lock (and rewrites the catalog)


def test_the_program_answers_without_duckdb_pyarrow_or_the_cli(tmp_path):
    corpus, store = _corpus(tmp_path), tmp_path / "store"
    _full(store, corpus)
    code = ("import sys; from logmine.__main__ import answered_unchanged; "
            f"ok = answered_unchanged(['ingest', {str(corpus)!r}, '--store', {str(store)!r}, '--json'], 0.0); "
            "print(ok, sorted(m for m in ('duckdb', 'pyarrow', 'logmine.cli', 'typer') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    summary, verdict = done.stdout.rsplit("\n", 2)[0:2]
    assert verdict == "True []"
    assert _comparable(json.loads(summary)) == _full(store, corpus)
    cmd = [sys.executable, "-m", "logmine", "ingest", str(corpus), "--store", str(store)]
    env = {**os.environ, "COLUMNS": "300"}
    quick_table = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    (store / seen.SEEN).unlink()
    full_table = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    assert (store / seen.SEEN).exists()
    drop_time = lambda text: [line for line in text.splitlines() if " MB in " not in line]  # noqa: E731
    assert " unchanged, 0 bad" in quick_table and drop_time(quick_table) == drop_time(full_table)


def test_the_constants_it_shares_with_the_store_and_the_cli(tmp_path):
    assert seen.CATALOG == CATALOG and Path(quick_ingest_args(["ingest"]).store) == DEFAULT_STORE
    Store(tmp_path / "s").close()
    assert (tmp_path / "s" / seen.LOCK).exists()


@pytest.mark.parametrize(("argv", "quick"), [
    (["ingest", "a", "--store", "s", "--json"], ("s", True)),
    (["--debug", "ingest", "a", "-q", "--store=s", "--jobs", "2", "--batch-mb=4"], ("s", False)),
    (["ingest", "a", "--executor", "local", "-j", "1", "--max-line-mb", "8"], (DEFAULT_STORE.name, False)),
    (["ingest", "a", "--executor", "ray"], None),
    (["ingest", "a", "--jobs", "0"], None),  # typer refuses it: the full run says so
    (["ingest", "a", "--jobs"], None),
    (["ingest", "a", "-j=2"], None),
    (["ingest", "a", "--help"], None),
    (["ingest", "a", "--ray-address", "h:1"], None),
    (["ingest", "a", "--pipeline", "p.toml"], None),  # a pipeline file can change any default
    (["ingest", "--pipeline=p.toml", "a", "--json"], None),
    (["ingest", "missing"], None),  # the full run's one-line error
    (["ingest", "a", "--", "b"], None),
    (["segment"], None),
    (["stats", "ingest"], None),
    ([], None),
])
def test_only_plain_ingest_command_lines_are_answered_quickly(tmp_path, monkeypatch, argv, quick):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOGMINE_STORE", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    got = quick_ingest_args(argv)
    assert (None if got is None else (str(got.store), got.as_json)) == quick
    monkeypatch.setenv("RAY_ADDRESS", "h:1")  # implies --executor ray
    assert quick_ingest_args(argv) is None


def test_json_to_a_pipe_is_the_text_rich_prints(tmp_path, capsys):
    from collections import Counter

    from rich.console import Console

    from logmine.ingest.summary import IngestSummary, print_summary

    summary = IngestSummary(files_seen=2, changes=Counter(unchanged=2), pending=[("/logs/é/" + "x" * 120, 7)],
                            redactions=Counter(jwt=3), elapsed_s=0.5)
    store = tmp_path / ("ß" * 90)
    print_summary(None, summary, store, as_json=True)  # stdout is captured: not a terminal
    direct = capsys.readouterr().out
    Console(force_terminal=False).print_json(json.dumps(summary_dict(summary, store)))
    assert direct == capsys.readouterr().out and json.loads(direct)["pending_partial_lines"][0]["bytes"] == 7
