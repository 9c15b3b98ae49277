"""train grpo end to end: rollouts in the bubblewrap sandbox on bundles exported from a real Codex CLI
session, rewards from their hidden tests, an update that changes the weights; config and resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from rl_support import solved_variant, submitter, tmax_dir
from safetensors.torch import load_file
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.config import ConfigError, load_config
from logmine.train.grpo import train_grpo
from logmine.train.grpo_config import GrpoTrainConfig

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")


@pytest.fixture(scope="module")
def real_tasks(demo_tmax, tmp_path_factory) -> tuple[Path, Path]:
    """The demo's two real-CLI tasks plus, for each, a variant whose start state is its end state (the
    bundle's own solve.sh run in the sandbox): submitting fails the first, passes the second. The
    policy submits or runs `ls` at random, so the solved variants' groups carry signal."""
    root = tmp_path_factory.mktemp("grpo-real")
    rows = pq.read_table(demo_tmax / "data/train-00000-of-00001.parquet").to_pylist()
    bundles, all_rows = {}, []
    for row in rows:
        task = row["ground_truth"]
        bundles[task] = demo_tmax / "tasks" / task
        bundles[f"{task}-solved"] = solved_variant(bundles[task], root / "solved" / task)
        all_rows += [row, {**row, "ground_truth": f"{task}-solved",
                           "env_config": {**row["env_config"], "task_id": f"{task}-solved"}}]
    model = submitter(root / "submitter", [r["messages"] for r in rows], steps=100, also=("ls",))
    return tmax_dir(all_rows, bundles, root / "tmax"), model


def grpo_config(data: Path, model: Path, out: Path, **overrides) -> GrpoTrainConfig:
    values = {"data": data, "model": model, "out": out, "max_steps": 2, "prompts_per_step": 2, "group_size": 8,
              "lr": 1e-3, "max_turns": 2, "max_turn_tokens": 64, "rollout_workers": 4, "seed": 0}
    return load_config(None, {**values, **overrides}, kind=GrpoTrainConfig)


