"""Token-in/token-out rollouts: the training sequence is exactly what the engine sampled, with
observation tokens as the chat template renders tool results, and the sampler's log-probs agree
with a fresh forward pass of the same weights."""

from __future__ import annotations

import shutil

import pytest
import torch
from rl_support import tiny_policy

from logmine.agent import synthetic
from logmine.agent.engines import HfEngine
from logmine.agent.env import EnvConfig
from logmine.agent.policy import load_policy
from logmine.agent.rollout import RolloutConfig, run_rollouts
from logmine.agent.tasks import load_tasks

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")


class Recording:
    """Wraps a real engine and keeps what it returned, to compare with the rollouts."""

    def __init__(self, engine):
        self.engine, self.calls = engine, []

    def generate(self, prompts, budgets, sampling):
        out = self.engine.generate(prompts, budgets, sampling)
        self.calls.append((prompts, out))
        return out

    def sync(self, model):
        self.engine.sync(model)


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    return load_policy(tiny_policy(tmp_path_factory.mktemp("policy") / "tiny"))


@pytest.fixture(scope="module")
def trained(shell_family):
    return load_policy(shell_family["sft"])


def test_observation_wrapper_is_what_the_template_renders(policy):
    fmt = policy.fmt
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    call = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    turn = messages + [{"role": "assistant", "content": "", "tool_calls": [call]}]
    rendered_turn = policy.tokenizer.apply_chat_template(turn, tools=list(fmt.tools), tokenize=False)
    full = policy.tokenizer.apply_chat_template(turn + [{"role": "tool", "content": "a\n[exit code: 0]"}],
                                                tools=list(fmt.tools), tokenize=False, add_generation_prompt=True)
    end = rendered_turn.rfind("<|im_end|>") + len("<|im_end|>")
    assert full[end:] == fmt.before + "a\n[exit code: 0]" + fmt.after
    assert fmt.text(fmt.observation_ids("a\n[exit code: 0]")) == full[end:]


def test_training_sequence_equals_the_sampled_one(trained, shell_family):
    policy = trained
    tasks = load_tasks(shell_family["held"])[:6]
    engine = Recording(HfEngine(policy.model, policy.tokenizer.pad_token_id))
    config = RolloutConfig(max_turns=4, max_turn_tokens=96, format_feedback=True, workers=2)
    torch.manual_seed(0)
    rollouts = run_rollouts([(t, g) for t in tasks for g in range(4)], engine, policy.fmt, config, EnvConfig(),
                            policy.max_context)
    observed = 0
    for i, r in enumerate(rollouts):
        assert r.prompt_ids == policy.fmt.prompt_ids(list(tasks[i // 4].messages))
        # rebuild the response from the engine's outputs and the observations, turn by turn
        expected, sampled, logprobs = [], [], []
        observations = iter(r.observations)
        for prompts, gens in engine.calls:
            # the row that was this rollout: same prefix, and its output is what the rollout holds next
            done = len(expected)
            row = next((k for k, (p, g) in enumerate(zip(prompts, gens)) if p == r.prompt_ids + expected
                        and g.token_ids == r.response_ids[done:done + len(g.token_ids)]), None)
            if row is None:
                continue
            expected += gens[row].token_ids
            sampled += [True] * len(gens[row].token_ids)
            logprobs += gens[row].logprobs
            if len(expected) < len(r.response_ids):  # an observation follows: a bash result or format feedback
                text = next(observations)
                assert text  # a bash result, format feedback, or an unknown-tool message
                observation = policy.fmt.observation_ids(text)
                observed += 1
                expected += observation
                sampled += [False] * len(observation)
                logprobs += [0.0] * len(observation)
        assert r.response_ids == expected and r.sampled == sampled
        # identical prefixes in one batch may sit at different padding widths: equal up to float noise
        assert torch.allclose(torch.tensor(r.logprobs), torch.tensor(logprobs), atol=1e-4)
        # the sampler's log-probs (batched, left-padded) are the trainer's on the unpadded sequence
        ids = torch.tensor([r.prompt_ids + r.response_ids])
        with torch.no_grad():
            lp = torch.log_softmax(policy.model(ids).logits[0, :-1].float(), -1).gather(-1, ids[0, 1:, None])[:, 0]
        mine = lp[len(r.prompt_ids) - 1:][torch.tensor(r.sampled)]
        assert torch.allclose(mine, torch.tensor(r.logprobs)[torch.tensor(r.sampled)], atol=1e-4)
    assert observed >= 6 and {r.end for r in rollouts} & {"submitted"}  # multi-turn, some graded


def test_a_turn_without_a_tool_call_ends_the_rollout_with_reward_zero(policy, tmp_path):
    tasks = load_tasks(synthetic.write_tmax(synthetic.shell_tasks(1)[:1], tmp_path / "tasks"))
    torch.manual_seed(0)
    [r] = run_rollouts([(tasks[0], 0)], HfEngine(policy.model, policy.tokenizer.pad_token_id), policy.fmt,
                       RolloutConfig(max_turn_tokens=16), EnvConfig(), policy.max_context)
    assert r.turns == 1 and r.reward == 0.0 and r.scored and r.end in ("no_tool_call", "turn_budget")
    assert not any(s is False for s in r.sampled)  # no observation was appended


def test_a_sandbox_that_cannot_start_makes_the_rollout_unscored(trained, shell_family):
    tasks = load_tasks(shell_family["held"])[:2]
    torch.manual_seed(0)
    engine = HfEngine(trained.model, trained.tokenizer.pad_token_id)
    rollouts = run_rollouts([(t, g) for t in tasks for g in range(4)], engine, trained.fmt,
                            RolloutConfig(max_turn_tokens=96), EnvConfig(backend="podman", image="none:x"),
                            trained.max_context)
    called = [r for r in rollouts if r.end != "no_tool_call" and r.end != "turn_budget"]
    assert called and all(r.reward is None and not r.scored and r.end == "unscored" and
                          r.unscored.startswith("sandbox did not start") for r in called)


def test_a_prompt_that_leaves_no_room_is_unscored_not_a_failure(policy, tmp_path):
    tasks = load_tasks(synthetic.write_tmax(synthetic.shell_tasks(1)[:1], tmp_path / "tasks"))
    [r] = run_rollouts([(tasks[0], 0)], HfEngine(policy.model, policy.tokenizer.pad_token_id), policy.fmt,
                       RolloutConfig(max_context=20), EnvConfig(), policy.max_context)
    assert r.reward is None and r.end == "unscored" and "leaves no room in the context" in r.unscored


def test_sequences_never_outgrow_the_response_budget(trained, shell_family):
    tasks = load_tasks(shell_family["held"])[:4]
    torch.manual_seed(0)
    config = RolloutConfig(max_turns=4, max_turn_tokens=96, max_response_tokens=70, format_feedback=True)
    rollouts = run_rollouts([(t, 0) for t in tasks], HfEngine(trained.model, trained.tokenizer.pad_token_id),
                            trained.fmt, config, EnvConfig(), trained.max_context)
    assert all(len(r.response_ids) <= 70 for r in rollouts)
    assert any(r.end == "budget" for r in rollouts)
