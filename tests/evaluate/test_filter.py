"""filter and eval with a real (tiny, trained) policy: K rollouts per task in the sandbox.

The task set is built so this policy solves some tasks always, some never and some sometimes: the
policy always submits at once; the hidden tests of an "always" task pass on the start state, a
"never" task's fail, a "sometimes" task's pass at random. Only the last kind must be kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rl_support import submitter
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.evaluate.filter import filter_tasks
from logmine.evaluate.report import evaluate
from logmine.evaluate.sampling import SAMPLES, SampleConfig, SamplingError

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

GRADERS = {
    "always": 'echo 1 > "$LOGS_DIR/reward.txt"',
    "never": 'echo 0 > "$LOGS_DIR/reward.txt"',
    "sometimes": 'echo $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) > "$LOGS_DIR/reward.txt"',
    "hangs": "sleep 60",  # the grader never finishes: unscored (test_timeout_reward null)
}
KINDS = {"always_0": "always", "always_1": "always", "never_0": "never", "never_1": "never",
         "sometimes_0": "sometimes", "sometimes_1": "sometimes", "hangs_0": "hangs"}


@pytest.fixture(scope="module")
def task_set(tmp_path_factory) -> tuple[Path, Path]:
    from logmine.agent import synthetic

    root = tmp_path_factory.mktemp("filter")
    tasks = synthetic.shell_tasks(2)[:len(KINDS)]
    data = synthetic.write_tmax(tasks, root / "tmax")
    table = pq.read_table(data / "data/train-00000-of-00001.parquet").to_pylist()
    for row, (name, kind) in zip(table, KINDS.items()):  # rename each task after its grader
        (data / "tasks" / row["ground_truth"]).rename(data / "tasks" / name)
        (data / "tasks" / name / "tests/test.sh").write_text(f'#!/bin/bash\nmkdir -p "$LOGS_DIR"\n{GRADERS[kind]}\n')
        row["ground_truth"] = row["env_config"]["task_id"] = name
    import pyarrow as pa
    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(data / "data/train-00000-of-00001.parquet")),
                   data / "data/train-00000-of-00001.parquet")
    model = submitter(root / "submitter", [t.messages for t in tasks], steps=60)
    return data, model


def config(data: Path, model: Path, out: Path, samples: int = 16) -> SampleConfig:
    return SampleConfig(data=data, model=model, out=out, samples=samples, temperature=0.05, max_turns=2,
                        max_turn_tokens=64, test_timeout_s=1.0, test_timeout_reward=None, batch_tasks=4)


def test_filter_keeps_only_the_sometimes_solved_tasks(task_set, tmp_path):
    data, model = task_set
    summary = filter_tasks(config(data, model, tmp_path / "f"))
    rates = {r["task_id"]: r for r in pq.read_table(tmp_path / "f/pass_rates.parquet").to_pylist()}
    assert {t for t, r in rates.items() if r["kept"]} == {"sometimes_0", "sometimes_1"}
    assert rates["always_0"]["pass_rate"] == 1.0 and rates["never_0"]["pass_rate"] == 0.0
    assert 0 < rates["sometimes_0"]["pass_rate"] < 1 and rates["sometimes_0"]["reward_var"] > 0
    # a task whose grader never finishes: every rollout unscored, no rate, not counted as failures
    assert rates["hangs_0"]["unscored"] == 16 and rates["hangs_0"]["pass_rate"] is None
    assert (summary.kept, summary.always, summary.never, summary.no_rate, summary.unscored) == (2, 2, 2, 1, 16)
    kept = pq.read_table(tmp_path / "f/filtered/data").to_pylist()
    assert sorted(r["ground_truth"] for r in kept) == ["sometimes_0", "sometimes_1"]
    assert sorted(p.name for p in (tmp_path / "f/filtered/tasks").iterdir()) == ["sometimes_0", "sometimes_1"]


def test_filter_resumes_from_the_tasks_already_sampled(task_set, tmp_path):
    data, model = task_set
    filter_tasks(config(data, model, tmp_path / "f", samples=4))
    lines = (tmp_path / "f" / SAMPLES).read_text().splitlines()
    (tmp_path / "f" / SAMPLES).write_text("\n".join(lines[:3]) + '\n{"task_id": "cut mid-li')  # interrupted
    filter_tasks(config(data, model, tmp_path / "f", samples=4))
    again = (tmp_path / "f" / SAMPLES).read_text().splitlines()
    assert again[:3] == lines[:3] and sorted(json.loads(line)["task_id"] for line in again) == sorted(KINDS)
    with pytest.raises(SamplingError, match="holds a run with other settings"):
        filter_tasks(config(data, model, tmp_path / "f", samples=8))


def test_eval_reports_pass_at_k_with_intervals(task_set, tmp_path):
    data, model = task_set
    report = evaluate(config(data, model, tmp_path / "e", samples=16), (1, 4, 8))
    assert report["tasks"] == 7 and report["unscored_rollouts"] == 16
    assert set(report["solved"]) == {"always_0", "always_1", "sometimes_0", "sometimes_1"}
    at1 = report["pass_at_k"]["1"]
    assert at1["tasks"] == 6 and at1["too_few_samples"] == 1  # the hanging task has no scored sample
    assert 2 / 6 <= at1["mean"] <= 4 / 6 and at1["ci95"][0] <= at1["mean"] <= at1["ci95"][1]
    assert report["pass_at_k"]["8"]["mean"] >= at1["mean"]
    assert json.loads((tmp_path / "e/eval.json").read_text())["pass_at_k"] == report["pass_at_k"]


def test_cli_filter_and_eval(task_set, tmp_path):
    data, model = task_set
    common = ["--data", str(data), "--model", str(model), "--temperature", "0.05", "--set", "max_turn_tokens=64",
              "--set", "test_timeout_s=1", "--set", "test_timeout_reward=null"]
    result = CliRunner().invoke(app, ["filter", *common, "-k", "4", "--out", str(tmp_path / "f")])
    assert result.exit_code == 0, result.output
    assert "kept" in result.output and "p≈" in result.output
    result = CliRunner().invoke(app, ["eval", *common, "-n", "4", "--k", "1,4", "--out", str(tmp_path / "e"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["pass_at_k"]["4"]["tasks"] == 6


def test_cli_errors_are_one_line(tmp_path, task_set):
    data, model = task_set
    runner = CliRunner()
    result = runner.invoke(app, ["eval", "--data", str(tmp_path), "--model", str(model), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: no TMax rows in {tmp_path} (expected data/*.parquet from `logmine "
                                     "export tmax`)")
    result = runner.invoke(app, ["eval", "--data", str(data), "--model", str(model), "--out", str(tmp_path / "o"),
                                 "-n", "2", "--k", "1,4"])
    assert result.exit_code == 1 and result.output.strip() == "Error: every k must be between 1 and n=2, got 4"
    result = runner.invoke(app, ["filter", "--data", str(data), "--model", str(model), "--out", str(tmp_path / "p"),
                                 "--set", "colour=red"])
    assert result.exit_code == 1 and result.output.startswith("Error: unknown config key: colour")
