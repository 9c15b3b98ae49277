"""The policy a rollout samples from: a causal LM, its tokenizer and chat format, loaded from a local
``save_pretrained`` directory (nothing is downloaded), and the engine that samples from it.

    policy = load_policy(Path("sft-run/final"))
    engine = make_engine("hf", policy, Path("sft-run/final"), seed=0)

Used by ``train grpo`` (which trains ``policy.model``) and by ``filter``/``eval`` (which only sample).
Every failure to load is a :class:`PolicyError`; each caller re-raises it as its own run error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from logmine.agent.engines import HfEngine, VllmEngine
from logmine.agent.rollout import ChatFormat
from logmine.errors import LogmineError


class PolicyError(LogmineError, RuntimeError):
    """No model or tokenizer in the directory, a chat template that cannot do token-in/token-out, or an
    engine that cannot start."""


@dataclass
class Policy:
    """A causal LM, its tokenizer and chat format, loaded from a local directory."""

    model: torch.nn.Module
    tokenizer: object
    fmt: ChatFormat
    max_context: int


def require_model_dir(path: Path) -> None:
    """Raises PolicyError unless ``path`` holds a ``save_pretrained`` model (nothing is downloaded)."""
    if not (Path(path) / "config.json").exists():
        raise PolicyError(f"no model at {path} (a local save_pretrained directory; "
                          "`logmine train init-model` makes a tiny one)")


def load_policy(path: Path, apply_patch: bool = False) -> Policy:
    """Raises PolicyError when the directory holds no model or tokenizer, or the template cannot do TITO."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    require_model_dir(path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise PolicyError(f"no tokenizer in {path}: {str(exc).splitlines()[0]}") from exc
    if not tokenizer.chat_template:
        raise PolicyError(f"the tokenizer in {path} has no chat template")
    try:
        fmt = ChatFormat.from_tokenizer(tokenizer, apply_patch)
    except ValueError as exc:
        raise PolicyError(str(exc)) from exc
    model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return Policy(model, tokenizer, fmt, int(getattr(model.config, "max_position_embeddings", 0) or 1 << 20))


def make_engine(name: str, policy: Policy, model_path: Path, seed: int):
    """The rollout engine ``name`` (``hf`` samples from ``policy.model`` itself; ``vllm`` loads
    ``model_path`` on the GPU). Raises PolicyError when vLLM cannot start."""
    if name == "vllm":
        try:
            return VllmEngine(str(model_path), seed=seed)
        except RuntimeError as exc:
            raise PolicyError(str(exc)) from exc
    return HfEngine(policy.model, policy.tokenizer.pad_token_id)
