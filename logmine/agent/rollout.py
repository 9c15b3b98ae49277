"""Multi-turn rollouts of a ``bash`` agent in sandboxes, token-in/token-out.

    fmt = ChatFormat.from_tokenizer(tokenizer)
    rollouts = run_rollouts(tasks_with_samples, engine, fmt, RolloutConfig(), env_config)

Each rollout: the row's [system, user] messages rendered by the chat template with the ``bash``
tool (``add_generation_prompt``) → the engine samples one assistant turn → the tool call is parsed
(:mod:`logmine.agent.tools`) and executed in the task's sandbox (:mod:`logmine.agent.env`) → the
observation is appended *as token ids*, exactly as the chat template renders a tool message after
that assistant turn (:meth:`ChatFormat.observation_ids`) → the next turn is sampled from the
sequence so far. The sampled ids are never decoded and re-encoded: the training sequence is the
sampled one.

A rollout ends on submission (graded: reward 0..1), on a turn without a valid tool call (reward 0,
or format feedback when ``format_feedback``), after ``max_turns``, or when the response budget
(``max_response_tokens``: sampled *and* observation tokens, as TMax counts) or the context is spent
(reward 0: it never submitted). A rollout whose sandbox failed is **unscored** (``reward`` None,
``unscored`` says why): excluded from its group's baseline and from the loss, counted in metrics.

The batch is stepped turn by turn: every live rollout's next turn is generated in one engine call,
then their tool calls run in parallel sandboxes (``workers`` threads). A rollout's sandbox starts
with its first tool call and is closed as soon as the rollout ends.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from logmine.agent.engines import RolloutEngine, Sampling
from logmine.agent.env import EnvConfig, Step, TaskEnv
from logmine.agent.tasks import RlTask
from logmine.agent.tools import PARSERS, ToolCallError
from logmine.protocol import APPLY_PATCH_TOOL, BASH_TOOL
from logmine.sandbox import SandboxError

_SENTINEL = "\x00LOGMINE_OBSERVATION\x00"
MAX_TURNS = 64  # tool calls per rollout: TMax's limit, the one default of RolloutConfig and RolloutSettings
FORMAT_FEEDBACK = ("Your response must contain exactly one tool call to `bash`, e.g. <tool_call> with the "
                   "command. Try again.")


@dataclass(frozen=True, slots=True)
class RolloutConfig:
    max_turns: int = MAX_TURNS  # tool calls per rollout (TMax: 64)
    max_turn_tokens: int = 16384  # sampled tokens per assistant turn
    max_response_tokens: int = 65536  # sampled + observation tokens per rollout
    max_context: int = 0  # prompt + response; 0: the model's max_position_embeddings
    temperature: float = 1.0
    top_p: float = 1.0
    parser: str = "auto"  # auto | hermes | qwen3_xml
    format_feedback: bool = False  # False: a turn without a valid tool call ends the rollout (TMax)
    workers: int = 4  # sandboxes stepped in parallel
    system_prompt: str | None = None  # replaces the row's system message (TMax's system_prompt_override)


@dataclass
class Rollout:
    task_id: str
    sample: int  # index within its group
    prompt_ids: list[int]
    response_ids: list[int] = field(default_factory=list)  # sampled and observation tokens, in order
    sampled: list[bool] = field(default_factory=list)  # per response id: True for a token the policy sampled
    logprobs: list[float] = field(default_factory=list)  # per response id: sampler log-prob (0.0: observation)
    reward: float | None = None
    unscored: str | None = None
    end: str = ""  # submitted | no_tool_call | max_turns | turn_budget | budget | unscored
    turns: int = 0
    commands: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)  # the text of every observation appended, in order
    seconds: float = 0.0

    @property
    def scored(self) -> bool:
        return self.unscored is None

    @property
    def solved(self) -> bool:
        return self.reward is not None and self.reward >= 1.0

    @property
    def sampled_tokens(self) -> int:
        return sum(self.sampled)


@dataclass(frozen=True, slots=True)
class ChatFormat:
    """How one tokenizer's chat template renders the prompt and each tool result (token ids)."""

    tokenizer: object
    tools: tuple[dict, ...]
    stop_ids: tuple[int, ...]
    before: str  # template text between the end of an assistant turn and a tool result's content
    after: str  # ... and between that content and the next assistant turn's first sampled token

    @classmethod
    def from_tokenizer(cls, tokenizer, apply_patch: bool = False) -> ChatFormat:
        """Derive the tool-result wrapper by rendering a conversation with and without one tool result.
        Raises ValueError when the template re-renders earlier turns (not prefix-stable)."""
        tools = (BASH_TOOL, APPLY_PATCH_TOOL) if apply_patch else (BASH_TOOL,)
        eos = tokenizer.eos_token
        if eos is None:
            raise ValueError("the tokenizer has no eos_token: cannot tell where an assistant turn ends")
        head = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": "a"}]
        base = tokenizer.apply_chat_template(head, tools=list(tools), tokenize=False)
        full = tokenizer.apply_chat_template(head + [{"role": "tool", "content": _SENTINEL}], tools=list(tools),
                                             tokenize=False, add_generation_prompt=True)
        cut = base.rfind(eos) + len(eos)
        if cut < len(eos) or full[:cut] != base[:cut] or _SENTINEL not in full[cut:]:
            raise ValueError("the chat template is not prefix-stable around tool results; it cannot be used for "
                             "token-in/token-out rollouts")
        before, after = full[cut:].split(_SENTINEL)
        stops = {tokenizer.eos_token_id} | {tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")
                                            if t in tokenizer.get_vocab()}
        return cls(tokenizer, tools, tuple(sorted(stops)), before, after)

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        ids = self.tokenizer.apply_chat_template(messages, tools=list(self.tools), add_generation_prompt=True,
                                                 tokenize=True, return_dict=False)
        return list(ids["input_ids"] if isinstance(ids, dict) else ids)

    def observation_ids(self, observation: str) -> list[int]:
        return self.tokenizer.encode(self.before + observation + self.after, add_special_tokens=False)

    def text(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)


