"""``logmine scan`` and ``logmine doctor`` through the CLI, on real files and a real store."""

from __future__ import annotations

import json
import shutil

from conftest import FIXTURES
from redact.planted import planted
from typer.testing import CliRunner

from logmine.cli.commands import app

runner = CliRunner()


def test_scan_finds_planted_secrets_per_kind_and_file(tmp_path):
    secrets = planted(seed=7)
    (tmp_path / "notes.txt").write_text("\n".join(p.text for p in secrets) + "\n")
    (tmp_path / "clean.txt").write_text("nothing to see here\n")
    result = runner.invoke(app, ["scan", str(tmp_path), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["files_read"] == 2 and report["files_with_findings"] == 1
    assert report["findings"] >= len(secrets) // 2 and {"jwt", "google_api_key", "private_key"} <= set(report["kinds"])
    assert all(row["file"].endswith("notes.txt") for row in report["files"])
    assert len(report["found"]) == report["findings"] and {"kind", "rule", "why", "preview"} <= set(report["found"][0])
    clean = runner.invoke(app, ["scan", str(tmp_path / "clean.txt")])
    assert clean.exit_code == 0 and "0 finding(s) in 0 of 1 files read" in clean.output
    missing = runner.invoke(app, ["scan", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "no such file or directory" in missing.output


def test_doctor_reports_then_repairs_a_deleted_part(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "codex-generated", logs)
    store = tmp_path / "store"
    assert runner.invoke(app, ["ingest", str(logs), "--store", str(store), "-q"]).exit_code == 0
    assert runner.invoke(app, ["doctor", "--store", str(store)]).exit_code == 0
    part = next(p for p in (store / "events").glob("part-*.parquet"))
    part.unlink()
    found = runner.invoke(app, ["doctor", "--store", str(store), "--json"])
    assert found.exit_code == 1 and json.loads(found.output)["ok"] is False
    fixed = runner.invoke(app, ["doctor", "--store", str(store), "--repair"])
    assert fixed.exit_code == 0, fixed.output
    assert runner.invoke(app, ["doctor", "--store", str(store)]).exit_code == 0



def test_env_show_and_stats_report_environments(demo_tmax):
    store = demo_tmax.parent.parent / "store"  # the session's `logmine run --demo`
    counts = runner.invoke(app, ["stats", "--store", str(store), "--json"])
    assert counts.exit_code == 0, counts.output
    envs = json.loads(counts.output)["environments"]
    assert sum(envs["by_mode"].values()) >= 2 and envs["by_language"]["python"] >= 2
    task_id = sorted(p.name for p in (demo_tmax / "tasks").iterdir())[0]
    shown = runner.invoke(app, ["env", "show", task_id, "--store", str(store), "--json"])
    assert shown.exit_code == 0, shown.output
    row = json.loads(shown.output)
    assert row["task_id"] == task_id and row["mode"] in ("host", "built") and "python" in row["languages"]
    missing = runner.invoke(app, ["env", "show", "t-nope", "--store", str(store)])
    assert missing.exit_code == 1 and "no environment recorded for task t-nope" in missing.output
