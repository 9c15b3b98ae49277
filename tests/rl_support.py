"""Shared pieces of the RL tests: the demo's real-CLI TMax export, tiny policies trained for real
(no scripted policies), and a bundle's solved variant."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from logmine.agent import synthetic
from logmine.protocol import SUBMIT
from logmine.sandbox import open_sandbox
from logmine.train.tiny import init_model


def demo_tmax(root: Path) -> Path:
    """``logmine run --demo``'s TMax export: two tasks of a real Codex CLI 0.171 session (calc repo)."""
    from logmine.run import RunConfig, run_pipeline

    summary = run_pipeline(RunConfig(demo=True, store=root / "store", out=root / "out"))
    assert summary.tmax is not None and summary.tmax.rows == 2
    return root / "out" / "tmax"


def tiny_policy(path: Path, seed: int = 0, hidden_size: int = 64) -> Path:
    return init_model(path, hidden_size=hidden_size, layers=2, heads=4, kv_heads=2,
                      intermediate_size=2 * hidden_size, vocab_size=1024, texts=synthetic.texts(), seed=seed)


def submitter(root: Path, prompts: list[list[dict]], steps: int = 40, also: tuple[str, ...] = ()) -> Path:
    """A tiny model SFT-trained (logmine train sft) to answer a prompt with one ``bash`` call: the
    submission, or (as often) one of the ``also`` commands — a policy whose choice is random."""
    from transformers import AutoTokenizer

    from logmine.config import load_config
    from logmine.train.sft import train_sft
    from logmine.train.sft_config import SftTrainConfig

    init = tiny_policy(root / "init")
    conversations = []
    for prompt in prompts:
        for command in (f"echo {SUBMIT}", *also):
            arguments = json.dumps({"command": command})
            call = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": arguments}}
            conversations.append([*prompt, {"role": "assistant", "content": "", "tool_calls": [call]}])
    synthetic.write_token_sft(conversations, AutoTokenizer.from_pretrained(str(init)), root / "sft")
    train_sft(load_config(None, {"data": root / "sft", "model": init, "out": root / "run", "max_steps": steps,
                                 "lr": 3e-3, "schedule": "constant"}, kind=SftTrainConfig))
    return root / "run" / "final"


def solved_variant(bundle: Path, dest: Path) -> Path:
    """A copy of ``bundle`` whose seeds are its end state: ``solution/solve.sh`` run in the sandbox."""
    shutil.copytree(bundle, dest)
    seeds = dest / "environment" / "seeds"
    with open_sandbox(seeds, mount_at="/workspace") as box:
        box.install_files({".solve.sh": (bundle / "solution" / "solve.sh").read_text()})
        result = box.run("WORKSPACE=/workspace bash /workspace/.solve.sh")
        assert result.exit_code == 0, result.output
        shutil.rmtree(seeds)
        shutil.copytree(box.workspace, seeds, ignore=shutil.ignore_patterns(".solve.sh", "__pycache__"))
    return dest


def tmax_dir(rows: list[dict], bundles: dict[str, Path], out: Path) -> Path:
    """A TMax directory of ``rows`` (TMax schema) with ``bundles`` (task_id -> bundle) copied in."""
    import pyarrow as pa

    from logmine.export.tmax import ROW_SCHEMA

    (out / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), out / "data" / "train-00000-of-00001.parquet")
    for task_id, bundle in bundles.items():
        shutil.copytree(bundle, out / "tasks" / task_id)
    return out


def shell_family(root: Path, sft_steps: int = 100, per_operation: int = 12, train_per_operation: int = 8) -> dict:
    """The synthetic shell-task family split into train and held-out TMax directories, and a tiny
    model SFT-trained (``logmine train sft``, ActObs λ = 0) on the solved train trajectories."""
    from transformers import AutoTokenizer

    from logmine.config import load_config
    from logmine.train.sft import train_sft
    from logmine.train.sft_config import SftTrainConfig

    tasks = synthetic.shell_tasks(per_operation)
    split = train_per_operation * len(synthetic.OPERATIONS)
    train, held = tasks[:split], tasks[split:]
    init = init_model(root / "init", hidden_size=64, layers=2, heads=4, kv_heads=2, intermediate_size=128,
                      vocab_size=512, texts=synthetic.texts(), seed=0)
    synthetic.write_sft(train, AutoTokenizer.from_pretrained(str(init)), root / "sft-data")
    train_sft(load_config(None, {"data": root / "sft-data", "model": init, "out": root / "sft", "max_steps": sft_steps,
                                 "lr": 3e-3, "schedule": "constant", "seed": 0}, kind=SftTrainConfig))
    return {"train": synthetic.write_tmax(train, root / "train"), "held": synthetic.write_tmax(held, root / "held"),
            "sft": root / "sft" / "final", "init": init}
