"""export sft end to end: selection, deduplication, limits, the dataset directory, round trips
through 🤗 datasets and TRL's SFTTrainer."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES
from export.tiny_tokenizer import STRIP_THINK, save_tiny_tokenizer, tiny_tokenizer
from session_builder import SessionBuilder

from logmine.export.sft import SftExportConfig, SftExportError, export_sft
from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment
from logmine.store import Store, fetch_dicts
from logmine.verify.records import VERIFICATIONS

SCHEMA = json.loads((Path(__file__).parents[2] / "schemas" / "sft_example.schema.json").read_text())
TESTS = "python3 -m unittest -q"
FIX = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"
SECRET_REASONING = "gAAAAB-encrypted-reasoning-never-exported"


def _fix_session(session_id: str | None = None) -> SessionBuilder:
    return (SessionBuilder(cwd="/work/proj", session_id=session_id)
            .user("Fix add so the tests pass").run(TESTS, 1, "FAILED (failures=1)\n").patch(FIX)
            .run(TESTS, 0, "OK\n").agent("Fixed add.")
            .user("Explain what calc does").agent("It adds numbers."))


def _reasoning(builder: SessionBuilder, text: str) -> SessionBuilder:
    return builder._add("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}],
                                          "encrypted_content": SECRET_REASONING})


def _mark(store_path: Path, prompt: str, status: str, which: int = 0) -> None:
    """Record a verification result for the candidates of the ``which``-th task with ``prompt``."""
    with Store(store_path) as store:
        task = fetch_dicts(store.con.execute("SELECT task_id, seg_gen FROM tasks WHERE prompt = ? "
                                             "ORDER BY source_path", [prompt]))[which]
        rows = fetch_dicts(store.con.execute("SELECT verifier_id, task_id, seg_gen FROM _verifiers_raw "
                                             "WHERE task_id = ?", [task["task_id"]]))
        gen = store.new_gen()
        table = pa.Table.from_pylist([{**r, "status": status, "verify_gen": gen} for r in rows], schema=VERIFICATIONS)
        store.commit({"verifications": table}, {"verified": [(task["task_id"], task["seg_gen"], gen, True, None, None)]})


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("sft")
    sessions = tmp / "sessions"
    _fix_session().write(sessions)
    _fix_session().write(sessions)  # the same work again in another session: a duplicate
    plan = SessionBuilder(cwd="/work/proj").user("Make add faster")
    _reasoning(plan, "Plan first.")._add("response_item", {
        "type": "function_call", "name": "update_plan", "call_id": "call_plan",
        "arguments": json.dumps({"plan": [{"step": "patch", "status": "pending"}]})})
    plan._add("response_item", {"type": "function_call_output", "call_id": "call_plan", "output": "Plan updated"})
    _reasoning(plan, "Now patch.").patch(FIX)
    _reasoning(plan, "Check it.").run(TESTS, 0, "OK\n").agent("Faster now.")
    plan.write(sessions)
    SessionBuilder(cwd="/work/proj").user("Break the tests").patch(FIX).run(TESTS, 0).agent("Done.").write(sessions)
    store = tmp / "store"
    ingest(IngestConfig(paths=(sessions,), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    _mark(store, "Fix add so the tests pass", "validated", 0)
    _mark(store, "Fix add so the tests pass", "validated", 1)
    _mark(store, "Break the tests", "fails_after")
    return store


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    return save_tiny_tokenizer(tmp_path_factory.mktemp("tok") / "chatml")


def run(store: Path, out: Path, **options):
    return export_sft(SftExportConfig(store=store, out=out, **options))


def rows(out: Path, config: str = "data") -> list[dict]:
    return [r for path in sorted((out / config).glob("*.parquet")) for r in pq.read_table(path).to_pylist()]


def test_default_exports_validated_tasks_once(store, tmp_path, tokenizer_dir):
    summary = run(store, tmp_path / "out", tokenizer=tokenizer_dir)
    assert summary.tasks == 6 and summary.examples == 1 and summary.token_examples == 1
    assert summary.duplicates == 1
    assert dict(summary.dropped) == {"duplicate": 1, "no verifier candidate": 2, "verifier not validated yet": 1,
                                     "every verifier refuted": 1}
    rejects = pq.read_table(tmp_path / "out" / "rejects.parquet").to_pylist()
    assert sorted(r["reason"] for r in rejects) == sorted(summary.dropped.elements())
    (row,) = rows(tmp_path / "out")
    assert row["verifier"] == "validated" and row["n_turns"] == 4 and row["n_tool_calls"] == 3
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                                    "assistant", "tool", "assistant"]
    assert [tool["function"]["name"] for tool in json.loads(row["tools"])] == ["bash", "apply_patch"]
    assert row["messages"][3]["content"] == "FAILED (failures=1)\n[exit code: 1]"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["README.md", "data", "rejects.parquet", "tokens"]
    assert [p.name for p in (tmp_path / "out" / "data").iterdir()] == ["train-00000-of-00001.parquet"]


def test_rows_validate_against_the_json_schema(store, tmp_path, tokenizer_dir):
    run(store, tmp_path / "out", tokenizer=tokenizer_dir, min_verifier="any", reasoning="summary", lam=0.25)
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    data = rows(tmp_path / "out")
    assert len(data) == 4
    for row in data:
        jsonschema.validate(row, SCHEMA)
    token_schema = {**SCHEMA["$defs"]["tokens_row"], "$defs": SCHEMA["$defs"]}
    for row in rows(tmp_path / "out", "tokens"):
        jsonschema.validate(row, token_schema)
        weight = {"action": 1.0, "observation": 0.25, "prompt": 0.0, "scaffold": 0.0}
        assert row["loss_weights"] == [weight[s] for s in row["source"]]
        assert row["assistant_masks"] == [int(s == "action") for s in row["source"]]
        assert row["n_action_tokens"] == sum(row["assistant_masks"]) and row["n_tokens"] == len(row["input_ids"])
    assert list(SCHEMA["properties"]) == pq.read_schema(next((tmp_path / "out" / "data").glob("*"))).names


def test_min_verifier_candidate_and_any(store, tmp_path):
    candidate = run(store, tmp_path / "c", min_verifier="candidate")
    assert candidate.examples == 2 and sorted(r["verifier"] for r in rows(tmp_path / "c")) == ["open", "validated"]
    everything = run(store, tmp_path / "a", min_verifier="any", dedupe=False)
    assert everything.examples == 6 and everything.duplicates == 0 and not everything.dropped
    assert sorted(r["verifier"] for r in rows(tmp_path / "a")).count("none") == 2


def test_canonical_tools_drop_plans_and_never_export_encrypted_reasoning(store, tmp_path):
    run(store, tmp_path / "out", min_verifier="candidate", reasoning="summary")
    (plan,) = [r for r in rows(tmp_path / "out") if r["messages"][1]["content"] == "Make add faster"]
    assistant = [m for m in plan["messages"] if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in assistant] == ["Plan first.\n\nNow patch.", "Check it.", None]
    assert [c["function"]["name"] for m in assistant for c in m["tool_calls"] or ()] == ["apply_patch", "bash"]
    assert SECRET_REASONING not in (tmp_path / "out" / "data").joinpath(
        "train-00000-of-00001.parquet").read_bytes().decode("latin-1")
    raw = run(store, tmp_path / "raw", min_verifier="candidate", tools="raw")
    assert raw.left_out == {"injected context": 1}  # the context before the second request
    (plan,) = [r for r in rows(tmp_path / "raw") if r["messages"][1]["content"] == "Make add faster"]
    names = [c["function"]["name"] for m in plan["messages"] for c in m["tool_calls"] or ()]
    assert names == ["update_plan", "apply_patch", "shell_command"]


def test_length_limits_are_counted_drops(store, tmp_path, tokenizer_dir):
    short = run(store, tmp_path / "chars", min_verifier="candidate", max_chars=10)
    assert short.examples == 0 and short.dropped["too long (characters)"] == 2 and short.duplicates == 1
    few = run(store, tmp_path / "tokens", min_verifier="candidate", tokenizer=tokenizer_dir, max_tokens=5)
    assert few.examples == 0 and few.dropped["too many tokens"] == 2
    assert rows(tmp_path / "tokens") == [] and rows(tmp_path / "tokens", "tokens") == []


def test_unstable_conversations_are_dropped_or_split(store, tmp_path):
    strip = save_tiny_tokenizer(tmp_path / "strip", STRIP_THINK)
    options = {"min_verifier": "candidate", "reasoning": "summary", "tokenizer": strip}
    dropped = run(store, tmp_path / "drop", **options)
    reason = "unstable prefix: a turn is re-rendered when later turns follow"
    assert dropped.dropped[reason] == 1 and dropped.unstable == {reason: 1} and dropped.examples == 1
    split = run(store, tmp_path / "split", on_unstable="split", **options)
    assert split.examples == 2 and split.unstable == {reason: 1} and not split.turns_dropped
    ids = [r["example_id"] for r in rows(tmp_path / "split", "tokens")]
    plan_id = next(r["task_id"] for r in rows(tmp_path / "split") if r["messages"][1]["content"] == "Make add faster")
    assert [i for i in ids if i.startswith(plan_id)] == [f"{plan_id}/2", f"{plan_id}/4", f"{plan_id}/6"]
    assert "| not prefix-stable | split |" in (tmp_path / "split" / "README.md").read_text()


def test_dataset_card(store, tmp_path, tokenizer_dir):
    run(store, tmp_path / "out", tokenizer=tokenizer_dir, lam=0.1)
    card = (tmp_path / "out" / "README.md").read_text()
    assert card.startswith("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n"
                           "    path: data/train-*.parquet\n- config_name: tokens\n")
    for line in ("| examples (`data/`) | 1 |", "| duplicates exported once | 1 |", "| λ (observation weight) | 0.1 |",
                 f"| tokenizer | `{tokenizer_dir}` |", "| every verifier refuted | 1 |", "## Redaction",
                 "| g2 | 0.63.0 | gpt-5-codex | 1 |", "-(Σ_A log p + λ Σ_O log p) / (|A| + λ |O|)"):
        assert line in card, line
    longest = max(len(ids) for ids in pq.read_table(tmp_path / "out" / "tokens").column("input_ids").to_pylist())
    assert f"({longest} tokens with the tokenizer of `tokens/`)" in card and "max_length=None" in card
    assert 'data_files="OUT/tokens/*.parquet"' in card and "assistant_only_loss must stay False" in card
    run(store, tmp_path / "plain")
    plain = (tmp_path / "plain" / "README.md").read_text()
    assert "max_length=None" in plain and "tokens/" not in plain.split("## Usage")[1]


def test_datasets_reads_both_configs(store, tmp_path, tokenizer_dir, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "out"
    run(store, out, min_verifier="candidate", tokenizer=tokenizer_dir)
    data = datasets.load_dataset("parquet", data_files=str(out / "data" / "*.parquet"), split="train",
                                 cache_dir=str(tmp_path / "cache"))
    assert data.num_rows == 2 and data[0]["messages"] == rows(out)[0]["messages"]
    assert datasets.load_dataset(str(out), split="train", cache_dir=str(tmp_path / "cache")).num_rows == 2
    tokens = datasets.load_dataset(str(out), "tokens", split="train", cache_dir=str(tmp_path / "cache"))
    assert tokens.column_names[:4] == ["example_id", "task_id", "turn", "input_ids"]
    assert datasets.load_dataset("parquet", data_dir=str(out), split="train",
                                 cache_dir=str(tmp_path / "cache")).column_names == data.column_names


def test_lambda_zero_matches_trls_mask_on_the_fixture_corpus(tmp_path, tokenizer_dir):
    store = tmp_path / "store"  # not conftest's fixture_store: segmenting it here would change what later tests see
    ingest(IngestConfig(paths=(FIXTURES / "codex-public", FIXTURES / "codex-generated"), store=store))
    segment(SegmentConfig(store=store))
    out = tmp_path / "out"
    summary = run(store, out, min_verifier="any", tokenizer=tokenizer_dir, lam=0.0, reasoning="summary")
    assert summary.examples > 20 and summary.token_examples == summary.examples
    tokenizer = tiny_tokenizer()
    tokens = {r["task_id"]: r for r in rows(out, "tokens")}
    for row in rows(out):
        trl = tokenizer.apply_chat_template(row["messages"], tools=json.loads(row["tools"]), return_dict=True,
                                            return_assistant_tokens_mask=True)
        mine = tokens[row["task_id"]]
        assert mine["input_ids"] == trl["input_ids"]
        assert mine["loss_weights"] == [float(m) for m in trl["assistant_masks"]], row["task_id"]


def test_errors_are_one_line(store, tmp_path, tokenizer_dir):
    cases = [
        ({"store": tmp_path / "none"}, f"no logmine store at {tmp_path / 'none'}"),
        ({"min_verifier": "some"}, "min_verifier must be one of validated, candidate, any, got 'some'"),
        ({"lam": 2.0}, "lambda must be between 0 and 1, got 2.0"),
        ({"tokenizer": tmp_path / "missing"}, f"no tokenizer directory at {tmp_path / 'missing'}"),
    ]
    for options, message in cases:
        config = {"store": store, "out": tmp_path / "out", **options}
        with pytest.raises(SftExportError) as info:
            export_sft(SftExportConfig(**config))
        assert str(info.value) == message
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(SftExportError, match=f"^output directory {tmp_path / 'full'} is not empty$"):
        run(store, tmp_path / "full")
    assert run(store, tmp_path / "full", overwrite=True).examples == 1
    assert not (tmp_path / "full" / "x").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # no staging directory left behind


def test_progress_reports_every_task(store, tmp_path):
    seen = []
    run_config = SftExportConfig(store=store, out=tmp_path / "out", min_verifier="any")
    export_sft(run_config, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (6, 6) and seen == sorted(seen)


@pytest.mark.skipif(importlib.util.find_spec("trl") is None or importlib.util.find_spec("torch") is None,
                    reason="trl and torch are not installed")
def test_trl_sft_trainer_consumes_the_export(store, tmp_path, tokenizer_dir, monkeypatch):
    import datasets
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from trl import SFTConfig, SFTTrainer

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / "out"
    run(store, out, min_verifier="candidate", tokenizer=tokenizer_dir, lam=0.0)
    data = datasets.load_dataset("parquet", data_files=str(out / "data" / "*.parquet"), split="train",
                                 cache_dir=str(tmp_path / "cache"))
    tokens = datasets.load_dataset("parquet", data_files=str(out / "tokens" / "*.parquet"), split="train",
                                   cache_dir=str(tmp_path / "cache"))
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=8, intermediate_size=16,
                                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                         max_position_embeddings=2048))
    before = [p.detach().clone() for p in model.parameters()]
    args = SFTConfig(output_dir=str(tmp_path / "trl"), max_steps=2, per_device_train_batch_size=2,
                     assistant_only_loss=True, max_length=None, report_to=[], save_strategy="no", use_cpu=True,
                     learning_rate=1e-2, logging_steps=1)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    by_task = {r["task_id"]: r for r in tokens}
    for task_id, example in zip(data["task_id"], trainer.train_dataset):
        mine = by_task[task_id]
        assert example["input_ids"] == mine["input_ids"]  # TRL's own tokenization of messages + tools
        assert [int(label != -100) for label in example["labels"]] == mine["assistant_masks"]
    trainer.train()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    args = SFTConfig(output_dir=str(tmp_path / "trl"), max_steps=1, report_to=[], save_strategy="no", use_cpu=True,
                     max_length=None)
    pretokenized = SFTTrainer(model=model, args=args, train_dataset=tokens, processing_class=tokenizer)
    assert [int(x != -100) for x in pretokenized.train_dataset[0]["labels"]] == tokens[0]["assistant_masks"]
    with pytest.raises(ValueError, match="not conversational"):  # what the card warns of
        SFTTrainer(model=model, args=SFTConfig(output_dir=str(tmp_path / "trl"), assistant_only_loss=True,
                                               report_to=[], use_cpu=True, max_length=None),
                   train_dataset=tokens, processing_class=tokenizer)
