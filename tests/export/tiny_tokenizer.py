"""A tiny chat tokenizer built locally (nothing is downloaded): the one ``logmine train init-model``
ships (:mod:`logmine.train.tiny`: byte-level BPE trained in memory, wrapped in
``transformers.PreTrainedTokenizerFast``, a ChatML template that renders tools and tool calls and
marks assistant output with ``{% generation %}``), plus a template that strips earlier thinking.

    path = save_tiny_tokenizer(tmp_path / "tok")               # CHATML_TOOLS template
    path = save_tiny_tokenizer(tmp_path / "tok", STRIP_THINK)  # drops <think> of every turn but the last

Used by the export tests and by ``bench/export.py`` (with a larger vocabulary).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from logmine.train.tiny import CHATML_TOOLS, chatml_template, tiny_tokenizer

# Like DeepSeek-R1's template: <think> is kept only in the final message, so appending a turn
# re-renders the previous one without it (prefix-unstable whenever an earlier turn has reasoning).
STRIP_THINK = chatml_template("message.reasoning_content and loop.last")


def save_tiny_tokenizer(path: Path, template: str = CHATML_TOOLS, texts: Iterable[str] = (),
                        vocab_size: int = 512) -> Path:
    """Build the tokenizer and ``save_pretrained`` it to ``path``; returns ``path``."""
    tiny_tokenizer(template, texts, vocab_size).save_pretrained(str(path))
    return path
