#!/usr/bin/env python3
"""Throughput of the token-level SFT export against ``apply_chat_template(..., return_assistant_tokens_mask=True)``.

Not a timed test: it prints figures and whether the target (ratio >= 1.0) is met.

    python bench/export.py                    # fixture corpus x 5, tiny BPE tokenizer (8192 tokens) trained on it
    python bench/export.py --repeat 20 --lam 0.1
    python bench/export.py --tokenizer DIR    # a local tokenizer directory with a chat template instead
    python bench/export.py --json

The conversations are those ``logmine export sft --min-verifier any`` writes for the sessions of
``tests/fixtures`` (every task, deduplicated, canonical tools), read back from its Parquet output, and
repeated ``--repeat`` times. On the same conversations, in the same run, best of ``--runs``:

* ``logmine Renderer.render``: token ids, float loss weights and source labels, with the
  incremental-rendering prefix-stability check (two prefix renderings per assistant turn);
* ``apply_chat_template per conversation``: ``tokenizer.apply_chat_template(messages, tools=tools,
  return_dict=True, return_assistant_tokens_mask=True)`` once per conversation, as TRL's SFTTrainer
  calls it (``Dataset.map``, one example at a time). The target ratio is against this row;
* ``apply_chat_template batched``: the same over lists of 64 conversations (the tokenizer's threads
  encode a batch; informational);
* ``export_sft end to end``: the whole ``logmine export sft --tokenizer`` (store reads, conversations,
  rendering, Parquet, card; informational).

At λ = 0 the action mask must be TRL's assistant mask token for token; the bench checks it on every
conversation and says so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = (ROOT / "tests" / "fixtures" / "codex-public", ROOT / "tests" / "fixtures" / "codex-generated")
TARGET = 1.0
BATCH = 64


def _tiny_tokenizer_module():
    spec = importlib.util.spec_from_file_location("tiny_tokenizer", ROOT / "tests" / "export" / "tiny_tokenizer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(work: Path, vocab: int, tokenizer_dir: Path | None):
    """Store, conversations, tokenizer directory."""
    import pyarrow.parquet as pq

    from logmine.export.sft import SftExportConfig, export_sft
    from logmine.ingest.run import IngestConfig, ingest
    from logmine.segment import SegmentConfig, segment

    store = work / "store"
    ingest(IngestConfig(paths=FIXTURES, store=store))
    segment(SegmentConfig(store=store))
    export_sft(SftExportConfig(store=store, out=work / "messages", min_verifier="any"))
    rows = [r for p in sorted((work / "messages" / "data").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]
    conversations = [(r["messages"], json.loads(r["tools"])) for r in rows]
    if tokenizer_dir is None:
        texts = [m["content"] for messages, _ in conversations for m in messages if m["content"]]
        tokenizer_dir = _tiny_tokenizer_module().save_tiny_tokenizer(work / "tokenizer", texts=texts, vocab_size=vocab)
    return store, conversations, tokenizer_dir


def _best(runs: int, fn):
    best, value = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - started)
    return best, value


def measure(repeat: int, runs: int, lam: float, vocab: int, tokenizer_dir: Path | None, work: Path) -> dict:
    from logmine.export.render import ACTION, Renderer, load_tokenizer
    from logmine.export.sft import SftExportConfig, export_sft

    store, conversations, tokenizer_dir = prepare(work, vocab, tokenizer_dir)
    tokenizer = load_tokenizer(tokenizer_dir)
    corpus = conversations * repeat
    renderer = Renderer(tokenizer, lam)
    tools = corpus[0][1]
    assert all(t == tools for _, t in corpus), "canonical tools: one tool list for every conversation"

    def ours():
        return sum(len(e.input_ids) for r in renderer.render(corpus) for e in r.examples)

    def per_conversation():
        return sum(len(tokenizer.apply_chat_template(m, tools=t, return_dict=True,
                                                     return_assistant_tokens_mask=True)["input_ids"])
                   for m, t in corpus)

    def batched():
        total = 0
        for start in range(0, len(corpus), BATCH):
            out = tokenizer.apply_chat_template([m for m, _ in corpus[start:start + BATCH]], tools=tools,
                                                return_dict=True, return_assistant_tokens_mask=True)
            total += sum(len(ids) for ids in out["input_ids"])
        return total

    exports = iter(range(10**6))

    def end_to_end():
        summary = export_sft(SftExportConfig(store=store, out=work / f"tokens-{next(exports)}", min_verifier="any",
                                             tokenizer=tokenizer_dir, lam=lam))
        return sum(summary.tokens.values())

    rows = {}
    for name, fn in (("logmine Renderer.render", ours), ("apply_chat_template per conversation", per_conversation),
                     ("apply_chat_template batched", batched)):
        seconds, tokens = _best(runs, fn)
        rows[name] = {"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds}
    seconds, tokens = _best(runs, end_to_end)
    rows["export_sft end to end (1 copy)"] = {"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds}

    identical = unstable = 0
    zero = Renderer(tokenizer, 0.0)
    for (messages, conv_tools), result in zip(conversations, zero.render(conversations)):
        if not result.examples:
            unstable += 1
            continue
        trl = tokenizer.apply_chat_template(messages, tools=conv_tools, return_dict=True,
                                            return_assistant_tokens_mask=True)
        example = result.examples[0]
        identical += (example.input_ids == trl["input_ids"]
                      and (example.source == ACTION).astype(int).tolist() == list(trl["assistant_masks"]))
    ours_s = rows["logmine Renderer.render"]["seconds"]
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "conversations": len(corpus), "distinct": len(conversations),
        "messages": sum(len(m) for m, _ in corpus), "tokenizer": str(tokenizer_dir), "vocab": len(tokenizer),
        "lambda": lam, "rows": rows,
        "ratio": rows["apply_chat_template per conversation"]["seconds"] / ours_s,
        "ratio_batched": rows["apply_chat_template batched"]["seconds"] / ours_s,
        "lambda0_identical": identical, "lambda0_checked": len(conversations) - unstable, "unstable": unstable,
    }


def _print(result: dict) -> None:
    out = sys.stdout
    m = result["machine"]
    print(f"python {m['python']}, {m['cpus']} CPUs, {m['platform']}", file=out)
    print(f"{result['conversations']} conversations ({result['distinct']} distinct, {result['messages']} messages), "
          f"tokenizer {result['tokenizer']} ({result['vocab']} tokens), λ = {result['lambda']}", file=out)
    print(f"\n{'':40} {'seconds':>9} {'tokens':>11} {'tokens/s':>12}", file=out)
    for name, row in result["rows"].items():
        print(f"{name:40} {row['seconds']:9.3f} {row['tokens']:11,} {row['tokens_per_s']:12,.0f}", file=out)
    met = "met" if result["ratio"] >= TARGET else "NOT met"
    print(f"\nratio logmine / apply_chat_template per conversation: {result['ratio']:.2f} "
          f"(target >= {TARGET}: {met})", file=out)
    print(f"ratio logmine / apply_chat_template batched:          {result['ratio_batched']:.2f} (informational)",
          file=out)
    print(f"λ = 0 action mask identical to TRL's assistant mask: {result['lambda0_identical']}/"
          f"{result['lambda0_checked']} conversations ({result['unstable']} not prefix-stable, skipped)", file=out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="copies of the fixture conversations (default 5)")
    parser.add_argument("--runs", type=int, default=3, help="measured runs of each, the best counts (default 3)")
    parser.add_argument("--lam", type=float, default=1.0, help="observation weight λ (default 1.0)")
    parser.add_argument("--vocab", type=int, default=8192, help="vocabulary of the tiny tokenizer (default 8192)")
    parser.add_argument("--tokenizer", type=Path, help="a local tokenizer directory to use instead")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="logmine-bench-export-") as work:
        result = measure(args.repeat, args.runs, args.lam, args.vocab, args.tokenizer, Path(work))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)
    if args.check and (result["ratio"] < TARGET or result["lambda0_identical"] != result["lambda0_checked"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
