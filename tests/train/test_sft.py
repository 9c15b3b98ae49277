"""The SFT trainer on a tiny random model: config, learning, packing, λ, resume, init-model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from logmine.config import ConfigError, load_config
from logmine.train.data import collate, load_examples
from logmine.train.loss import actobs_loss, step_denominator, token_nll
from logmine.train.sft import TrainError, train_sft
from logmine.train.sft_config import SftTrainConfig
from logmine.train.tiny import init_model

RECIPE = Path(__file__).parents[2] / "train" / "sft-actobs.yaml"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return init_model(tmp_path_factory.mktemp("tiny") / "model", hidden_size=16, intermediate_size=32,
                      vocab_size=300)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """12 fixed examples: prompt tokens (0), action tokens (1), observation tokens (0.5)."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        n_p, n_a, n_o = 3, 4 + i % 3, 3 + i % 4
        source = ["prompt"] * n_p + ["action"] * n_a + ["observation"] * n_o + ["action"] * 2
        weights = [{"prompt": 0.0, "action": 1.0, "observation": 0.5}[s] for s in source]
        ids = [int(x) for x in rng.integers(10, 60, len(source))]
        rows.append({"input_ids": ids, "loss_weights": weights, "source": source})
    out = tmp_path_factory.mktemp("sft") / "sft"
    (out / "tokens").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), out / "tokens" / "tokens-00000-of-00001.parquet")
    return out


def _config(data, tiny, out, **kw) -> SftTrainConfig:
    values = dict(data=data, model=tiny, out=out, max_steps=4, lr=1e-2, batch_tokens=64, grad_accum=2,
                  schedule="constant", seed=0)
    values.update(kw)
    return load_config(None, values, kind=SftTrainConfig)


def _metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_recipe_defaults_flags_override_unknown_keys_fail(tmp_path):
    config = load_config(RECIPE, {"data": "d", "model": "m", "out": "o", "lr": 0.5, "max_steps": None},
                         kind=SftTrainConfig)
    assert config.lr == 0.5 and config.data == Path("d")
    assert config.normalisation == "example"
    with pytest.raises(ConfigError, match="unknown config key: learning_rate"):
        load_config(RECIPE, {"data": "d", "model": "m", "out": "o", "learning_rate": 1}, kind=SftTrainConfig)
    bad = tmp_path / "bad.yaml"
    bad.write_text("lamda: 0.1\n")
    with pytest.raises(ConfigError, match="unknown config key: lamda"):
        load_config(bad, {"data": "d", "model": "m", "out": "o"}, kind=SftTrainConfig)
    with pytest.raises(ConfigError, match="normalisation must be one of example, batch, got 'token'"):
        load_config(None, {"data": "d", "model": "m", "out": "o", "normalisation": "token"}, kind=SftTrainConfig)
    with pytest.raises(ConfigError, match="missing required setting: out"):
        load_config(None, {"data": "d", "model": "m"}, kind=SftTrainConfig)


def test_loss_decreases_parameters_change_metrics_written(tmp_path, data, tiny):
    config = _config(data, tiny, tmp_path / "run", max_steps=8)
    before = {n: p.clone() for n, p in _model(tiny).named_parameters()}
    seen = []
    summary = train_sft(config, seen.append)
    rows = _metrics(tmp_path / "run")
    assert seen == rows and [r["step"] for r in rows] == list(range(1, 9))
    assert {"loss", "nll_action", "nll_observation", "lr", "grad_norm", "tokens_per_s"} <= set(rows[0])
    assert np.mean(summary.losses[-2:]) < summary.losses[0] - 0.1
    after = dict(_model(tmp_path / "run" / "final").named_parameters())
    assert all(not torch.equal(before[n], after[n]) for n in before)
    with pytest.raises(TrainError, match="is in use"):
        train_sft(config)


def test_resume_reproduces_the_next_steps_exactly(tmp_path, data, tiny):
    full = _config(data, tiny, tmp_path / "full", max_steps=4, save_every=2, schedule="cosine", warmup_steps=1)
    train_sft(full)
    resumed_dir = tmp_path / "resumed"
    (resumed_dir / "checkpoints").mkdir(parents=True)
    shutil.copytree(tmp_path / "full" / "checkpoints" / "step-2", resumed_dir / "checkpoints" / "step-2")
    summary = train_sft(_config(data, tiny, resumed_dir, max_steps=4, save_every=2, schedule="cosine",
                                warmup_steps=1, resume=True))
    assert summary.resumed_from == 2
    assert [r["loss"] for r in _metrics(resumed_dir)] == [r["loss"] for r in _metrics(tmp_path / "full")[2:]]


def test_packed_and_padded_batches_give_the_same_loss(data, tiny):
    model = _model(tiny)
    examples = load_examples(data)[:5]
    den = step_denominator([float(e.weights[1:].sum()) for e in examples], "example")
    losses = []
    for packed in (True, False):
        mb = collate(examples, 0, packed)
        # use_cache=False: transformers only derives packed attention from position ids without a cache
        logits = model(input_ids=mb.input_ids, position_ids=mb.position_ids, attention_mask=mb.attention_mask,
                       use_cache=False).logits
        losses.append(actobs_loss(token_nll(logits, mb.targets), mb.weights, mb.segment, "example", den).item())
    one_by_one = []
    for ex in examples:
        mb = collate([ex], 0)
        logits = model(input_ids=mb.input_ids).logits
        one_by_one.append(actobs_loss(token_nll(logits, mb.targets), mb.weights, mb.segment, "example", den).item())
    assert losses[0] == pytest.approx(losses[1], abs=1e-5)
    assert losses[0] == pytest.approx(sum(one_by_one), abs=1e-5)


def test_lambda_override_reweights_observations(data, tiny, tmp_path):
    exported = load_examples(data)
    zero = load_examples(data, lam=0.0)
    assert all(e.weights[e.observation].min() == 0.5 for e in exported)
    assert all(z.weights[z.observation].max() == 0.0 and (z.weights[~z.observation] == e.weights[~e.observation]).all()
               for z, e in zip(zero, exported))
    rows = _metrics_after(train_sft(_config(data, tiny, tmp_path / "run", max_steps=1, lam=0.0)))
    assert rows[0]["nll_observation"] is not None  # logged even when it carries no weight


def test_lora_trains_only_adapters(tmp_path, data, tiny):
    pytest.importorskip("peft")
    summary = train_sft(_config(data, tiny, tmp_path / "run", max_steps=2, lora=True, lora_r=2))
    assert summary.steps == 2 and (tmp_path / "run" / "final" / "adapter_config.json").exists()


def test_init_model_is_a_loadable_model_with_a_tool_calling_template(tiny):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny), local_files_only=True)
    messages = [{"role": "user", "content": "fix it"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "a.py"}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>' in text
    out = tokenizer.apply_chat_template(messages, return_dict=True, return_assistant_tokens_mask=True)
    assert sum(out["assistant_masks"]) > 0
    assert _model(tiny).config.num_hidden_layers == 2


def _model(path: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)


def _metrics_after(summary) -> list[dict]:
    return _metrics(summary.out)