def test_grpo_on_real_cli_bundles(real_tasks, tmp_path):
    data, model = real_tasks
    rows_seen = []
    summary = train_grpo(grpo_config(data, model, tmp_path / "run", max_steps=3), on_metrics=rows_seen.append)
    rollouts = [json.loads(line) for line in (tmp_path / "run/rollouts.jsonl").read_text().splitlines()]
    submitted = [r for r in rollouts if r["end"] == "submitted"]
    assert submitted and all(r["commands"][-1] == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" for r in submitted)
    # rewards come from the real session's hidden tests run in the sandbox
    assert {r["reward"] for r in submitted if not r["task_id"].endswith("-solved")} <= {0.0}
    assert {r["reward"] for r in submitted if r["task_id"].endswith("-solved")} == {1.0}
    assert all(r["unscored"] is None for r in rollouts) and summary.unscored == 0
    assert any(row["groups_kept"] > 0 for row in rows_seen)
    before, after = load_file(model / "model.safetensors"), load_file(tmp_path / "run/final/model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)
    metrics = [json.loads(line) for line in (tmp_path / "run/metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3]
    for key in ("reward_mean", "solve_rate", "zero_std_frac", "unscored", "masked_frac", "is_ratio_max",
                "sampler_diff_max", "kl_ref", "entropy", "grad_norm", "response_tokens", "turns", "rollout_s",
                "update_s"):
        assert key in metrics[0]
    kept = next(m for m in metrics if m["groups_kept"])
    assert kept["sampler_diff_max"] < 1e-3  # the HF engine samples from the trained weights themselves


def test_resume_reproduces_the_uninterrupted_run(real_tasks, tmp_path):
    data, model = real_tasks
    straight = train_grpo(grpo_config(data, model, tmp_path / "a", max_steps=3))
    train_grpo(grpo_config(data, model, tmp_path / "b", max_steps=2, save_every=1))
    resumed = train_grpo(grpo_config(data, model, tmp_path / "b", max_steps=3, save_every=1, resume=True))
    assert resumed.resumed_from == 2 and resumed.steps == 3
    a = [json.loads(line) for line in (tmp_path / "a/metrics.jsonl").read_text().splitlines()]
    b = [json.loads(line) for line in (tmp_path / "b/metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in b] == [1, 2, 3]
    for key in ("reward_mean", "groups_kept", "prompts_drawn", "grad_norm", "loss"):
        assert a[2][key] == pytest.approx(b[2][key], rel=1e-5, abs=1e-7), key
    assert straight.steps == 3


def test_config_rejects_unknown_keys_and_incoherent_settings(tmp_path):
    base = {"data": tmp_path, "model": tmp_path, "out": tmp_path / "o"}
    with pytest.raises(ConfigError, match="unknown config key: colour"):
        load_config(None, {**base, "colour": 1}, kind=GrpoTrainConfig)
    with pytest.raises(ConfigError, match="rollout_is applies to the grpo loss"):
        load_config(None, {**base, "rollout_is": "token"}, kind=GrpoTrainConfig)
    with pytest.raises(ConfigError, match="group_size must be at least 2"):
        load_config(None, {**base, "group_size": 1}, kind=GrpoTrainConfig)
    with pytest.raises(ConfigError, match="divergence must be one of tv, kl"):
        load_config(None, {**base, "divergence": "js"}, kind=GrpoTrainConfig)
    recipe = load_config(Path(__file__).parents[2] / "train/grpo-dppo.yaml", base, kind=GrpoTrainConfig)
    assert (recipe.loss, recipe.divergence, recipe.delta, recipe.advantage) == ("dppo", "tv", 0.1, "centered")


def test_cli_grpo_runs_and_reports_errors_in_one_line(real_tasks, tmp_path):
    data, model = real_tasks
    runner = CliRunner()
    result = runner.invoke(app, ["train", "grpo", "--data", str(data), "--model", str(model), "--out",
                                 str(tmp_path / "run"), "--max-steps", "1", "--group-size", "4",
                                 "--prompts-per-step", "1", "--set", "max_turn_tokens=64", "--set", "lr=1e-3"])
    assert result.exit_code == 0, result.output
    assert "trained 1 GRPO steps" in result.output
    result = runner.invoke(app, ["train", "grpo", "--data", str(data), "--model", str(model), "--out",
                                 str(tmp_path / "run"), "--max-steps", "1"])
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: the run directory {tmp_path / 'run'} is in use (pass resume to "
                                     "continue it, or another out)")
    result = runner.invoke(app, ["train", "grpo", "--data", str(tmp_path), "--model", str(model), "--out",
                                 str(tmp_path / "x")])
    assert result.exit_code == 1 and result.output.startswith("Error: no TMax rows in")
    result = runner.invoke(app, ["train", "grpo", "--data", str(data), "--model", str(model), "--out",
                                 str(tmp_path / "y"), "--set", "loss"])
    assert result.exit_code == 1 and result.output.strip() == "Error: --set expects KEY=VALUE, got 'loss'"


@pytest.mark.parametrize("overrides", [
    {"loss": "grpo", "num_minibatches": 2, "onpolicy_replace": False, "rollout_is": "token", "rollout_mis": True},
    {"loss": "grpo", "rollout_is": "sequence", "echo_weight": 0.1, "beta": 0.01},
    {"divergence": "kl", "delta": 0.05, "ratio_cap": 10.0, "advantage": "standard", "dtype": "bf16"},
], ids=["grpo-minibatches-tis-mis", "grpo-seq-tis-echo-kl", "dppo-kl-bf16-fp32-head"])
def test_every_loss_option_runs_a_real_update(shell_family, tmp_path, overrides):
    rows = []
    config = grpo_config(shell_family["train"], shell_family["sft"], tmp_path / "run", max_steps=1,
                         prompts_per_step=4, max_turns=3, max_turn_tokens=96, **overrides)
    train_grpo(config, on_metrics=rows.append)
    [row] = rows
    assert row["groups_kept"] > 0 and row["grad_norm"] > 0 and row["loss"] is not None
    if overrides.get("loss") == "grpo":
        assert row["clip_frac"] is not None and row["masked_frac"] == 0.0
    if overrides.get("num_minibatches", 1) == 1 and overrides.get("dtype") != "bf16":
        assert row["sampler_diff_max"] < 1e-3
    before = load_file(shell_family["sft"] / "model.safetensors")
    after = load_file(tmp_path / "run/final/model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_values_of_the_wrong_type_are_one_line_errors(tmp_path):
    base = {"data": tmp_path, "model": tmp_path, "out": tmp_path / "o"}
    with pytest.raises(ConfigError, match="^lr must be a number, got 'fast'$"):
        load_config(None, {**base, "lr": "fast"}, kind=GrpoTrainConfig)
    with pytest.raises(ConfigError, match="^group_size must be an integer, got 2.5$"):
        load_config(None, {**base, "group_size": 2.5}, kind=GrpoTrainConfig)
    assert load_config(None, base, kind=GrpoTrainConfig, settings={"ratio_cap": None, "lr": 1}).lr == 1


def test_resume_skips_a_partial_checkpoint_and_a_cut_log_line(tmp_path):
    from logmine.train.run_dir import complete_checkpoints, truncate_logs

    for name in ("step-2", "step-10", "step-11.partial", "step-x"):
        (tmp_path / "checkpoints" / name).mkdir(parents=True)
    assert [p.name for p in complete_checkpoints(tmp_path / "checkpoints")] == ["step-2", "step-10"]
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n{"step": 3}\n{"step": 4, "rew')
    truncate_logs(tmp_path, 2)
    assert (tmp_path / "metrics.jsonl").read_text() == '{"step": 1}\n{"step": 2}\n'


def test_training_refuses_nucleus_sampling(tmp_path):
    with pytest.raises(ConfigError, match="top_p must be 1 for training"):
        load_config(None, {"data": tmp_path, "model": tmp_path, "out": tmp_path / "o", "top_p": 0.9},
                    kind=GrpoTrainConfig)
