"""The dataset card (``README.md``) of ``logmine export sft``: counts, settings, schema, loss, sources,
redaction and how to train on it."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import orjson

from logmine.export.outdir import markdown_table
from logmine.export.render import SOURCES

if TYPE_CHECKING:
    from logmine.export.render import Renderer
    from logmine.export.sft import SftExportConfig, SftExportSummary


def card(config: SftExportConfig, summary: SftExportSummary, renderer: Renderer | None) -> str:
    """The dataset card (README.md): configs, counts, settings, schema, loss, sources, redaction."""
    yaml = ["---", "configs:", "- config_name: default", "  data_files:", "  - split: train",
            "    path: data/train-*.parquet"]
    if renderer:
        yaml += ["- config_name: tokens", "  data_files:", "  - split: train", "    path: tokens/tokens-*.parquet"]
    yaml += ["tags:", "- logmine", "- sft", "- agent-trajectories", "- tool-use", "---", ""]
    counts = [("tasks in the store", summary.tasks), ("examples (`data/`)", summary.examples),
              ("token examples (`tokens/`)", summary.token_examples if renderer else "not written"),
              ("duplicates exported once", summary.duplicates), ("sessions", summary.sessions)]
    settings: list[tuple[str, object]] = [("min verifier", config.min_verifier), ("tools", config.tools), ("reasoning", config.reasoning),
                ("max characters", config.max_chars), ("max tokens", config.max_tokens),
                ("deduplicated", config.dedupe)]
    if renderer:
        template = renderer.tokenizer.chat_template
        digest = hashlib.sha256(orjson.dumps(template, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
        settings += [("λ (observation weight)", config.lam), ("tokenizer", f"`{config.tokenizer}`"),
                     ("tokenizer name", getattr(renderer.tokenizer, "name_or_path", "")),
                     ("chat template sha256", digest), ("not prefix-stable", config.on_unstable)]
    parts = ["\n".join(yaml),
             "# logmine SFT export\n\nCoding-agent sessions (OpenAI Codex CLI) exported by `logmine export sft`: one "
             "example per task (a user request and the work it caused) as an OpenAI-style chat with tool calls.\n",
             "## Counts\n\n" + markdown_table("| | |", counts),
             "### Tasks not exported\n\n" + markdown_table("| reason | tasks |", summary.dropped.most_common()),
             "### Left out of exported conversations\n\n" + markdown_table("| what | count |", summary.left_out.most_common()),
             "## Settings\n\n" + markdown_table("| | |", settings) + f"\nSystem prompt: {config.system_prompt!r}\n"]
    if renderer:
        parts.append("### Token-level form\n\n" + markdown_table("| source | tokens |", [(s, summary.tokens[s]) for s in SOURCES])
                     + "\n" + markdown_table("| not prefix-stable (conversations) | count |", summary.unstable.most_common())
                     + "\n" + markdown_table("| split turns left out | count |", summary.turns_dropped.most_common()))
    parts += [_SCHEMA_DOC, _LOSS_DOC if renderer else "",
              "## Sources\n\n" + markdown_table("| format | Codex CLI | model | sessions |", summary.sources),
              _REDACTION_DOC, _usage(summary, renderer)]
    return "\n".join(p for p in parts if p)


_SCHEMA_DOC = """## Schema

`data/` (config `default`), one row per task (JSON Schema: logmine `schemas/sft_example.schema.json`):

| column | type | what |
|---|---|---|
| `task_id`, `session_id` | string | the task and session in the logmine store |
| `messages` | list of messages | `system`, `user` (the request), `assistant` turns (`content`, optional `reasoning_content`, `tool_calls` with `function.arguments` as a JSON string), `tool` results (`tool_call_id`, `name`, `content`); fields a message does not have are null |
| `tools` | string | JSON list of the tool schemas (`{"type": "function", "function": {...}}`) |
| `verifier` | string | `validated` (a verifier failed before and passed after a sandboxed replay), `open` (not verified yet or unscored), `refuted`, `none` |
| `model` | string | the model that wrote the session |
| `n_turns`, `n_tool_calls` | int | assistant turns, tool calls |

Tool results are the command's output, then `[exit code: N]` on a line of its own when the exit code is known.
"""

_LOSS_DOC = """`tokens/` (config `tokens`), one row per training sequence (`example_id` = task id, or `task_id/turn`
for a conversation re-rendered per turn): `input_ids`, `loss_weights` (float), `source` per token (`prompt`,
`action`, `observation`, `scaffold`), `assistant_masks` (1 on action tokens: TRL's pre-tokenized path trains on
exactly these), counts.

## Loss

Action tokens (what the agent wrote, through its end-of-turn token) weigh 1, observation tokens (tool
results) weigh λ, prompt and template scaffolding 0. The loss is the weighted mean

    L = -(Σ_A log p + λ Σ_O log p) / (|A| + λ |O|) = -Σ w·log p / Σ w

(ActObs; λ = 0 is action-only SFT). Spans come from incremental rendering of the chat template, checked for
prefix stability (see logmine `docs/export-sft.md`).
"""

_REDACTION_DOC = """## Redaction

Secrets were redacted when the sessions were ingested, before anything was stored: gitleaks' rules, structured
keys (`"api_key": ...`), Authorization headers, passwords in URLs and `.env`-style assignments. Each is replaced
by a pseudonym of the same shape (length, character classes, well-known prefix such as `ghp_`), the same one
wherever the secret occurred, derived with a key that stays with the store and never leaves it; or, in a store
ingested with `--redact-style placeholder`, by a typed placeholder such as `[REDACTED:github_token]`. A value that
looks like a secret in this data is such a pseudonym, not a secret. Not redacted: names, e-mail addresses, home directory
paths, and the source code the agent read or wrote. Review the data before publishing it.
"""

def _usage(summary: SftExportSummary, renderer: Renderer | None) -> str:
    """How to train on the export with TRL's ``SFTTrainer``; the ``tokens`` config only when written."""
    lines = ["## Usage", "", "```python", "from datasets import load_dataset", "from trl import SFTConfig, SFTTrainer", "",
             'data = load_dataset("parquet", data_files="OUT/data/*.parquet", split="train")',
             "trainer = SFTTrainer(model=model, train_dataset=data,",
             "                     args=SFTConfig(assistant_only_loss=True, max_length=None))"]
    if renderer:
        lines += ["", "# the ActObs form: TRL folds `assistant_masks` into its labels (action tokens only);",
                  "# assistant_only_loss must stay False here, TRL raises on a dataset that is not conversational",
                  'tokens = load_dataset("parquet", data_files="OUT/tokens/*.parquet", split="train")',
                  "trainer = SFTTrainer(model=model, train_dataset=tokens, args=SFTConfig(max_length=None))"]
    lines += ["```", "", "TRL cuts every example to `SFTConfig.max_length` tokens (default 1024) without a warning: "
              "agent conversations are longer, so set `max_length=None` or at least the longest example"
              + (f" ({summary.longest_tokens} tokens with the tokenizer of `tokens/`)." if renderer else ".")]
    if renderer:
        lines += ["The ActObs loss itself (observation tokens weighted λ, `loss_weights`) needs a trainer that reads "
                  "`loss_weights` (`logmine train sft` does); TRL's labels are binary."]
    return "\n".join(lines) + "\n"
