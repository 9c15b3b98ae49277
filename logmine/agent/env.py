"""One task's environment: a sandbox built from the bundle, a persistent ``bash``, and grading at submission.

    with TaskEnv.open(task.bundle, EnvConfig()) as env:
        step = env.execute(ToolCall("bash", {"command": "ls"}))   # Step(observation, done, reward, ...)

Rules (TMax's ``swerl_vanillux_sandbox``, on logmine's sandbox):

- The workspace is a copy of ``environment/seeds`` mounted at ``/workspace``; no network; writes only there.
- ``bash`` runs in one persistent shell (``cd`` and ``export`` persist). A command past
  ``command_timeout_s`` is killed, the observation says so, and a fresh shell takes over (the
  workspace stays). The output is capped head + tail by the sandbox, then ``[exit code: N]`` is
  appended (:func:`logmine.protocol.format_observation`, the format of the SFT data).
- ``apply_patch`` (when enabled) runs the sandbox's own Codex-grammar ``apply_patch``.
- Submission: a command whose output contains ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``. Every
  process of the agent is ended first, then ``tests/`` is copied in under a random name (the policy
  never sees it before), ``tests/test.sh`` runs, and ``reward.txt`` is read (clamped to [0, 1]; a
  missing or unreadable file is 0 — the policy's work did not produce a pass). ``install_files``
  gives back owner access the agent took away on the way, so a ``chmod 000`` cannot block grading.
- **Unscored**, never 0: the sandbox could not be built or started, the shell died of an
  infrastructure error, or the grader could not run. A grader past ``test_timeout_s`` gets
  ``test_timeout_reward`` (default 0.0: the policy's code hung), or is unscored when that is None.
"""

from __future__ import annotations

import secrets
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from logmine.agent.tools import ToolCall
from logmine.protocol import SUBMIT, format_observation  # the protocol the exported rows describe
from logmine.sandbox import Limits, SandboxError, open_sandbox
from logmine.workspace import read_inside

WORKSPACE = "/workspace"


_START_FAILED = "could not start the sandbox: "  # logmine.sandbox's words for a failed launch


@dataclass(frozen=True, slots=True)
class EnvConfig:
    backend: str = "bwrap"
    image: str | None = None  # docker/podman only
    command_timeout_s: float = 120.0  # per bash command (TMax: 120 s)
    test_timeout_s: float = 120.0
    test_timeout_reward: float | None = 0.0  # None: a grader timeout is unscored
    memory_mb: int = 4096
    output_bytes: int = 10_000  # head + tail of each observation (TMax: 10,000 chars)
    apply_patch: bool = False  # also accept the apply_patch tool


@dataclass(frozen=True, slots=True)
class Step:
    observation: str
    done: bool = False
    reward: float | None = None  # set when done by a submission that was graded
    unscored: str | None = None  # set when the rollout cannot be scored (infrastructure)


class TaskEnv:
    def __init__(self, box, config: EnvConfig, tests: Path, seeds_tmp: tempfile.TemporaryDirectory | None) -> None:
        self._box, self._config, self._tests, self._seeds_tmp = box, config, tests, seeds_tmp
        self._shell = box.shell(WORKSPACE)

    @classmethod
    def open(cls, bundle: Path, config: EnvConfig) -> TaskEnv:
        """Raises SandboxError (infrastructure: the rollout is unscored) when the sandbox cannot start."""
        seeds, tmp = Path(bundle) / "environment" / "seeds", None
        if not seeds.is_dir():  # a task whose start state has no files
            tmp = tempfile.TemporaryDirectory(prefix="logmine-seeds-")
            seeds = Path(tmp.name)
        limits = Limits(wall_s=max(config.command_timeout_s, config.test_timeout_s), memory_mb=config.memory_mb,
                        cpu_s=int(max(config.command_timeout_s, config.test_timeout_s)) + 1,
                        output_bytes=config.output_bytes)
        try:
            box = open_sandbox(seeds, mount_at=WORKSPACE, backend=config.backend, image=config.image, limits=limits)
        except (SandboxError, OSError) as exc:
            if tmp:
                tmp.cleanup()
            raise SandboxError(str(exc)) from exc
        return cls(box, config, Path(bundle) / "tests", tmp)

    def execute(self, call: ToolCall) -> Step:
        """Run one tool call; a submission grades the workspace and ends the episode."""
        if call.name == "bash" and isinstance(call.arguments.get("command"), str):
            command = call.arguments["command"]
        elif call.name == "apply_patch" and self._config.apply_patch and isinstance(call.arguments.get("patch"), str):
            patch = call.arguments["patch"]
            mark = "LOGMINE_PATCH_" + secrets.token_hex(4)
            command = f"apply_patch <<'{mark}'\n{patch}\n{mark}"
        else:
            tools = "`bash` (command)" + (" or `apply_patch` (patch)" if self._config.apply_patch else "")
            return Step(f"Unknown tool or arguments: {call.name}({', '.join(call.arguments)}). Use {tools}.")
        if not self._shell.alive:  # the agent ran `exit` or timed out: a fresh shell, same workspace
            self._shell = self._box.shell(WORKSPACE)
        result = self._shell.run(command, timeout_s=self._config.command_timeout_s)
        if result.timed_out:
            self._shell = self._box.shell(WORKSPACE)
            return Step(f"{result.output}\nThe command timed out after {self._config.command_timeout_s:g} s and was "
                        "killed; the shell was restarted (cwd and exports are reset).")
        if result.error is not None:  # a container engine fails only at the first command: same words
            reason = result.error.removeprefix(_START_FAILED)
            why = f"sandbox did not start: {reason}" if reason != result.error else f"sandbox: {reason}"
            return Step(result.output, done=True, unscored=why)
        if SUBMIT in result.output:
            return self.grade()
        return Step(format_observation(result.output, result.exit_code))

    def grade(self) -> Step:
        """End the agent's processes, install the hidden tests, run ``tests/test.sh``, read the reward."""
        name = f".logmine-grade-{secrets.token_hex(8)}"
        try:
            files = {f"{name}/tests/{p.relative_to(self._tests)}": p.read_text()
                     for p in sorted(self._tests.rglob("*")) if p.is_file()}
            self._box.install_files(files)  # ends every process of the agent first
        except (OSError, SandboxError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            return Step("", done=True, unscored=f"installing the tests failed: {exc}")
        root = f"{WORKSPACE}/{name}"
        env = f"WORKSPACE={WORKSPACE} TESTS_DIR={root}/tests LOGS_DIR={root}/logs"
        result = self._box.run(f"{env} bash {shlex.quote(root + '/tests/test.sh')}", cwd=WORKSPACE,
                               timeout_s=self._config.test_timeout_s)
        if result.timed_out and self._config.test_timeout_reward is not None:
            return Step(f"Tests timed out. Reward: {self._config.test_timeout_reward:g}", done=True,
                        reward=self._config.test_timeout_reward)
        if result.unscored:
            return Step(result.output, done=True, unscored=f"grader: {result.error or 'timed out'}")
        text = read_inside(self._box.workspace, f"{name}/logs/reward.txt")
        try:
            reward = min(max(float(text.strip()), 0.0), 1.0) if text else 0.0
        except ValueError:
            reward = 0.0
        return Step(f"Test execution complete. Reward: {reward:g}", done=True, reward=reward)

    def close(self) -> None:
        self._shell.close()
        self._box.close()
        if self._seeds_tmp:
            self._seeds_tmp.cleanup()

    def __enter__(self) -> TaskEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
