"""SFT throughput: `logmine train sft` (λ = 0) vs TRL's SFTTrainer (assistant_only_loss) on the same
tiny model, data, batches and order.

    python bench/sft.py [--steps 8] [--accum 4]

Data: the demo store exported with the tiny model's tokenizer at λ = 0 (its action tokens are exactly
TRL's assistant mask, docs/export-sft.md), examples over 2048 tokens dropped. Each optimizer step is
`accum` examples, one per micro-batch, in logmine's order for both (TRL: sequential sampler over the
reordered dataset), and both losses are Σnll/Σtokens over the step (logmine `normalisation: batch`,
TRL's `num_items_in_batch`), so the per-step losses must agree. A third run packs about `accum` examples into one row per step
(logmine's default; different batches, so its losses are only indicative). Prints tokens/s, losses, peak RSS. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--accum", type=int, default=4)
    parser.add_argument("--run", help=argparse.SUPPRESS)  # child process: one measured run
    args = parser.parse_args()
    if args.run:
        return _child(json.loads(args.run))
    work = Path(tempfile.mkdtemp(prefix="bench-sft-"))
    from logmine.train.tiny import init_model
    model = init_model(work / "model", hidden_size=64, intermediate_size=128)
    py = [sys.executable, "-m", "logmine"]
    subprocess.run([*py, "ingest", "--demo", "--store", str(work / "store"), "-q"], check=True)
    subprocess.run([*py, "segment", "--store", str(work / "store"), "-q"], check=True)
    subprocess.run([*py, "export", "sft", "--store", str(work / "store"), "--out", str(work / "sft"), "--min-verifier",
                    "any", "--tokenizer", str(model), "--lambda", "0", "--max-tokens", "2048", "-q"], check=True)
    common = dict(work=str(work), steps=args.steps, accum=args.accum)
    results = {name: _measure(dict(common, kind=name)) for name in ("trl", "logmine", "logmine-packed")}
    for name, r in results.items():
        print(f"{name:15s} tokens/s {r['tokens_per_s']:9.0f}  peak RSS {r['peak_rss_mb']:6.0f} MB  "
              f"losses {' '.join(f'{x:.4f}' for x in r['losses'])}")
    for name in ("logmine", "logmine-packed"):
        print(f"speed-up {name} / trl: {results[name]['tokens_per_s'] / results['trl']['tokens_per_s']:.2f}x")
    gap = max(abs(a - b) for a, b in zip(results["trl"]["losses"], results["logmine"]["losses"]))
    print(f"max |loss(trl) - loss(logmine)| over {args.steps} steps: {gap:.2e}")


def _measure(spec: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--run", json.dumps(spec)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _order(work: Path, steps: int, accum: int) -> list[int]:
    from logmine.train.data import load_examples, step_batches
    batches = step_batches(load_examples(work / "sft"), 1, accum, 0)
    return [mb[0] for _ in range(steps) for mb in next(batches)]


def _mean_length(work: Path) -> int:
    from logmine.train.data import load_examples
    examples = load_examples(work / "sft")
    return sum(len(e) for e in examples) // len(examples)


def _child(spec: dict) -> None:
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
    work, steps, accum = Path(spec["work"]), spec["steps"], spec["accum"]
    if spec["kind"] == "trl":
        losses, tokens, seconds = _trl(work, steps, accum)
    else:
        from logmine.config import load_config
        from logmine.train.sft import train_sft
        from logmine.train.sft_config import SftTrainConfig
        packed = spec["kind"] == "logmine-packed"
        config = load_config(None, dict(data=work / "sft", model=work / "model", out=work / spec["kind"], lam=0.0,
                                        normalisation="batch", max_steps=steps, lr=1e-3, schedule="constant",
                                        batch_tokens=4 * _mean_length(work) if packed else 1, grad_accum=1 if packed else accum,
                                        max_grad_norm=1.0), kind=SftTrainConfig)
        summary = train_sft(config)
        rows = [json.loads(line) for line in (work / spec["kind"] / "metrics.jsonl").read_text().splitlines()]
        # step time only (model loading excluded, as for TRL, whose timer starts at train())
        seconds = sum(r["tokens"] / r["tokens_per_s"] for r in rows)
        losses, tokens = summary.losses, summary.tokens
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"losses": losses, "tokens_per_s": tokens / seconds, "peak_rss_mb": peak}))


def _trl(work: Path, steps: int, accum: int):
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from logmine.train.data import load_examples
    rows = datasets.load_dataset("parquet", data_files=str(work / "sft" / "data" / "*.parquet"), split="train")
    tokens_ds = datasets.load_dataset("parquet", data_files=str(work / "sft" / "tokens" / "*.parquet"), split="train")
    assert rows["task_id"] == tokens_ds["task_id"], "bench assumes one token example per task"
    order = _order(work, steps, accum)
    n_tokens = sum(len(load_examples(work / "sft")[i]) for i in order)
    ds = rows.select(order).map(lambda r: {"tools": json.loads(r["tools"]) if r["tools"] else None})
    ds = ds.select_columns(["messages", "tools"])
    losses: list[float] = []

    class Record(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    config = SFTConfig(output_dir=str(work / "trl"), max_steps=steps, per_device_train_batch_size=1,
                       gradient_accumulation_steps=accum, learning_rate=1e-3, lr_scheduler_type="constant",
                       warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0, logging_steps=1, save_strategy="no",
                       report_to=[], assistant_only_loss=True, max_length=None, train_sampling_strategy="sequential",
                       use_cpu=True, disable_tqdm=True, dataloader_num_workers=0, seed=0)
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(str(work / "model")), args=config,
                         train_dataset=ds, processing_class=AutoTokenizer.from_pretrained(str(work / "model")),
                         callbacks=[Record()])
    started = time.monotonic()
    trainer.train()
    return losses, n_tokens, time.monotonic() - started


if __name__ == "__main__":
    main()
