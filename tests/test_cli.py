"""The CLI end to end: help on every command, the demo, stats, and one-line errors."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import query
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.cli.ingest import ingest_cmd
from logmine.ingest.run import IngestConfig

runner = CliRunner()
ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize("command", [[], ["ingest"], ["stats"], ["segment"], ["verify"], ["export"],
                                     ["export", "tmax"], ["export", "sft"], ["train"], ["train", "sft"],
                                     ["train", "init-model"]])
def test_help(command):
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "Usage: logmine" in result.output


def test_demo_ingest_then_stats(tmp_path):
    store = tmp_path / "store"
    result = runner.invoke(app, ["ingest", "--demo", "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["quarantined_lines"] == 0 and summary["bad_files"] == []
    assert summary["formats"] == {"g0": 1, "g1": 3, "g2": 6, "history": 1}
    assert summary["sessions"] == 10
    again = json.loads(runner.invoke(app, ["ingest", "--demo", "--store", str(store), "--json"]).output)
    assert again["events"] == 0 and again["files"]["unchanged"] == 11
    stats = json.loads(runner.invoke(app, ["stats", "--store", str(store), "--json"]).output)
    versions = {row["cli_version"] for row in stats["by_version"]}
    assert {"0.171.0", "0.90.0", "0.45.0", "0.34.0", "0.46.0"} <= versions
    table = runner.invoke(app, ["stats", "--store", str(store)])
    assert table.exit_code == 0 and "0.171.0" in table.output and "quarantined lines: 0" in table.output


def test_summary_table(tmp_path):
    result = runner.invoke(app, ["ingest", "--demo", "--store", str(tmp_path / "s")])
    assert result.exit_code == 0
    for label in ("files", "sessions", "events", "quarantined lines", "redactions", "store"):
        assert label in result.output


def test_missing_input_is_a_one_line_error(tmp_path):
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope"), "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: no such file or directory: {tmp_path / 'nope'}"


def test_no_session_files_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["ingest", str(tmp_path / "empty"), "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: no Codex or Claude Code session files under {tmp_path / 'empty'} "
                                     "(pass session files or directories, or --demo)")


def test_nothing_readable_exits_non_zero(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "dangling.jsonl").symlink_to(tmp_path / "missing")
    result = runner.invoke(app, ["ingest", str(tmp_path / "in"), "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == \
        "Error: none of the 1 input files could be read (see the bad files above)"


def test_store_failure_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = runner.invoke(app, ["ingest", "--demo", "--store", str(blocker / "store")])
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: cannot create store at {blocker / 'store'}: Not a directory"


def test_stats_without_store(tmp_path):
    result = runner.invoke(app, ["stats", "--store", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert result.output.strip() == \
        f"Error: no logmine store at {tmp_path / 'none'} (run `logmine ingest` first or pass --store)"


def test_store_env_var_and_console_script(tmp_path):
    env = {"LOGMINE_STORE": str(tmp_path / "env-store"), "PATH": str(Path(sys.executable).parent)}
    done = subprocess.run([sys.executable, "-m", "logmine", "ingest", "--demo", "-q"], env=env,
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert query(tmp_path / "env-store", "SELECT count(*) AS n FROM sessions")[0]["n"] > 0


def test_pipeline_defaults_match_the_flags():
    config = tomllib.loads((ROOT / "pipelines/codex-default.toml").read_text())["ingest"]
    params = inspect.signature(ingest_cmd).parameters
    # the flags default to None: IngestConfig holds the defaults, and --help shows them
    assert all(params[name].default is None for name in ("store", "max_line_mb", "batch_mb"))
    defaults = IngestConfig()
    assert str(defaults.store) == config["store"]
    assert defaults.max_line_bytes >> 20 == config["max_line_mb"]
    assert defaults.batch_bytes >> 20 == config["batch_mb"]
    shown = " ".join(runner.invoke(app, ["ingest", "--help"], terminal_width=200).output.split())
    for value in (config["store"], config["max_line_mb"], config["batch_mb"]):
        assert f"[default: ({value})]" in shown


def test_segment_demo(tmp_path):
    store = tmp_path / "store"
    assert runner.invoke(app, ["ingest", "--demo", "--store", str(store), "-q"]).exit_code == 0
    result = runner.invoke(app, ["segment", "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 14 and summary["fail_to_pass"] == 6
    assert summary["sessions"] == {"seen": 10, "segmented": 10}
    table = runner.invoke(app, ["segment", "--store", str(store)])
    assert table.exit_code == 0 and "10 seen: 0 segmented, 10 unchanged" in table.output


def test_segment_errors(tmp_path):
    result = runner.invoke(app, ["segment", "--store", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: no logmine store at {tmp_path / 'none'} (run `logmine ingest` first)"
    store = tmp_path / "store"
    runner.invoke(app, ["ingest", "--demo", "--store", str(store), "-q"])
    bad = tmp_path / "bad.toml"
    bad.write_text("[segment]\nnope = 1\n")
    result = runner.invoke(app, ["segment", "--store", str(store), "--pipeline", str(bad)])
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: unknown setting 'segment.nope' in {bad}"


def test_verify_errors(tmp_path):
    result = runner.invoke(app, ["verify", "--store", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: no logmine store at {tmp_path / 'none'} "
                                     "(run `logmine ingest` and `logmine segment` first)")
    result = runner.invoke(app, ["verify", "--store", str(tmp_path), "--repo-map", "nonsense"])
    assert result.exit_code == 1
    assert result.output.strip() == "Error: --repo-map expects OLD=NEW, got 'nonsense'"


def test_verify_demo_without_repositories(tmp_path):
    store = tmp_path / "store"
    runner.invoke(app, ["ingest", "--demo", "--store", str(store), "-q"])
    runner.invoke(app, ["segment", "--store", str(store), "-q"])
    result = runner.invoke(app, ["verify", "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["rebuilt"] == 0 and summary["tasks"] > 0  # the demo's repositories are not on this machine
    assert all(set(statuses) == {"not_rebuilt"} for statuses in summary["candidates"].values())


def test_export_commands_on_the_demo(tmp_path):
    import sys

    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).parent / "export"))
    from tiny_tokenizer import save_tiny_tokenizer

    store = tmp_path / "store"
    runner.invoke(app, ["ingest", "--demo", "--store", str(store), "-q"])
    runner.invoke(app, ["segment", "--store", str(store), "-q"])
    tokenizer = save_tiny_tokenizer(tmp_path / "tok")
    result = runner.invoke(app, ["export", "sft", "--store", str(store), "--out", str(tmp_path / "sft"),
                                 "--min-verifier", "any", "--tokenizer", str(tokenizer), "--lambda", "0.1", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["examples"] == 13 and summary["token_examples"] > 0 and summary["dropped"] == {"no agent turn": 1}
    tokens = pq.read_table(next((tmp_path / "sft/tokens").glob("*.parquet"))).to_pylist()[0]
    assert set(tokens["loss_weights"]) <= {0.0, 0.1, 1.0} and len(tokens["loss_weights"]) == len(tokens["input_ids"])
    # the demo's repositories are not on this machine: nothing can be rebuilt, so no TMax row
    result = runner.invoke(app, ["export", "tmax", "--store", str(store), "--out", str(tmp_path / "tmax"), "--json",
                                 "--include-unvalidated"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["rows"] == 0


def test_export_errors(tmp_path):
    result = runner.invoke(app, ["export", "tmax", "--store", str(tmp_path / "none"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and result.output.strip() == f"Error: no logmine store at {tmp_path / 'none'}"
    result = runner.invoke(app, ["export", "sft", "--store", str(tmp_path / "none"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and result.output.strip().startswith("Error: ")
    assert len(result.output.strip().splitlines()) == 1


def test_train_sft_end_to_end_on_the_demo(tmp_path):
    pytest.importorskip("torch")
    store = tmp_path / "store"
    runner.invoke(app, ["ingest", "--demo", "--store", str(store), "-q"])
    runner.invoke(app, ["segment", "--store", str(store), "-q"])
    result = runner.invoke(app, ["train", "init-model", "--out", str(tmp_path / "tiny")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["export", "sft", "--store", str(store), "--out", str(tmp_path / "sft"), "-q",
                                 "--min-verifier", "any", "--tokenizer", str(tmp_path / "tiny"), "--lambda", "0.1"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["train", "sft", "--data", str(tmp_path / "sft"), "--model", str(tmp_path / "tiny"),
                                 "--out", str(tmp_path / "run"), "--max-steps", "2", "--batch-size", "2048"])
    assert result.exit_code == 0, result.output
    metrics = [json.loads(line) for line in (tmp_path / "run/metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2] and all(m["nll_action"] > 0 for m in metrics)


def test_train_config_errors(tmp_path):
    pytest.importorskip("torch")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("lamda: 0.1\n")
    result = runner.invoke(app, ["train", "sft", "--config", str(recipe), "--data", "d", "--model", "m", "--out", "o"])
    assert result.exit_code == 1
    assert result.output.strip().startswith("Error: unknown config key: lamda")
    assert len(result.output.strip().splitlines()) == 1
