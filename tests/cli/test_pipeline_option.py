"""``--pipeline FILE`` on every stage command: the file's settings are the stage's defaults, an option
given on the command line wins over them, and a bad file is a one-line error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from calc_repo import FIX, calc_repo
from conftest import FIXTURES, query
from session_builder import SessionBuilder
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.export.sft import SftExportConfig
from logmine.export.tmax import TmaxExportConfig
from logmine.ingest.run import IngestConfig
from logmine.pipeline import load_pipeline
from logmine.verify.run import VerifyConfig

runner = CliRunner()
STAGES = [["ingest"], ["segment"], ["verify"], ["export", "sft"], ["export", "tmax"], ["export", "swe"],
          ["export", "atif"], ["run"]]


def _pipeline(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _json(args: list[str]) -> dict:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """No store or input of the user's is read: the default store and the Codex home are empty places."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex-home"))
    monkeypatch.delenv("LOGMINE_STORE", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where a traceback file would go


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory) -> Path:
    """The demo corpus ingested and segmented (not verified: its repositories are not here)."""
    store = tmp_path_factory.mktemp("demo") / "store"
    for args in (["ingest", "--demo"], ["segment"]):
        assert runner.invoke(app, [*args, "--store", str(store), "-q"]).exit_code == 0
    return store


def test_the_config_defaults_are_the_packaged_settings():
    settings = load_pipeline()
    assert IngestConfig.from_settings(settings["ingest"]) == IngestConfig()
    assert VerifyConfig.from_settings(settings["verify"]) == VerifyConfig()
    where = {"store": Path("s"), "out": Path("o")}
    assert SftExportConfig.from_settings(settings["export"], **where) == SftExportConfig(**where)
    assert TmaxExportConfig.from_settings(settings["export"], settings["verify"], **where) == TmaxExportConfig(**where)


def test_importing_a_stage_reads_no_pipeline():
    """The packaged pipeline is parsed when a config is first made, not when a stage is imported."""
    code = ("import logmine.ingest.run, logmine.verify.run, logmine.export.sft, logmine.export.tmax, logmine.pipeline\n"
            "assert logmine.pipeline._default.cache_info().currsize == 0")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_stage_command_takes_the_option():
    root = typer.main.get_command(app)
    for path in STAGES:
        command = root
        for name in path:
            command = command.commands[name]
        assert any("--pipeline" in p.opts for p in command.params), path


def test_ingest_reads_paths_and_store_from_the_file_and_the_command_line_wins(tmp_path):
    pipeline = _pipeline(tmp_path / "p.toml", f'[ingest]\npaths = ["{FIXTURES / "codex-generated"}"]\n'
                                              f'store = "{tmp_path / "from-file"}"\n')
    summary = _json(["ingest", "--pipeline", str(pipeline), "--json"])
    assert summary["store"] == str(tmp_path / "from-file") and summary["sessions"] > 0
    other = _json(["ingest", "--pipeline", str(pipeline), "--store", str(tmp_path / "given"), "--json"])
    assert other["store"] == str(tmp_path / "given") and other["sessions"] == summary["sessions"]


def test_ingest_line_limit_from_the_file_and_the_flag_wins(tmp_path):
    SessionBuilder().user("x" * (2 << 20)).agent("Done.").write(tmp_path / "logs")
    pipeline = _pipeline(tmp_path / "p.toml", "[ingest]\nmax_line_mb = 1\n")
    limited = _json(["ingest", str(tmp_path / "logs"), "--store", "a", "--pipeline", str(pipeline), "--json"])
    assert limited["quarantined_lines"] > 0  # the user message's lines
    assert all(reason.endswith("exceeds the 1048576-byte limit") for reason in limited["quarantine_reasons"])
    given = _json(["ingest", str(tmp_path / "logs"), "--store", "b", "--pipeline", str(pipeline), "--json",
                   "--max-line-mb", "4"])
    assert given["quarantined_lines"] == 0


def test_export_sft_min_verifier_from_the_file_and_the_flag_wins(demo_store, tmp_path):
    pipeline = _pipeline(tmp_path / "p.toml", '[export]\nmin_verifier = "any"\n')
    common = ["export", "sft", "--store", str(demo_store), "--pipeline", str(pipeline), "--json", "-q"]
    assert _json(["export", "sft", "--store", str(demo_store), "--out", "default", "--json", "-q"])["examples"] == 0
    assert _json([*common, "--out", "any"])["examples"] == 13
    assert _json([*common, "--out", "given", "--min-verifier", "validated"])["examples"] == 0


def test_export_tmax_include_unvalidated_from_the_file_and_the_flag_wins(demo_store, tmp_path):
    pipeline = _pipeline(tmp_path / "p.toml", "[export]\ninclude_unvalidated = true\n")
    common = ["export", "tmax", "--store", str(demo_store), "--pipeline", str(pipeline), "--json"]
    # the demo's repositories are not here: an unvalidated task is tried, and its start cannot be rebuilt
    assert _json([*common, "--out", "o1"])["skipped_tasks"] == {"no verifier candidate": 3,
                                                                "start state not rebuilt": 11}
    assert _json([*common, "--out", "o2", "--no-include-unvalidated"])["skipped_tasks"] == {
        "no verifier candidate": 3, "no validated verifier": 11}


