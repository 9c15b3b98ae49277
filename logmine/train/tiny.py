"""A tiny model for demos and tests, built offline: ``init_model(out)`` writes a random-initialised
Qwen2-style (or Llama-style) causal LM and a byte-level BPE tokenizer trained locally on a small
built-in corpus (plus any ``texts``), with a ChatML chat template that renders tools and tool calls
and marks assistant output with ``{% generation %}`` (so ``return_assistant_tokens_mask`` and TRL's
``assistant_only_loss`` work). Nothing is downloaded; the result is a normal ``save_pretrained``
directory for ``AutoModelForCausalLM`` / ``AutoTokenizer``, ``logmine export sft --tokenizer`` and
``logmine train sft --model``.

The template and tokenizer are the ones of tests/export/tiny_tokenizer.py (copied: tests are not
importable from the package). The model's weights are random: its loss says whether training
works, not what it learned.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from logmine.config import ConfigError

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen2's (and Llama 3's) pre-tokenization: runs of newlines are one piece whatever follows them
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
              r"|\s+(?!\S)|\s+")

_SYSTEM_AND_TOOLS = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}
{{- '\\n</tools><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
"""

_ASSISTANT = """\
{{- '<|im_start|>assistant\\n' }}
{%- generation %}
{%- if THINK_CONDITION %}{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n' }}{%- endif %}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- for call in message.tool_calls or [] %}
{%- if message.content or not loop.first %}{{- '\\n' }}{%- endif %}
{{- '<tool_call>\\n{"name": "' + call.function.name + '", "arguments": ' + call.function.arguments + '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>' }}
{%- endgeneration %}
{{- '\\n' }}
"""

_TEMPLATE = (_SYSTEM_AND_TOOLS + """\
{%- for message in messages %}
{%- if message.role == 'user' %}
{{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
""" + _ASSISTANT + """\
{%- elif message.role == 'tool' %}
{{- '<|im_start|>tool\\n' + message.content + '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
""")


def chatml_template(think_condition: str = "message.reasoning_content") -> str:
    """ChatML with tools, an assistant turn's ``reasoning_content`` rendered where the Jinja expression
    ``think_condition`` holds (the default: in every turn, so the rendering is prefix-stable)."""
    return _TEMPLATE.replace("THINK_CONDITION", think_condition)


CHATML_TOOLS = chatml_template()  # what init-model's tokenizer carries

_CORPUS = """\
You are a coding agent working in a repository. Use the bash tool to run commands and apply_patch
to edit files. The add function is broken; fix it and make the tests pass. Run the tests first.
python -m pytest -q failed: assert add(2, 3) == 5. Fixed add in calc.py; tests pass.
*** Begin Patch
*** Update File: calc.py
@@
 def add(a, b):
-    return a - b
+    return a + b
*** End Patch
Success. Updated the following files: M calc.py [exit code: 0] [exit code: 1]
{"type": "function", "function": {"name": "bash", "description": "Run a shell command",
"parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}
<tool_call> </tool_call> <tools> </tools> <think> </think> the a of to in is it and that for with
ls -la; cat README.md; git status; git diff; grep -rn TODO src/ tests/; echo hello world

Paragraphs are separated by blank lines.

So a blank line is one token.

"""


def train_tokenizer(texts: Iterable[str] = (), vocab_size: int = 512, metaspace: bool = False):
    """A BPE ``tokenizers.Tokenizer`` trained on ``texts`` (plus a small built-in corpus): byte-level
    with Qwen2's pre-tokenization, or with ``metaspace`` SentencePiece style (``▁`` for spaces, prepended to the
    first word of the input only, as Llama's and Mistral's tokenizers do)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    if metaspace:
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
        tok.decoder = decoders.Metaspace(prepend_scheme="first")
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[*SPECIALS, "<unk>"], show_progress=False)
    else:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([_CORPUS, *texts], trainer)
    return tok


def tiny_tokenizer(template: str = CHATML_TOOLS, texts: Iterable[str] = (), vocab_size: int = 512,
                   metaspace: bool = False):
    """A ``PreTrainedTokenizerFast`` with ``template`` as its chat template."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=train_tokenizer(texts, vocab_size, metaspace),
                                        bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        unk_token=None)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tokenizer.chat_template = template
    return tokenizer


ARCHITECTURES = ("qwen2", "llama")


def init_model(out: Path, *, arch: str = "qwen2", hidden_size: int = 32, layers: int = 2, heads: int = 4,
               kv_heads: int = 2, intermediate_size: int = 64, vocab_size: int = 512, max_positions: int = 8192,
               texts: Iterable[str] = (), seed: int = 0) -> Path:
    """Write the tokenizer and a random ``arch`` model of the given shape to ``out``; returns ``out``.
    The same arguments give the same weights. Raises ``ValueError`` for an unknown ``arch``."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    if arch not in ARCHITECTURES:
        raise ConfigError(f"arch must be one of {', '.join(ARCHITECTURES)}, got {arch!r}")
    tokenizer = tiny_tokenizer(texts=texts, vocab_size=vocab_size)
    config_class = Qwen2Config if arch == "qwen2" else LlamaConfig
    config = config_class(vocab_size=len(tokenizer), hidden_size=hidden_size, num_hidden_layers=layers,
                          num_attention_heads=heads, num_key_value_heads=kv_heads,
                          intermediate_size=intermediate_size, max_position_embeddings=max_positions,
                          tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
                          eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out