@dataclass
class _Live:
    rollout: Rollout
    task: RlTask
    env: TaskEnv | None = None
    done: bool = False
    started: float = field(default_factory=time.monotonic)


def run_rollouts(jobs: list[tuple[RlTask, int]], engine: RolloutEngine, fmt: ChatFormat, config: RolloutConfig,
                 env_config: EnvConfig, max_context: int, timings: dict | None = None) -> list[Rollout]:
    """Roll out every (task, sample index) job; returns the rollouts in job order. ``timings`` (when
    given) accumulates ``generate_s`` (engine) and ``sandbox_s`` (starting, stepping, grading, closing)."""
    timings = timings if timings is not None else {}
    lives = [_Live(Rollout(task.task_id, sample, fmt.prompt_ids(_messages(task, config))), task)
             for task, sample in jobs]
    sampling = Sampling(config.temperature, config.top_p, fmt.stop_ids)
    limit = min(max_context, config.max_context or max_context)
    with ThreadPoolExecutor(max(1, config.workers)) as pool:
        try:
            for _ in range(config.max_turns):
                live = [x for x in lives if not x.done]
                if not live:
                    break
                budgets = [min(config.max_turn_tokens, config.max_response_tokens - len(x.rollout.response_ids),
                               limit - len(x.rollout.prompt_ids) - len(x.rollout.response_ids)) for x in live]
                for x, budget in zip(live, budgets):
                    if budget < 1 and not x.rollout.response_ids:  # not the policy's doing
                        _finish(x, "unscored", unscored=f"the prompt ({len(x.rollout.prompt_ids)} tokens) leaves "
                                                        "no room in the context")
                    elif budget < 1:
                        _finish(x, "budget", reward=0.0)
                live = [(x, b) for x, b in zip(live, budgets) if b >= 1]
                if not live:
                    break
                clock = time.monotonic()
                gens = engine.generate([x.rollout.prompt_ids + x.rollout.response_ids for x, _ in live],
                                       [b for _, b in live], sampling)
                _tick(timings, "generate_s", clock)
                calls = []
                for (x, budget), gen in zip(live, gens):
                    r = x.rollout
                    r.response_ids += gen.token_ids
                    r.sampled += [True] * len(gen.token_ids)
                    r.logprobs += gen.logprobs
                    r.turns += 1
                    call = _parse(fmt, gen.token_ids, config.parser) if gen.stopped else None
                    if isinstance(call, str) and config.format_feedback:
                        _observe(fmt, x, FORMAT_FEEDBACK, config, limit)
                    elif call is None:  # cut by the token budget: of the turn, or of the whole rollout
                        _finish(x, "turn_budget" if budget == config.max_turn_tokens else "budget", reward=0.0)
                    elif isinstance(call, str):
                        _finish(x, "no_tool_call", reward=0.0)
                    else:
                        calls.append((x, call))
                clock = time.monotonic()
                # a sandbox starts with the rollout's first tool call (a rollout that never makes one needs none)
                list(pool.map(lambda pair: _open(pair[0], env_config), [c for c in calls if c[0].env is None]))
                calls = [(x, call) for x, call in calls if not x.done]
                steps = list(pool.map(lambda pair: pair[0].env.execute(pair[1]), calls))
                for (x, call), step in zip(calls, steps):
                    x.rollout.commands.append(call.arguments.get("command") or call.name)
                    _apply(fmt, x, step, config, limit)
                list(pool.map(_close, [x for x in lives if x.done and x.env is not None]))
                _tick(timings, "sandbox_s", clock)
            for x in lives:
                if not x.done:
                    _finish(x, "max_turns", reward=0.0)
        finally:
            clock = time.monotonic()
            list(pool.map(_close, lives))
            _tick(timings, "sandbox_s", clock)
    return [x.rollout for x in lives]


