"""How rollouts are made, as a run's config declares it: the fields ``train grpo``, ``filter`` and
``eval`` share (:class:`RolloutSettings`, a base of ``GrpoTrainConfig`` and ``SampleConfig``; their
YAML keys are flat), their checks, and their translation into the rollout loop's
:class:`~logmine.agent.rollout.RolloutConfig` and the sandbox's :class:`~logmine.agent.env.EnvConfig`.

Defaults that the rollout loop also has are taken from it (``max_turns``: :data:`MAX_TURNS`, TMax's
64 tool calls); a recipe for a tiny model sets smaller values explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

from logmine.agent.env import EnvConfig
from logmine.agent.rollout import MAX_TURNS, RolloutConfig
from logmine.agent.tools import PARSERS
from logmine.config import ConfigError, check_choice, check_positive_ints

ENGINES = ("hf", "vllm")


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutSettings:
    """How rollouts are made: the fields ``train grpo``, ``filter`` and ``eval`` share (one
    declaration; :func:`rollout_config` and :func:`env_config` read them)."""

    engine: str = "hf"  # hf (transformers generate, CPU or GPU) | vllm (GPU, the vllm extra)
    rollout_workers: int = 4  # sandboxes stepped in parallel
    max_turns: int = MAX_TURNS  # tool calls per rollout (TMax: 64; docs/train-grpo.md says why)
    max_turn_tokens: int = 512
    max_response_tokens: int = 4096
    temperature: float = 1.0
    top_p: float = 1.0
    parser: str = "auto"
    format_feedback: bool = False
    system_prompt: str | None = None
    apply_patch: bool = False
    backend: str = "bwrap"
    image: str | None = None
    command_timeout_s: float = 120.0
    test_timeout_s: float = 120.0
    test_timeout_reward: float | None = 0.0  # a grader past its timeout: this reward (None: unscored)


def check_rollout_settings(c: RolloutSettings) -> None:
    """Raises ConfigError for a rollout setting no run can use."""
    check_choice(c.engine, "engine", ENGINES)
    check_choice(c.parser, "parser", tuple(PARSERS))
    check_positive_ints(c, ("rollout_workers", "max_turns", "max_turn_tokens", "max_response_tokens"))
    for name in ("temperature", "command_timeout_s", "test_timeout_s"):
        if not getattr(c, name) > 0:
            raise ConfigError(f"{name} must be positive, got {getattr(c, name)!r}")
    if not 0 < c.top_p <= 1:
        raise ConfigError(f"top_p must be in (0, 1], got {c.top_p}")


def rollout_config(c: RolloutSettings) -> RolloutConfig:
    """The rollout loop's settings of a GRPO, filter or eval config."""
    return RolloutConfig(max_turns=c.max_turns, max_turn_tokens=c.max_turn_tokens,
                         max_response_tokens=c.max_response_tokens, temperature=c.temperature, top_p=c.top_p,
                         parser=c.parser, format_feedback=c.format_feedback, workers=c.rollout_workers,
                         system_prompt=c.system_prompt)


def env_config(c: RolloutSettings) -> EnvConfig:
    """The sandbox settings of a GRPO, filter or eval config."""
    return EnvConfig(backend=c.backend, image=c.image, command_timeout_s=c.command_timeout_s,
                     test_timeout_s=c.test_timeout_s, test_timeout_reward=c.test_timeout_reward,
                     apply_patch=c.apply_patch)