def test_export_tmax_tells_each_tasks_reason_and_the_flag_that_fixes_it(demo_store, tmp_path):
    args = ["export", "tmax", "--store", str(demo_store), "--include-unvalidated"]
    listed = _json([*args, "--out", "o1", "--json"])["not_exported"]
    assert len(listed) == 11 and all(r["reason"].startswith("start state not rebuilt: ") for r in listed)
    result = runner.invoke(app, [*args, "--out", "o2"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index("  skipped 11 task(s): start state not rebuilt")
    shown = lines[at + 1:at + 6]
    assert all(line.startswith("    t-") and ("--repo-" in line or "--plain-dirs" in line) for line in shown), shown
    assert lines[at + 6] == "    … and 6 more (--json lists every one)"


def test_stage_commands_use_the_files_store(tmp_path):
    """The stages of one pipeline share its ``[ingest] store``; ``--store`` wins."""
    pipeline = _pipeline(tmp_path / "p.toml", f'[ingest]\nstore = "{tmp_path / "nowhere"}"\n')
    for args in (["segment"], ["verify"], ["export", "tmax", "--out", "o"]):
        result = runner.invoke(app, [*args, "--pipeline", str(pipeline)])
        assert result.exit_code == 1 and result.output.startswith(f"Error: no logmine store at {tmp_path / 'nowhere'}")
        result = runner.invoke(app, [*args, "--pipeline", str(pipeline), "--store", str(tmp_path / "given")])
        assert result.exit_code == 1 and result.output.startswith(f"Error: no logmine store at {tmp_path / 'given'}")


def test_verify_settings_from_the_file_are_checked_and_the_flag_wins(tmp_path):
    pipeline = _pipeline(tmp_path / "p.toml", '[verify]\nenv_mode = "bogus"\n')
    result = runner.invoke(app, ["verify", "--pipeline", str(pipeline)])
    assert result.exit_code == 1
    assert result.output.strip() == "Error: unknown environment mode 'bogus'; expected one of auto, host, built, none"
    result = runner.invoke(app, ["verify", "--pipeline", str(pipeline), "--env-mode", "none"])
    assert result.exit_code == 1 and "no logmine store at logmine-store" in result.output  # past the settings


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_verify_timeout_from_the_file_and_the_flag_wins(tmp_path):
    repo = tmp_path / "work" / "slow"
    slow = "python3 -c 'import time; time.sleep(3)' && python3 -B -m unittest -q"
    (SessionBuilder(cwd=str(repo), commit=calc_repo(repo))
     .user("Fix add").run(slow, 1).patch(FIX).run(slow, 0).agent("Fixed.").write(tmp_path / "logs"))
    store = str(tmp_path / "store")
    for args in (["ingest", str(tmp_path / "logs")], ["segment"]):
        assert runner.invoke(app, [*args, "--store", store, "-q"]).exit_code == 0
    pipeline = _pipeline(tmp_path / "p.toml", "[verify]\ntimeout_s = 1\n")
    sql = "SELECT status, status_reason FROM verifiers WHERE kind = 'test_command'"
    assert runner.invoke(app, ["verify", "--store", store, "--pipeline", str(pipeline), "-q"]).exit_code == 0
    (row,) = query(Path(store), sql)
    assert row["status"] == "unscored" and "timed out" in row["status_reason"]
    again = ["verify", "--store", store, "--pipeline", str(pipeline), "--timeout", "60", "--redo", "unscored", "-q"]
    assert runner.invoke(app, again).exit_code == 0
    assert query(Path(store), sql)[0]["status"] == "validated"


@pytest.mark.parametrize("text, message", [
    (None, "Error: cannot read pipeline {path}: No such file or directory"),
    ("[verify\n", "Error: invalid pipeline {path}: Expected ']' at the end of a table declaration (at line 1, column 8)"),
    ("[export]\nnope = 1\n", "Error: unknown setting 'export.nope' in {path}"),
    ("[verify]\njobs = 'two'\n", "Error: setting 'verify.jobs' in {path} must be a int"),
], ids=["missing", "invalid", "unknown", "wrong-type"])
@pytest.mark.parametrize("command", STAGES, ids=" ".join)
def test_a_bad_pipeline_file_is_a_one_line_error(command, text, message, tmp_path):
    path = tmp_path / "bad.toml"
    if text is not None:
        path.write_text(text)
    extra = ["--out", str(tmp_path / "o")] if command[0] == "export" else []
    result = runner.invoke(app, [*command, *extra, "--pipeline", str(path)])
    assert result.exit_code == 1
    assert result.output.strip() == message.format(path=path)
    assert not list(tmp_path.glob("logmine-traceback-*"))