def _tick(timings: dict, key: str, since: float) -> None:
    timings[key] = timings.get(key, 0.0) + time.monotonic() - since


def _messages(task: RlTask, config: RolloutConfig) -> list[dict]:
    messages = [dict(m) for m in task.messages]
    if config.system_prompt is not None:
        if messages and messages[0]["role"] == "system":
            messages[0]["content"] = config.system_prompt
        else:
            messages.insert(0, {"role": "system", "content": config.system_prompt})
    return messages


def _open(live: _Live, env_config: EnvConfig) -> None:
    try:
        live.env = TaskEnv.open(live.task.bundle, env_config)
    except SandboxError as exc:
        _finish(live, "unscored", unscored=f"sandbox did not start: {exc}")


def _close(live: _Live) -> None:
    if live.env is not None:
        live.env.close()
        live.env = None


def _parse(fmt: ChatFormat, ids: list[int], parser: str):
    """The first tool call of the turn; a str (the reason) for a malformed one; None for no call at all."""
    try:
        calls = PARSERS[parser](fmt.text(ids))
    except ToolCallError as exc:
        return str(exc)
    return calls[0] if calls else "no tool call"


def _apply(fmt: ChatFormat, live: _Live, step: Step, config: RolloutConfig, limit: int) -> None:
    if step.unscored:
        _finish(live, "unscored", unscored=step.unscored)
    elif step.done:
        _finish(live, "submitted", reward=step.reward)
    else:
        _observe(fmt, live, step.observation, config, limit)


def _observe(fmt: ChatFormat, live: _Live, text: str, config: RolloutConfig, limit: int) -> None:
    """Append an observation, or end the rollout (budget) when it would not leave room for a next turn:
    a sequence never grows past the response budget or the context."""
    r = live.rollout
    ids = fmt.observation_ids(text)
    if (len(r.response_ids) + len(ids) >= config.max_response_tokens
            or len(r.prompt_ids) + len(r.response_ids) + len(ids) >= limit):
        _finish(live, "budget", reward=0.0)
        return
    r.observations.append(text)
    r.response_ids += ids
    r.sampled += [False] * len(ids)
    r.logprobs += [0.0] * len(ids)


def _finish(live: _Live, end: str, reward: float | None = None, unscored: str | None = None) -> None:
    r = live.rollout
    r.end, r.reward, r.unscored = end, (None if unscored else reward), unscored
    r.seconds = time.monotonic() - live.started
    live.done = True  # its sandbox is closed with the others after the turn (in parallel)
