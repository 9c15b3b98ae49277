"""filter on a two-node Ray cluster: each task's K rollouts are a unit on a worker; same pass rates."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rl_support import submitter

LOGMINE = str(Path(sys.executable).parent / "logmine")
GRADERS = {"always": 'echo 1 > "$LOGS_DIR/reward.txt"', "never": 'echo 0 > "$LOGS_DIR/reward.txt"'}


@pytest.fixture(scope="module")
def task_set(tmp_path_factory):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    from logmine.agent import synthetic

    root = tmp_path_factory.mktemp("ray-eval")
    tasks = synthetic.shell_tasks(2)[:4]
    data = synthetic.write_tmax(tasks, root / "tmax")
    path = data / "data/train-00000-of-00001.parquet"
    rows = pq.read_table(path).to_pylist()
    for i, row in enumerate(rows):  # two tasks every rollout solves, two none does
        kind = "always" if i % 2 == 0 else "never"
        name = f"{kind}_{i}"
        (data / "tasks" / row["ground_truth"]).rename(data / "tasks" / name)
        (data / "tasks" / name / "tests/test.sh").write_text(f'#!/bin/bash\nmkdir -p "$LOGS_DIR"\n{GRADERS[kind]}\n')
        row["ground_truth"] = row["env_config"]["task_id"] = name
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    return data, submitter(root / "submitter", [t.messages for t in tasks], steps=60)


def test_ray_filter_gives_the_pass_rates_of_a_local_run(ray_cluster, task_set, tmp_path):
    data, model = task_set
    common = ["filter", "--data", str(data), "--model", str(model), "-k", "3", "--set", "max_turns=2",
              "--set", "max_turn_tokens=64", "--set", "temperature=0.05"]
    done = ray_cluster.run([LOGMINE, *common, "--out", str(tmp_path / "ray"), "--executor", "ray"], timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    rates = {r["task_id"]: r["pass_rate"] for r in pq.read_table(tmp_path / "ray" / "pass_rates.parquet").to_pylist()}
    assert rates == {"always_0": 1.0, "never_1": 0.0, "always_2": 1.0, "never_3": 0.0}
    lines = [json.loads(line) for line in (tmp_path / "ray" / "samples.jsonl").read_text().splitlines()]
    assert sorted(line["task_id"] for line in lines) == sorted(rates) and all(len(x["rewards"]) == 3 for x in lines)
