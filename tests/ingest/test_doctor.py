"""`doctor` reports every problem of a store and repairs by re-reading the sources."""

from __future__ import annotations

import io
import shutil

from conftest import FIXTURES, query
from rich.console import Console

from logmine.ingest.doctor import doctor, doctor_dict, render_doctor
from logmine.ingest.run import IngestConfig, ingest

SESSIONS = sorted((FIXTURES / "codex-generated").glob("codex-0.*/*.jsonl"))[:2]


def _store(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    for path in SESSIONS:
        shutil.copy(path, inputs / path.name)
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(inputs,), store=store))
    return store, inputs


def test_healthy_store_has_no_problem(tmp_path):
    store, _ = _store(tmp_path)
    report = doctor(store)
    assert report.ok and report.problems == []


def test_doctor_reports_then_repairs(tmp_path):
    store, inputs = _store(tmp_path)
    n = query(store, "SELECT count(*) AS n FROM events")[0]["n"]
    (events,) = (store / "events").glob("part-*.parquet")
    (sessions,) = (store / "sessions").glob("part-*.parquet")
    events.unlink()
    data = sessions.read_bytes()
    sessions.write_bytes(data[:4] + b"\0" * (len(data) - 8) + data[-4:])
    gone = inputs / SESSIONS[1].name
    gone.unlink()

    report = doctor(store)
    kinds = sorted((p.kind, p.path) for p in report.problems)
    assert kinds == sorted([("missing part", f"events/{events.name}"), ("unreadable part", f"sessions/{sessions.name}"),
                            ("source gone", str(gone))])
    assert not report.ok and doctor_dict(report)["remaining"] == doctor_dict(report)["problems"]

    repaired = doctor(store, repair=True)
    assert [(p.kind, p.path) for p in repaired.remaining] == [("stale file", str(gone))]
    assert query(store, "SELECT count(*) AS n FROM sessions")[0]["n"] == 1  # the file still there, re-read
    assert 0 < query(store, "SELECT count(*) AS n FROM events")[0]["n"] < n
    out = io.StringIO()
    render_doctor(Console(file=out, width=200), repaired)
    assert "repaired missing part: events/" in out.getvalue()
    assert out.getvalue().splitlines()[-1] == f"store {store}: 1 problem(s) left"
