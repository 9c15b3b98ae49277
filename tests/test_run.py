"""`logmine run --demo`: the whole pipeline on the shipped corpus, with real verification."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, query
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.export.tmax import SCHEMA
from logmine.run import RunConfig, run_pipeline
from logmine.store import Store, StoreError


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_run_demo_from_a_clean_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "--demo"])
    assert result.exit_code == 0, result.output
    assert "logmine run: outputs" in result.output
    store = tmp_path / "logmine-store"
    rows = query(store, "SELECT v.kind, v.mode, v.status FROM verifiers v JOIN sessions s USING (session_id) "
                        "WHERE s.cwd = '/home/dev/projects/calc'")
    # the calc session's repository ships with the demo: its tasks are rebuilt, replayed and validated
    assert {(r["kind"], r["mode"]) for r in rows if r["status"] == "validated"} == {
        ("test_command", None), ("file_diff", "exact"), ("file_diff", "hunks")}
    assert all(r["status"] == "validated" for r in rows)
    tmax = pq.read_table(tmp_path / "logmine-out/tmax/data/train-00000-of-00001.parquet").to_pylist()
    assert len(tmax) == 2
    schema = json.loads(SCHEMA.read_text())
    for row in tmax:
        jsonschema.validate(row, schema)
        assert (tmp_path / "logmine-out/tmax/tasks" / row["ground_truth"] / "tests/test.sh").is_file()
    sft = pq.read_table(next((tmp_path / "logmine-out/sft/data").glob("*.parquet"))).to_pylist()
    assert len(sft) == 2 and all(r["messages"][1]["role"] == "user" for r in sft)
    again = CliRunner().invoke(app, ["run", "--demo"])  # incremental and resumable: nothing to redo
    assert again.exit_code == 0, again.output
    assert "11 seen: 0 new, 0 grown, 0 rewritten, 11 unchanged" in again.output


def test_run_reads_the_pipeline_once_and_opens_the_store_once(tmp_path):
    """The pipeline file is read before ingest and never again (it is gone by the time segment
    runs); from segment on, the stages share the store ``run`` opened (nobody else can open it)."""
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text(f"[ingest]\npaths = [{json.dumps(str(FIXTURES / 'codex-generated'))}]\n"
                        f"store = {json.dumps(str(tmp_path / 'store'))}\n"
                        "[segment]\nextra_followup_phrases = ['carry on']\n"
                        f"[export]\nout = {json.dumps(str(tmp_path / 'out'))}\n")
    held = {}

    def on_stage(name: str) -> None:
        pipeline.unlink(missing_ok=True)
        if name != "ingest":
            try:
                Store(tmp_path / "store", read_only=True).close()
                held[name] = False
            except StoreError:
                held[name] = True

    summary = run_pipeline(RunConfig(pipeline=pipeline), on_stage=on_stage)
    assert summary.segment.tasks > 0 and summary.store == tmp_path / "store"
    assert held == {"segment": True, "verify": True, "export sft": True, "export tmax": True}
    assert (tmp_path / "out" / "sft" / "README.md").is_file()
