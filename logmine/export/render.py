"""Token-level rendering of a conversation with per-token loss weights (ActObs).

Every token of the rendered chat gets a ``source`` and a weight:

| source        | what                                                                      | weight |
|---------------|---------------------------------------------------------------------------|--------|
| ``action``      | what the agent wrote: an assistant turn (text, reasoning, tool calls, their markup, the end-of-turn token) | 1 |
| ``observation`` | the content of a tool result                                              | λ      |
| ``prompt``      | the content of system and user messages (``split`` examples: all their history) | 0 |
| ``scaffold``    | everything else the template adds (role headers, generation prompts, separators) | 0 |

so ``-Σ w·log p / Σ w`` is the ActObs loss ``-(Σ_A log p + λ Σ_O log p) / (|A| + λ|O|)``; λ = 0 is
action-only SFT. Where an assistant turn's action starts and ends: a template with
``{% generation %}`` blocks says so itself, and those blocks are used — then the action tokens are
exactly those of TRL's ``return_assistant_tokens_mask`` (a token belongs to a span when it overlaps
it); each block must lie within its turn, after the turn's observations, or the example is dropped.
Without blocks, the action runs from the end of the generation prompt through the end-of-turn token
(trailing whitespace excluded).

Turns come from incremental rendering: for every assistant turn k the template renders
``messages[:k]`` with the generation prompt (what the model was given) and ``messages[:k+1]`` (where
it stopped). **Prefix stability** is checked, not assumed: both renderings must be prefixes of the
full rendering, and the token ids of each must be a prefix of the full token ids (its end falls
between two tokens, and the text from the last special token on tokenizes the same alone;
tokenizers split on special tokens first, so this is exact). Where it fails (a template that drops
the reasoning of earlier turns, a BPE merge across the boundary), the conversation is either dropped
(``on_unstable="drop"``, the default) or re-rendered per turn (``"split"``): one example per
assistant turn, with its own history as prompt, weighting that turn (1) and the tool results just
before it (λ); a turn that fails even then is dropped. Tool results after the last assistant turn
are not in any ``split`` example. Either way the reason is reported, never a silent mis-weight.

Observation and prompt contents are located in their turn's stretch of the rendering by text search
(from the end); a tool result whose text the template changed, or that contains a special token's
text, cannot be located and drops the example. Tool-call arguments reach the template as the JSON
strings the dataset stores; a template that fails on strings (one that iterates the arguments) is
given them as objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SOURCES = ("scaffold", "prompt", "action", "observation")
SCAFFOLD, PROMPT, ACTION, OBSERVATION = range(4)
UNSTABLE_MODES = ("drop", "split")


@dataclass(frozen=True, slots=True)
class TokenizedExample:
    """One training sequence: token ids and, per token, its loss weight and its source."""

    turn: int | None  # split mode: index of the weighted assistant message; None: the whole conversation
    input_ids: list[int]
    loss_weights: np.ndarray  # float32, one per token
    source: np.ndarray  # uint8 codes into SOURCES, one per token

    def count(self, source: int) -> int:
        return int(np.count_nonzero(self.source == source))


@dataclass(frozen=True, slots=True)
class RenderResult:
    """What became of one conversation: its examples, and the reasons of what was left out."""

    examples: tuple[TokenizedExample, ...]
    unstable: str | None = None  # why the whole conversation could not be used, if it could not
    dropped: tuple[str, ...] = ()  # reasons of the examples (conversation, or turns) left out


@dataclass(frozen=True, slots=True)
class _Layout:
    """A rendering before tokenization: labelled character spans, and the offsets where its token
    sequence must split exactly (the ends of prefix renderings)."""

    turn: int | None
    text: str
    spans: tuple[tuple[int, int, int], ...]  # (start, end, source), applied in order; the rest is scaffold
    boundaries: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Plan:
    """One conversation rendered in full, and where its prefix renderings around each assistant
    turn end (their texts are not kept: a long conversation has many)."""

    messages: Sequence[dict]
    tools: Sequence[dict]
    assistants: tuple[int, ...]
    full: str
    gen_ends: dict[int, int]  # per assistant index k: len(messages[:k] rendered with the generation prompt)
    turn_ends: dict[int, tuple[int, int]]  # per k: len(messages[:k+1] rendered), without and with trailing space
    unstable: str | None  # the first prefix rendering that is not a prefix of the full rendering
    tags: list | None  # character spans of the template's {% generation %} blocks in full; None: no tags
    objects: bool  # the template needed tool-call arguments as objects


def load_tokenizer(path: Path):
    """A tokenizer saved locally (``save_pretrained`` directory); never downloads. Raises
    ``ValueError`` when there is none or it cannot be loaded."""
    from transformers import AutoTokenizer

    if not Path(path).is_dir():
        raise ValueError(f"no tokenizer directory at {path}")
    try:
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot load the tokenizer at {path}: {str(exc).splitlines()[0]}") from exc


class Renderer:
    """Renders conversations with ``tokenizer``'s chat template into weighted token sequences.
    Raises ``ValueError`` for a tokenizer it cannot use (no chat template, not a fast tokenizer)."""

    CHUNK = 16  # conversations rendered while the previous chunk is tokenized

    def __init__(self, tokenizer, lam: float = 1.0, on_unstable: str = "drop"):
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template")
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ValueError("the tokenizer is not a fast (Rust) tokenizer")
        if on_unstable not in UNSTABLE_MODES:
            raise ValueError(f"on_unstable must be one of {', '.join(UNSTABLE_MODES)}")
        self.tokenizer, self.lam, self.on_unstable = tokenizer, lam, on_unstable
        self._template = _ChatTemplate(tokenizer)
        self._backend = backend
        added = backend.get_added_tokens_decoder()  # the tokenizer splits text on these first
        self._special_ids = frozenset(added)
        texts = sorted({token.content for token in added.values() if token.content}, key=len, reverse=True)
        self._special_re = re.compile("|".join(map(re.escape, texts))) if texts else None
        self._special_len = len(texts[0]) if texts else 0
        self._weights = np.array([0.0, 0.0, 1.0, lam], dtype=np.float32)  # indexed by source

    def render(self, conversations: Sequence[tuple[Sequence[dict], Sequence[dict]]]) -> list[RenderResult]:
        """One :class:`RenderResult` per ``(messages, tools)``, in order. Conversations go through in
        chunks: while the Rust tokenizer encodes one chunk (in its threads, without the GIL), the
        chat template renders the next."""
        outcomes: list[TokenizedExample | str] = []
        plans: list[_Plan | str] = []
        with ThreadPoolExecutor(max_workers=1) as encoder:
            pending = None
            for start in range(0, len(conversations), self.CHUNK):
                chunk = [self._plan(messages, tools) for messages, tools in conversations[start:start + self.CHUNK]]
                layouts = [self._whole(plan) if isinstance(plan, _Plan) else plan for plan in chunk]
                future = encoder.submit(self._encode, layouts)
                if pending:
                    outcomes += self._weigh_all(*pending)
                plans += chunk
                pending = (layouts, future)
            if pending:
                outcomes += self._weigh_all(*pending)
        results: list[RenderResult] = []
        retry: dict[int, list[_Layout | str]] = {}
        for i, (plan, outcome) in enumerate(zip(plans, outcomes)):
            if isinstance(outcome, TokenizedExample):
                results.append(RenderResult((outcome,)))
            elif self.on_unstable == "split" and isinstance(plan, _Plan):
                retry[i] = self._turns(plan)
                results.append(RenderResult((), unstable=outcome))
            else:
                results.append(RenderResult((), unstable=outcome, dropped=(outcome,)))
        if retry:
            layouts = [layout for turns in retry.values() for layout in turns]
            parts = iter(self._weigh_all(layouts, self._encode(layouts)))
            for i, turns in retry.items():
                done = [next(parts) for _ in turns]
                examples = tuple(d for d in done if isinstance(d, TokenizedExample))
                results[i] = RenderResult(examples, results[i].unstable, tuple(d for d in done if isinstance(d, str)))
        return results

    # -- rendering -------------------------------------------------------------------------------

    def _plan(self, messages: Sequence[dict], tools: Sequence[dict]) -> _Plan | str:
        try:
            return self._render_prefixes(messages, tools, objects=False)
        except Exception:  # a template may raise anything (raise_exception, TypeError...)
            pass
        try:  # templates that iterate tool-call arguments need them as objects, not JSON strings
            return self._render_prefixes(messages, tools, objects=True)
        except Exception as exc:
            return f"chat template failed: {type(exc).__name__}"

    def _render_prefixes(self, messages: Sequence[dict], tools: Sequence[dict], objects: bool) -> _Plan:
        last = len(messages) - 1
        assistants = tuple(k for k, m in enumerate(messages) if m["role"] == "assistant")
        gen_ends, turn_ends, unstable = {}, {}, None
        prepared = self._template.prepare(messages, tools, objects)
        full, tags = self._template.render_tagged(prepared, last + 1)
        for k in assistants:
            gen = self._template.render(prepared, k, True)
            end = full if k == last else self._template.render(prepared, k + 1, False)
            if not full.startswith(gen):
                unstable = "unstable prefix: a generation prompt is re-rendered later"
            elif not full.startswith(end):
                unstable = "unstable prefix: a turn is re-rendered when later turns follow"
            if unstable:
                break
            gen_ends[k], turn_ends[k] = len(gen), (len(end.rstrip()), len(end))
        return _Plan(messages, tools, assistants, full, gen_ends, turn_ends, unstable, tags, objects)

    def _whole(self, plan: _Plan) -> _Layout | str:
        """The whole conversation, every assistant turn weighted; a reason if it is not prefix-stable."""
        if plan.unstable:
            return plan.unstable
        if plan.tags is not None and len(plan.tags) != len(plan.assistants):
            return _TAGS_DISAGREE
        spans, boundaries = [], []
        gap_start, previous = 0, -1
        for j, k in enumerate(plan.assistants):
            gen, (end, end_with_space) = plan.gen_ends[k], plan.turn_ends[k]
            found = self._locate(plan.full, plan.messages[previous + 1:k], gap_start, gen)
            if isinstance(found, str):
                return found
            action = _action(gen, end, end_with_space, plan.tags[j] if plan.tags else None,
                             found[-1][1] if found else gap_start)
            if action is None:
                return _TAGS_DISAGREE
            spans += [*found, action]
            boundaries += [gen, end_with_space]
            gap_start, previous = end_with_space, k
        found = self._locate(plan.full, plan.messages[previous + 1:], gap_start, len(plan.full))
        if isinstance(found, str):
            return found
        return _Layout(None, plan.full, tuple(spans + found), tuple(boundaries))

    def _turns(self, plan: _Plan) -> list[_Layout | str]:
        """``split``: one layout per assistant turn, rendered with its own history (labelled prompt)."""
        prepared = self._template.prepare(plan.messages, plan.tools, plan.objects)
        layouts: list[_Layout | str] = []
        previous = -1
        for n_turns, k in enumerate(plan.assistants, 1):
            window, previous = plan.messages[previous + 1:k], k
            try:
                (text, tags), prompt = self._template.render_tagged(prepared, k + 1), \
                    self._template.render(prepared, k, True)
            except Exception as exc:  # as in _plan
                layouts.append(f"chat template failed: {type(exc).__name__}")
                continue
            gen = len(prompt)
            if not text.startswith(prompt):
                layouts.append("unstable prefix even per turn: the generation prompt is re-rendered")
                continue
            found = self._locate(text, window, 0, gen)
            if isinstance(found, str):
                layouts.append(found)
                continue
            if tags is not None and len(tags) != n_turns:
                layouts.append(_TAGS_DISAGREE)
                continue
            action = _action(gen, len(text.rstrip()), len(text), tags[-1] if tags else None,
                             found[-1][1] if found else 0)
            if action is None:
                layouts.append(_TAGS_DISAGREE)
                continue
            history = [(0, found[0][0] if found else min(gen, action[0]), PROMPT)] if n_turns > 1 else []
            layouts.append(_Layout(k, text, tuple(history + found + [action]), (gen,)))
        return layouts

    def _locate(self, text: str, messages: Sequence[dict], lo: int, hi: int) -> list | str:
        """Spans of the contents of ``messages`` (no assistant among them) within ``text[lo:hi]``,
        searched from the end; a reason when a tool result cannot be found."""
        spans = []
        for message in reversed(messages):
            content = message.get("content") or ""
            if not content:
                continue
            source = OBSERVATION if message["role"] == "tool" else PROMPT
            pos = self._rfind(text, content, lo, hi)
            if pos < 0 and content.strip() and content.strip() != content:
                content = content.strip()  # templates often strip contents
                pos = self._rfind(text, content, lo, hi)
            if pos < 0:
                if source == OBSERVATION:
                    return "tool result not found in the rendering"
                continue
            spans.append((pos, pos + len(content), source))
            hi = pos
        spans.reverse()
        return spans

    def _rfind(self, text: str, needle: str, lo: int, hi: int) -> int:
        """Last occurrence of ``needle`` in ``text[lo:hi]`` that overlaps no special token's text."""
        while True:
            pos = text.rfind(needle, lo, hi)
            if pos < 0 or not self._overlaps_special(text, pos, pos + len(needle)):
                return pos
            hi = pos + len(needle) - 1

    def _overlaps_special(self, text: str, start: int, end: int) -> bool:
        if self._special_re is None:
            return False
        window = max(0, start - self._special_len + 1)
        return any(m.end() > start for m in self._special_re.finditer(text, window, end + self._special_len - 1)
                   if m.start() < end)

    # -- tokenization ----------------------------------------------------------------------------

    def _encode(self, layouts: list[_Layout | str]) -> list:
        texts = [layout.text for layout in layouts if isinstance(layout, _Layout)]
        return self._backend.encode_batch(texts, add_special_tokens=False) if texts else []

    def _weigh_all(self, layouts: list[_Layout | str], encodings) -> list[TokenizedExample | str]:
        if not isinstance(encodings, list):
            encodings = encodings.result()
        encodings = iter(encodings)
        return [self._weigh(layout, next(encodings)) if isinstance(layout, _Layout) else layout
                for layout in layouts]

    def _weigh(self, layout: _Layout, encoding) -> TokenizedExample | str:
        ids = encoding.ids
        tokens = _TokenIndex(encoding, len(layout.text))
        for boundary in layout.boundaries:
            reason = self._splits_exactly(layout.text, ids, tokens, boundary)
            if reason:
                return reason
        source = np.zeros(len(ids), dtype=np.uint8)
        for start, end, code in layout.spans:
            if end > start:
                source[tokens.first_ending_after(start):tokens.first_starting_at(end)] = code
        return TokenizedExample(layout.turn, ids, self._weights[source], source)

    def _splits_exactly(self, text: str, ids: list[int], tokens: _TokenIndex, boundary: int) -> str | None:
        """None when the tokens of ``text[:boundary]`` are exactly the first tokens of ``text``."""
        if 0 < boundary and tokens.first_ending_after(boundary - 1) == tokens.first_ending_after(boundary):
            return "unstable prefix: a token spans the end of a prefix rendering"
        i = tokens.first_starting_at(boundary)
        if i == len(ids) or ids[i] in self._special_ids or (i > 0 and ids[i - 1] in self._special_ids):
            return None
        j = i - 1
        while j >= 0 and ids[j] not in self._special_ids:
            j -= 1
        # From that special token on: a segment that follows one is not the start of the input (for
        # tokenizers that prepend a space marker to the first word of the input only).
        start = tokens.start(j) if j >= 0 else 0
        alone = self._backend.encode(text[start:boundary], add_special_tokens=False).ids
        if alone != ids[max(j, 0):i]:
            return "unstable prefix: a prefix rendering tokenizes differently alone"
        return None


