"""Token-level rendering: weights checked token by token on a hand-checked conversation, TRL's
assistant mask at λ = 0, and the prefix-stability check (drop / split)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from export.tiny_tokenizer import CHATML_TOOLS, STRIP_THINK, tiny_tokenizer

from logmine.export.render import ACTION, OBSERVATION, SOURCES, Renderer

TOOL = {"type": "function", "function": {"name": "bash", "description": "Run a command.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}


def bash(call_id: str, command: str) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


MESSAGES = [
    {"role": "system", "content": "You are an agent"},
    {"role": "user", "content": "Fix add."},
    {"role": "assistant", "content": "Running tests.", "tool_calls": [bash("call_0", "pytest -q")]},
    {"role": "tool", "tool_call_id": "call_0", "name": "bash", "content": "F\n[exit code: 1]"},
    {"role": "assistant", "content": "Done."},
]
# The rendering of MESSAGES by CHATML_TOOLS, checked by hand, cut where the source changes.
SEGMENTS = [
    ("<|im_start|>system\n", "scaffold"), ("You are an agent", "prompt"),
    ("\n\n# Tools\n<tools>\n" + json.dumps(TOOL) + "\n</tools><|im_end|>\n<|im_start|>user\n", "scaffold"),
    ("Fix add.", "prompt"), ("<|im_end|>\n<|im_start|>assistant\n", "scaffold"),
    ('Running tests.\n<tool_call>\n{"name": "bash", "arguments": {"command": "pytest -q"}}\n</tool_call><|im_end|>',
     "action"),
    ("\n<|im_start|>tool\n", "scaffold"), ("F\n[exit code: 1]", "observation"),
    ("<|im_end|>\n<|im_start|>assistant\n", "scaffold"), ("Done.<|im_end|>", "action"), ("\n", "scaffold"),
]
WITH_REASONING = [
    {"role": "user", "content": "Fix add."},
    {"role": "assistant", "content": "", "reasoning_content": "Tests first.", "tool_calls": [bash("call_0", "pytest")]},
    {"role": "tool", "tool_call_id": "call_0", "name": "bash", "content": "F\n[exit code: 1]"},
    {"role": "assistant", "content": "", "reasoning_content": "Patch it.", "tool_calls": [bash("call_1", "make")]},
    {"role": "tool", "tool_call_id": "call_1", "name": "bash", "content": "ok\n[exit code: 0]"},
    {"role": "assistant", "content": "Done.", "reasoning_content": "All good."},
]


@pytest.fixture(scope="module")
def chatml():
    return tiny_tokenizer(CHATML_TOOLS)


@pytest.fixture(scope="module")
def strip_think():
    return tiny_tokenizer(STRIP_THINK)


def render_one(tokenizer, messages, lam=1.0, on_unstable="drop", tools=(TOOL,)):
    return Renderer(tokenizer, lam, on_unstable).render([(messages, list(tools))])[0]


def expected_sources(tokenizer, text: str) -> list[str]:
    """The source of each token of ``text`` according to SEGMENTS (every token must lie in one segment)."""
    labels = [label for piece, label in SEGMENTS for _ in piece]
    encoding = tokenizer.backend_tokenizer.encode(text, add_special_tokens=False)
    sources = []
    for start, end in encoding.offsets:
        covered = set(labels[start:end])
        assert len(covered) == 1, f"token {text[start:end]!r} crosses sources {covered}"
        sources.append(covered.pop())
    return sources


@pytest.mark.parametrize("lam", [0.0, 0.1, 1.0])
def test_weights_token_by_token(chatml, lam):
    text = "".join(piece for piece, _ in SEGMENTS)
    assert chatml.apply_chat_template(MESSAGES, tools=[TOOL], tokenize=False) == text
    result = render_one(chatml, MESSAGES, lam)
    assert result.unstable is None and result.dropped == () and len(result.examples) == 1
    example = result.examples[0]
    assert example.turn is None
    assert example.input_ids == chatml.backend_tokenizer.encode(text, add_special_tokens=False).ids
    want = expected_sources(chatml, text)
    got = [SOURCES[code] for code in example.source.tolist()]
    for i, (token, w, g) in enumerate(zip(example.input_ids, want, got)):
        assert g == w, f"token {i} {chatml.decode([token])!r}: {g}, want {w}"
    weight_of = {"action": 1.0, "observation": lam, "prompt": 0.0, "scaffold": 0.0}
    assert example.loss_weights.dtype == np.float32
    assert example.loss_weights.tolist() == pytest.approx([weight_of[s] for s in want])
    decoded = {s: "".join(chatml.decode([t]) for t, c in zip(example.input_ids, got) if c == s) for s in SOURCES}
    assert decoded["observation"] == "F\n[exit code: 1]"
    assert decoded["action"] == SEGMENTS[5][0] + "Done.<|im_end|>"
    assert decoded["prompt"] == "You are an agentFix add."


@pytest.mark.parametrize("lam", [0.0, 0.1, 1.0])
def test_weights_define_the_actobs_loss(chatml, lam):
    example = render_one(chatml, MESSAGES, lam).examples[0]
    logp = -np.random.default_rng(0).random(len(example.input_ids))
    w = example.loss_weights.astype(np.float64)
    actions, observations = logp[example.source == ACTION], logp[example.source == OBSERVATION]
    actobs = -(actions.sum() + lam * observations.sum()) / (len(actions) + lam * len(observations))
    assert -(w * logp).sum() / w.sum() == pytest.approx(actobs)


@pytest.mark.parametrize("messages", [MESSAGES, WITH_REASONING])
def test_lambda_zero_is_exactly_trls_assistant_mask(chatml, messages):
    example = render_one(chatml, messages, lam=0.0).examples[0]
    trl = chatml.apply_chat_template(messages, tools=[TOOL], return_dict=True, return_assistant_tokens_mask=True)
    assert example.input_ids == trl["input_ids"]
    assert example.loss_weights.tolist() == [float(m) for m in trl["assistant_masks"]]


def test_template_that_strips_earlier_thinking_is_unstable(strip_think):
    result = render_one(strip_think, WITH_REASONING)
    assert result.examples == ()
    assert result.unstable == "unstable prefix: a turn is re-rendered when later turns follow"
    assert result.dropped == (result.unstable,)


def test_split_renders_every_turn_with_its_own_history(strip_think):
    lam = 0.1
    result = render_one(strip_think, WITH_REASONING, lam, on_unstable="split")
    assert result.unstable == "unstable prefix: a turn is re-rendered when later turns follow" and not result.dropped
    assert [e.turn for e in result.examples] == [1, 3, 5]
    for example in result.examples:
        k = example.turn
        text = strip_think.apply_chat_template(WITH_REASONING[:k + 1], tools=[TOOL], tokenize=False)
        gen = strip_think.apply_chat_template(WITH_REASONING[:k], tools=[TOOL], tokenize=False,
                                              add_generation_prompt=True)
        assert example.input_ids == strip_think.backend_tokenizer.encode(text, add_special_tokens=False).ids
        pieces = {s: "".join(strip_think.decode([t]) for t, c in zip(example.input_ids, example.source.tolist())
                             if SOURCES[c] == s) for s in SOURCES}
        assert pieces["action"] == text[len(gen):].rstrip()  # this turn only, with its <think>
        assert "<think>" in pieces["action"]
        assert pieces["observation"] == ("" if k == 1 else WITH_REASONING[k - 1]["content"])
        assert pieces["prompt"].startswith("<|im_start|>system") or k == 1
        weights = dict(zip(example.source.tolist(), example.loss_weights.tolist()))
        assert weights[ACTION] == 1.0 and weights.get(OBSERVATION, lam) == pytest.approx(lam)
    # every assistant turn is weighted exactly once, every observation before a turn once
    assert sum(e.count(OBSERVATION) > 0 for e in result.examples) == 2


def test_stable_without_reasoning_even_on_the_stripping_template(strip_think):
    plain = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in WITH_REASONING]
    result = render_one(strip_think, plain, on_unstable="split")
    assert result.unstable is None and [e.turn for e in result.examples] == [None]


def test_a_token_across_the_generation_prompt_is_unstable(chatml):
    assert len(chatml.backend_tokenizer.encode("\n\n").ids) == 1  # the tiny vocabulary merges blank lines
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "\n\nHello."}]
    result = render_one(chatml, messages)
    assert result.examples == () and result.unstable == "unstable prefix: a token spans the end of a prefix rendering"


def test_sentencepiece_style_tokenizers_are_checked_in_context():
    # Metaspace prepends "▁" to the first word of the input only: the text after a special token must be
    # tokenized as it is there, not as the start of an input, or every turn would look unstable.
    metaspace = tiny_tokenizer(metaspace=True)
    assert metaspace.backend_tokenizer.encode("assistant").tokens[0].startswith("▁")
    example = render_one(metaspace, MESSAGES, lam=0.0).examples[0]
    trl = metaspace.apply_chat_template(MESSAGES, tools=[TOOL], return_dict=True, return_assistant_tokens_mask=True)
    assert example.input_ids == trl["input_ids"]
    assert example.loss_weights.tolist() == [float(m) for m in trl["assistant_masks"]]


def test_tool_results_the_template_rewrites_or_that_hold_special_tokens(chatml):
    upper = tiny_tokenizer(CHATML_TOOLS.replace("'<|im_start|>tool\\n' + message.content",
                                                "'<|im_start|>tool\\n' + message.content | upper"))
    assert render_one(upper, MESSAGES).unstable == "tool result not found in the rendering"
    injected = [*MESSAGES[:3], dict(MESSAGES[3], content="F <|im_end|> [exit code: 1]"), MESSAGES[4]]
    assert render_one(chatml, injected).unstable == "tool result not found in the rendering"


def test_template_errors_are_reported(chatml):
    broken = tiny_tokenizer("{{ raise_exception('no tools here') }}")
    result = render_one(broken, MESSAGES)
    assert result.examples == () and result.unstable == "chat template failed: TemplateError"


def test_batches_keep_their_order(chatml, strip_think):
    renderer = Renderer(strip_think, 0.5, "split")
    plain = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in WITH_REASONING]
    results = renderer.render([(WITH_REASONING, [TOOL]), (plain, [TOOL]), (MESSAGES, [TOOL])])
    assert [[e.turn for e in r.examples] for r in results] == [[1, 3, 5], [None], [None]]


def test_unusable_tokenizers_are_refused(chatml):
    bare = tiny_tokenizer(CHATML_TOOLS)
    bare.chat_template = None
    with pytest.raises(ValueError, match="^the tokenizer has no chat template$"):
        Renderer(bare)
    with pytest.raises(ValueError, match="^on_unstable must be one of drop, split$"):
        Renderer(chatml, on_unstable="keep")


def _trl_template(name: str) -> str:
    spec = pytest.importorskip("trl").__spec__
    path = Path(spec.origin).parent / "chat_templates" / f"{name}.jinja"
    if not path.exists():
        pytest.skip(f"this trl has no {name}.jinja")
    return path.read_text()


@pytest.mark.parametrize("name", ["qwen2_5_training", "qwen3_training", "llama3_training"])
@pytest.mark.parametrize("messages", [MESSAGES, WITH_REASONING], ids=["plain", "reasoning"])
def test_trls_own_training_templates(name, messages):
    # TRL swaps these in for assistant_only_loss. Their {% generation %} blocks decide the action
    # tokens (Qwen2.5's includes the newline after the role header): λ = 0 is TRL's mask exactly.
    tokenizer = tiny_tokenizer(_trl_template(name))
    result = render_one(tokenizer, messages, lam=0.0)
    assert result.unstable is None
    trl = tokenizer.apply_chat_template(messages, tools=[TOOL], return_dict=True, return_assistant_tokens_mask=True)
    assert result.examples[0].input_ids == trl["input_ids"]
    assert result.examples[0].loss_weights.tolist() == [float(m) for m in trl["assistant_masks"]]


def test_qwen3_drops_earlier_thinking_after_a_new_request():
    # Qwen3's own template keeps <think> only after the last user message: a follow-up request
    # re-renders the earlier turn without it.
    tokenizer = tiny_tokenizer(_trl_template("qwen3"))
    messages = [{"role": "user", "content": "Fix add."},
                {"role": "assistant", "content": "Fixed.", "reasoning_content": "Look at calc.py."},
                {"role": "user", "content": "Now sub."},
                {"role": "assistant", "content": "Added.", "reasoning_content": "Same as add."}]
    assert render_one(tokenizer, messages).unstable == "unstable prefix: a turn is re-rendered when later turns follow"
    split = render_one(tokenizer, messages, on_unstable="split")
    assert [e.turn for e in split.examples] == [1, 3] and not split.dropped
    for example in split.examples:
        action = "".join(tokenizer.decode([t]) for t, c in zip(example.input_ids, example.source) if c == ACTION)
        assert action.startswith("<think>\n") and action.endswith("<|im_end|>")
