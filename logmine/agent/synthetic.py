"""A generated family of small verifiable shell tasks, for tests, benchmarks and the learning check.

Each task asks for one text operation on ``input.txt`` (copy, sort, reverse, count, upper-case,
first line) written to ``answer.txt``; the input lines differ per task. The bundle's hidden
``tests/expected.txt`` holds the right answer and ``tests/test.sh`` rewards 1 iff ``answer.txt``
equals it byte for byte. The solved trajectory is two ``bash`` calls — the operation's command
(``sort input.txt > answer.txt``), then the submission — so a policy must read which operation the
prompt asks for; the shell does the data work. :func:`write_tmax` lays tasks out as a ``logmine
export tmax`` directory (rows + bundles); :func:`write_sft` renders solved trajectories into a
``logmine export sft`` token directory with logmine's renderer, so both trainers consume them
unchanged.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from logmine.export.tmax import ROW_SCHEMA
from logmine.protocol import BASH_TOOL, SUBMIT, format_observation

SYSTEM = f"Use the bash tool. When done, run: echo {SUBMIT}"
_VOCAB = ("red", "blue", "green", "black", "white", "pink", "gold", "gray", "apple", "pear", "plum", "lemon",
          "cat", "dog", "owl", "fox", "oak", "elm", "pine", "rose")
# operation: (instruction, command, answer from the input lines)
OPERATIONS: dict[str, tuple[str, str, Callable[[list[str]], str]]] = {
    "copy": ("Copy input.txt to answer.txt.", "cp input.txt answer.txt", lambda ls: "".join(x + "\n" for x in ls)),
    "sort": ("Sort the lines of input.txt into answer.txt.", "sort input.txt > answer.txt",
             lambda ls: "".join(x + "\n" for x in sorted(ls))),
    "reverse": ("Write the lines of input.txt in reverse order to answer.txt.", "tac input.txt > answer.txt",
                lambda ls: "".join(x + "\n" for x in reversed(ls))),
    "count": ("Write the number of lines in input.txt to answer.txt.", "wc -x < input.txt > answer.txt",
              lambda ls: f"{len(ls)}\n"),
    "upper": ("Write input.txt in upper case to answer.txt.", "tr a-z A-Z < input.txt > answer.txt",
              lambda ls: "".join(x.upper() + "\n" for x in ls)),
    "first": ("Write the first line of input.txt to answer.txt.", "head -n 1 input.txt > answer.txt",
              lambda ls: ls[0] + "\n"),
}
_TEST_SH = """#!/bin/bash
mkdir -p "$LOGS_DIR"
cd "${WORKSPACE:-/workspace}"
if cmp -s "$TESTS_DIR/expected.txt" answer.txt; then echo 1 > "$LOGS_DIR/reward.txt"
else echo 0 > "$LOGS_DIR/reward.txt"; fi
"""



@dataclass(frozen=True, slots=True)
class ShellTask:
    operation: str
    lines: tuple[str, ...]
    index: int

    @property
    def task_id(self) -> str:
        return f"{self.operation}_{self.index:03d}"

    @property
    def instruction(self) -> str:
        return OPERATIONS[self.operation][0]

    @property
    def messages(self) -> list[dict]:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": self.instruction}]

    @property
    def solution(self) -> list[str]:
        return [OPERATIONS[self.operation][1], f"echo {SUBMIT}"]

    @property
    def expected(self) -> str:
        return OPERATIONS[self.operation][2](list(self.lines))


def shell_tasks(per_operation: int, seed: int = 0) -> list[ShellTask]:
    """``per_operation`` tasks of every operation, each with its own random input, interleaved by
    operation (so any prefix is balanced: split it into train and held-out sets)."""
    rng = random.Random(seed)
    tasks = []
    for i in range(per_operation):
        for op in OPERATIONS:
            lines = tuple(rng.sample(_VOCAB, rng.randint(2, 5)))
            tasks.append(ShellTask(op, lines, i))
    return tasks


def texts() -> list[str]:
    """Text to train a tiny tokenizer on (instructions, commands, the submission)."""
    return [SYSTEM, " ".join(_VOCAB)] + [f"{text} {command}" for text, command, _ in OPERATIONS.values()]


def write_tmax(tasks: list[ShellTask], out: Path) -> Path:
    """``out/data/train-00000-of-00001.parquet`` + ``out/tasks/<task_id>/`` bundles; returns ``out``."""
    rows = []
    for task in tasks:
        bundle = Path(out) / "tasks" / task.task_id
        (bundle / "environment" / "seeds").mkdir(parents=True, exist_ok=True)
        (bundle / "tests").mkdir(parents=True, exist_ok=True)
        (bundle / "environment" / "seeds" / "input.txt").write_text("".join(x + "\n" for x in task.lines))
        (bundle / "instruction.md").write_text(task.instruction + "\n")
        (bundle / "tests" / "test.sh").write_text(_TEST_SH)
        (bundle / "tests" / "expected.txt").write_text(task.expected)
        rows.append({"messages": task.messages, "ground_truth": task.task_id, "dataset": "passthrough",
                     "env_config": {"env_name": "swerl_vanillux_sandbox", "image": "python:3.11-slim",
                                    "task_id": task.task_id}, "source": "logmine:synthetic"})
    (Path(out) / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), Path(out) / "data" / "train-00000-of-00001.parquet")
    return Path(out)


def solved_messages(task: ShellTask) -> list[dict]:
    """The task's solved trajectory as chat messages (OpenAI tool-call format)."""
    messages = list(task.messages)
    for n, command in enumerate(task.solution):
        messages.append({"role": "assistant", "content": "", "tool_calls": [{
            "id": f"call_{n}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]})
        if n < len(task.solution) - 1:
            messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": format_observation("", 0)})
    return messages


def write_sft(tasks: list[ShellTask], tokenizer, out: Path, lam: float = 0.0) -> Path:
    """Solved trajectories as a token-level SFT directory (``out/tokens/``) for ``logmine train sft``."""
    return write_token_sft([solved_messages(t) for t in tasks], tokenizer, out, lam, [t.task_id for t in tasks])


def write_token_sft(conversations: list[list[dict]], tokenizer, out: Path, lam: float = 0.0,
                    ids: list[str] | None = None) -> Path:
    """Conversations with the ``bash`` tool rendered by logmine's renderer into ``out/tokens/`` (the
    layout ``logmine export sft --tokenizer`` writes; ``ids`` name the examples, default their index).
    Raises ValueError when one does not render."""
    from logmine.export.render import Renderer
    from logmine.export.sft import token_table

    results = Renderer(tokenizer, lam=lam).render([(messages, [BASH_TOOL]) for messages in conversations])
    ids = ids or [str(i) for i in range(len(conversations))]
    rows = [(name, name, e) for name, r in zip(ids, results) for e in r.examples]
    if len(rows) != len(conversations):
        raise ValueError("some conversations did not render (is the chat template prefix-stable?)")
    (Path(out) / "tokens").mkdir(parents=True, exist_ok=True)
    pq.write_table(token_table(rows), Path(out) / "tokens" / "train-00000-of-00001.parquet")
    return Path(out)