_TAGS_DISAGREE = "generation tags do not match the assistant turns"


def _action(gen: int, end: int, end_with_space: int, tag: tuple[int, int] | None, after: int) -> tuple | None:
    """The action span of a turn rendered from ``gen`` (its generation prompt's end) to ``end``
    (``end_with_space`` with trailing whitespace). A template's {% generation %} block decides it
    (TRL's mask) when there is one; it must lie after the turn's observations (``after``) and
    within the turn, or None."""
    if tag is None:
        return (gen, max(gen, end), ACTION)
    start, stop = tag
    if start < after or stop > end_with_space or (stop > start and (stop <= gen or start >= max(gen, end))):
        return None
    return (start, stop, ACTION)


class _TokenIndex:
    """Character offset → token index for one encoding (TRL's rule: a token belongs to a character
    span when it overlaps it). Uses the encoding's own char_to_token when tokens tile the text, else
    the full offsets (tokenizers that trim whitespace out of offsets)."""

    def __init__(self, encoding, n_chars: int):
        self.encoding, self.n_tokens, self.n_chars = encoding, len(encoding.ids), n_chars
        self._starts = self._ends = None

    def _offsets(self) -> None:
        if self._starts is None:
            offsets = np.asarray(self.encoding.offsets, dtype=np.int64).reshape(-1, 2)
            self._starts, self._ends = offsets[:, 0], offsets[:, 1]

    def first_ending_after(self, char: int) -> int:
        """Index of the first token whose span ends after ``char``."""
        if char < 0:
            return 0
        if char >= self.n_chars:
            return self.n_tokens
        if self._starts is None:
            token = self.encoding.char_to_token(char)
            if token is not None:
                return token
            self._offsets()
        return int(np.searchsorted(self._ends, char, side="right"))

    def first_starting_at(self, char: int) -> int:
        """Index of the first token starting at or after ``char``."""
        if char >= self.n_chars:
            return self.n_tokens
        if self._starts is None:
            token = self.encoding.char_to_token(char)
            if token is not None:  # the token holding char: it starts there, or the next one is first
                return token if self.encoding.token_to_chars(token)[0] == char else token + 1
            self._offsets()
        return int(np.searchsorted(self._starts, char, side="left"))

    def start(self, token: int) -> int:
        return self.encoding.token_to_chars(token)[0] if self._starts is None else int(self._starts[token])


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A conversation ready for its renderings."""

    messages: list
    tools: list | None
    plain: object | None  # compiled template without generation tags (prefixes), None: apply_chat_template
    tagged: object | None  # compiled template with its generation tags, None when it has none


class _ChatTemplate:
    """Renders prefixes of a conversation exactly as ``tokenizer.apply_chat_template(messages[:k],
    tools=tools, tokenize=False, add_generation_prompt=...)`` does, but prepares the conversation once
    for all its prefixes (transformers' own helpers: None-valued keys dropped, plain data, reasoning
    aliases) and leaves ``{% generation %}`` bookkeeping out of prefix renderings (it never changes
    the text). The full rendering of a template with generation tags also returns their character
    spans, as ``return_assistant_tokens_mask`` computes them. Falls back to ``apply_chat_template``
    (and no tag spans) when those helpers are not available."""

    _TAG = re.compile(r"(\{%[-+]?\s*)(end)?generation(\s*[-+]?%\})")

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        try:
            from transformers.utils import chat_template_utils as ctu

            self._helpers = (ctu._compile_jinja_template, ctu._normalize_chat_messages, ctu._plain_template_data,
                             ctu._alias_reasoning_fields, ctu._render_with_assistant_indices)
            self._kwargs = ctu._plain_template_data(dict(tokenizer.special_tokens_map))
        except (ImportError, AttributeError):
            self._helpers = None
        self._compiled: dict[str, tuple] = {}

    def prepare(self, messages: Sequence[dict], tools: Sequence[dict], objects: bool = False) -> _Prepared:
        """``objects``: give the template tool-call arguments as objects instead of JSON strings."""
        messages = [_with_object_arguments(m) for m in messages] if objects else list(messages)
        tools = list(tools) or None
        if self._helpers is None:
            return _Prepared(messages, tools, None, None)
        compile_template, normalize, plain, alias, _ = self._helpers
        source = self.tokenizer.get_chat_template(None, tools)
        if source not in self._compiled:
            stripped = self._TAG.sub(lambda m: f"{m.group(1)}{'endif' if m.group(2) else 'if true'}{m.group(3)}",
                                     source)
            self._compiled[source] = (compile_template(stripped),
                                      compile_template(source) if stripped != source else None)
        return _Prepared(alias(plain(normalize(messages))), plain(tools), *self._compiled[source])

    def render(self, prepared: _Prepared, n: int, generation: bool) -> str:
        """The rendering of the first ``n`` messages."""
        if prepared.plain is None:
            return self.tokenizer.apply_chat_template(prepared.messages[:n], tools=prepared.tools, tokenize=False,
                                                      add_generation_prompt=generation)
        return prepared.plain.render(messages=prepared.messages[:n], tools=prepared.tools, documents=None,
                                     add_generation_prompt=generation, **self._kwargs)

    def render_tagged(self, prepared: _Prepared, n: int) -> tuple[str, list[tuple[int, int]] | None]:
        """The rendering of the first ``n`` messages and its generation-tag spans (None: no tags)."""
        if prepared.tagged is None:
            return self.render(prepared, n, False), None
        text, spans = self._helpers[-1](prepared.tagged, prepared.messages[:n], prepared.tools, None, False,
                                        **self._kwargs)
        return text, spans


def _with_object_arguments(message: dict) -> dict:
    calls = message.get("tool_calls")
    if not calls:
        return message
    parsed = []
    for call in calls:
        arguments = call["function"]["arguments"]
        try:
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            pass
        parsed.append({**call, "function": {**call["function"], "arguments": arguments}})
    return {**message, "tool_calls": parsed}
