"""GRPO step time: `logmine train grpo` (single turn) vs TRL's GRPOTrainer on the same tiny model, prompts
and completion length, in the same run.

    python bench/grpo.py [--steps 8] [--prompts 4] [--group 4] [--completion 32] [--threads 1] [--ref-kl]

Model: `init_model` (hidden 64, 2 layers, vocab 512, random weights), built once and loaded by both.
Tasks: the synthetic TMax family (`synthetic.shell_tasks`), written as a `logmine export tmax` directory.
Both sides render the same prompt ids (the row's [system, user] messages with the `bash` tool through the
chat template; TRL gets that text as a plain prompt, so it does not run its own tool loop) and sample at
T = 1 up to `--completion` tokens, stopping at end-of-turn; a random model rarely stops, so completions
are about that long on both (the means actually generated are printed). One step = `prompts × group`
completions → group advantages → one optimizer step (lr 1e-6, no KL, no reference model):

- logmine: `max_turns: 1`, DPPO loss, `active_sampling: false` (every step rolls out exactly P × G) and
  `zero_std_eps: 0` (a random policy's rewards are all 0; the default would drop every group and skip
  the update). Every completion opens a bubblewrap sandbox, and one that holds a valid tool call is run
  and graded there. Step time: the wall time between consecutive steps (`elapsed_s` in metrics.jsonl),
  split into generate, sandbox, update (forward/backward/optimizer + weight sync) and other (the rest of
  the step; today chiefly closing the sandboxes of rollouts that ended during the turn, which
  `run_rollouts` does serially and outside its `sandbox_s` clock).
- TRL: `per_device_train_batch_size = P × G`, `num_generations = G`, one generation per optimizer step
  (so no old-log-prob pass), default DAPO loss, β = 0, a Python reward of 0.0. Step time: wall time
  from `on_step_begin` to `on_step_end`, split into generate (`_generate_single_turn`), scoring (the
  rest of `_generate_and_score_completions`: tokenising, rewards, advantages) and update (the rest of
  the step: forward/backward/optimizer and the trainer's own overhead).

The first step of each side is warm-up and not counted. Prints the mean step times, their split, the
ratio logmine / TRL and whether the target (≤ 1.5×) is met. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
TARGET = 1.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="steps per side; the first is warm-up (default 8)")
    parser.add_argument("--prompts", type=int, default=4, help="P prompts per step (default 4)")
    parser.add_argument("--group", type=int, default=4, help="G completions per prompt (default 4)")
    parser.add_argument("--completion", type=int, default=32, help="C: max completion tokens (default 32)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for both (default 1: the model is "
                        "tiny, and more threads than idle cores make step times swing by 10-100x)")
    parser.add_argument("--ref-kl", action="store_true", help="logmine: keep its default reference-model KL "
                        "pass (logged, β = 0); off by default, as TRL with β = 0 loads no reference")
    parser.add_argument("--trained", action="store_true", help="SFT the model first (100 steps on solved "
                        "synthetic tasks), so completions are tool calls that logmine runs in the sandbox")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # child process: one measured run
    args = parser.parse_args()
    if args.run:
        return _child(json.loads(args.run))
    if args.steps < 2:
        parser.error("--steps must be at least 2 (the first step is warm-up)")
    work = Path(tempfile.mkdtemp(prefix="bench-grpo-"))
    from logmine.agent import synthetic
    from logmine.train.tiny import init_model
    init_model(work / "model", hidden_size=64, intermediate_size=128, layers=2, vocab_size=512,
               texts=synthetic.texts())
    synthetic.write_tmax(synthetic.shell_tasks(max(1, -(-args.prompts * args.steps // 6))), work / "tasks")
    if args.trained:  # a policy that calls tools: the sandbox path is measured, not skipped
        import shutil

        from transformers import AutoTokenizer

        from logmine.config import load_config
        from logmine.train.sft import train_sft
        from logmine.train.sft_config import SftTrainConfig
        synthetic.write_sft(synthetic.shell_tasks(8, seed=1), AutoTokenizer.from_pretrained(str(work / "model")),
                            work / "sft-data")
        train_sft(load_config(None, {"data": work / "sft-data", "model": work / "model", "out": work / "sft",
                                     "max_steps": 100, "lr": 3e-3, "schedule": "constant"}, kind=SftTrainConfig))
        shutil.rmtree(work / "model")
        shutil.copytree(work / "sft" / "final", work / "model")
    spec = dict(work=str(work), steps=args.steps, prompts=args.prompts, group=args.group,
                completion=args.completion, threads=args.threads, ref_kl=args.ref_kl)
    results = {name: _measure(dict(spec, kind=name)) for name in ("logmine", "trl")}
    print(f"{args.steps - 1} measured steps (after 1 warm-up) of {args.prompts} prompts × {args.group} completions, "
          f"≤ {args.completion} tokens, {args.threads} torch thread(s); {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"{'':8s} {'step s':>8s} {'generate':>9s} {'sandbox':>8s} {'scoring':>8s} {'update':>8s} {'other':>8s}"
          f"  {'completion':>10s}  prompt")
    for name, r in results.items():
        print(f"{name:8s} {r['step_s']:8.3f} " + " ".join(f"{r[k]:{w}.3f}" if k in r else f"{'-':>{w}s}" for k, w in
                                                       (("generate_s", 9), ("sandbox_s", 8), ("scoring_s", 8),
                                                        ("update_s", 8), ("other_s", 8)))
              + f"  {r['completion_tokens']:10.1f}  {r['prompt_tokens']:.0f}")
    ratio = results["logmine"]["step_s"] / results["trl"]["step_s"]
    print(f"ratio logmine / trl: {ratio:.2f}x (target ≤ {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'})")
    print(f"logmine rollout ends: {results['logmine']['ends']}")


def _measure(spec: dict) -> dict:
    done = subprocess.run([sys.executable, __file__, "--run", json.dumps(spec)], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"Error: the {spec['kind']} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child(spec: dict) -> None:
    import torch
    torch.set_num_threads(spec["threads"])
    result = _trl(spec) if spec["kind"] == "trl" else _logmine(spec)
    print(json.dumps(result))


def _logmine(spec: dict) -> dict:
    from logmine.config import load_config
    from logmine.train.grpo import train_grpo
    from logmine.train.grpo_config import GrpoTrainConfig

    work = Path(spec["work"])
    out = work / "logmine"
    config = load_config(None, dict(data=work / "tasks", model=work / "model", out=out, max_steps=spec["steps"],
                                    prompts_per_step=spec["prompts"], group_size=spec["group"], max_turns=1,
                                    max_turn_tokens=spec["completion"], temperature=1.0, lr=1e-6, loss="dppo",
                                    active_sampling=False, zero_std_eps=0.0, ref_kl=spec["ref_kl"], seed=0),
                         kind=GrpoTrainConfig)
    train_grpo(config)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(r["groups_kept"] == spec["prompts"] and r["grad_norm"] is not None for r in rows), \
        "every step must update on all its groups"
    # a step's wall time: from the end of the previous step's row to the end of its own (model loading excluded)
    measured = [(row, row["elapsed_s"] - prev["elapsed_s"]) for prev, row in zip(rows, rows[1:])]
    n = len(measured)
    mean = {k: sum(r.get(k, 0.0) for r, _ in measured) / n for k in ("generate_s", "sandbox_s", "update_s")}
    step_s = sum(s for _, s in measured) / n
    ends: dict[str, int] = {}
    for r, _ in measured:
        for end, count in r["ends"].items():
            ends[end] = ends.get(end, 0) + count
    prompt = [json.loads(line)["prompt_tokens"] for line in (out / "rollouts.jsonl").read_text().splitlines()]
    return {"step_s": step_s, **mean, "other_s": step_s - sum(mean.values()),
            "completion_tokens": sum(r["sampled_tokens"] / r["rollouts"] for r, _ in measured) / n,
            "prompt_tokens": sum(prompt) / len(prompt), "ends": ends}


def _trl(spec: dict) -> dict:
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from logmine.agent.rollout import ChatFormat
    from logmine.agent.tasks import load_tasks

    work = Path(spec["work"])
    tokenizer = AutoTokenizer.from_pretrained(str(work / "model"))
    fmt = ChatFormat.from_tokenizer(tokenizer)
    tasks = load_tasks(work / "tasks")
    # logmine's prompt text (messages + bash tool schema); TRL tokenises it back to the same ids (checked)
    prompts = [tokenizer.decode(fmt.prompt_ids(list(t.messages))) for t in tasks]
    assert all(tokenizer(p)["input_ids"] == fmt.prompt_ids(list(t.messages)) for p, t in zip(prompts, tasks))
    steps: list[float] = []
    logged: list[dict] = []
    parts = {"generate_s": [], "rollout_s": []}

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.monotonic()

        def on_step_end(self, args, state, control, **kw):
            steps.append(time.monotonic() - self.t0)

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "completions/mean_length" in logs:
                logged.append(logs)

    def zero_reward(completions, **kw):
        return [0.0] * len(completions)

    config = GRPOConfig(output_dir=str(work / "trl"), max_steps=spec["steps"],
                        per_device_train_batch_size=spec["prompts"] * spec["group"], gradient_accumulation_steps=1,
                        num_generations=spec["group"], max_completion_length=spec["completion"], temperature=1.0,
                        top_p=1.0, top_k=0, learning_rate=1e-6, lr_scheduler_type="constant", warmup_steps=0,
                        weight_decay=0.0, max_grad_norm=1.0, beta=0.0, loss_type="dapo", logging_steps=1,
                        save_strategy="no", report_to="none", bf16=False, use_cpu=True, disable_tqdm=True,
                        dataloader_num_workers=0, seed=0)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(str(work / "model")), reward_funcs=zero_reward,
                          args=config, train_dataset=datasets.Dataset.from_dict({"prompt": prompts}),
                          processing_class=tokenizer, callbacks=[Clock()])
    for name, key in (("_generate_single_turn", "generate_s"), ("_generate_and_score_completions", "rollout_s")):
        trainer.__dict__[name] = _timed(getattr(trainer, name), parts[key])
    trainer.train()
    assert len(steps) == spec["steps"] and len(parts["rollout_s"]) == spec["steps"], (steps, parts)
    n = len(steps) - 1
    step_s = sum(steps[1:]) / n
    generate = sum(parts["generate_s"][1:]) / n
    rollout = sum(parts["rollout_s"][1:]) / n
    return {"step_s": step_s, "generate_s": generate, "scoring_s": rollout - generate, "update_s": step_s - rollout,
            "completion_tokens": sum(r["completions/mean_length"] for r in logged[1:]) / max(len(logged) - 1, 1),
            "prompt_tokens": sum(len(tokenizer(p)["input_ids"]) for p in prompts) / len(prompts)}


def _timed(fn, into: list[float]):
    def wrapper(*a, **kw):
        t0 = time.monotonic()
        try:
            return fn(*a, **kw)
        finally:
            into.append(time.monotonic() - t0)
    return wrapper


if __name__ == "__main__":
    main()
