"""``logmine export atif``: each task as a trajectory in Harbor's Agent Trajectory Interchange Format.

    OUT/trajectories/<task_id>.json   one ATIF document per task (``schemas/atif-trajectory.schema.json``)
    OUT/README.md                     card: counts, sources, the mapping in short, redaction, how to read it

A task's conversation is built by :mod:`logmine.export.trajectory`, exactly as for ``export sft``
(without a system prompt: Codex's own is not in the logs), then turned into ATIF steps: the request
and each follow-up a ``user`` step, each assistant turn an ``agent`` step with its ``tool_calls``
and, as its ``observation``, the results of those calls. The agent is ``codex`` (the session's CLI
version and model, the tool schemas); ``final_metrics`` holds the task's token counts when the
session logged them; ``extra.logmine`` says where the task comes from and how far its verifiers
got. Every document passes the store's redaction gate, then the JSON Schema and
:func:`check_trajectory`, and only then is written; one that fails is not exported, with its reason.
The directory is written next to ``OUT`` and moved into place at the end, as ``export sft`` does.
``docs/export-atif.md`` gives the mapping field by field.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby
from pathlib import Path

import duckdb
import jsonschema
import orjson

from logmine import __version__
from logmine.errors import LogmineError
from logmine.export.outdir import markdown_table, staged
from logmine.export.trajectory import (
    EVENT_COLUMNS,
    EVENTS_WHERE,
    REASONING_MODES,
    TOOL_MODES,
    Drop,
    Trajectory,
    TrajectoryOptions,
    build_trajectory,
)
from logmine.ingest.records import Event, TokenUsage, thread_token_usage
from logmine.redact import Redactor, write_text
from logmine.segment.branches import active_events
from logmine.segment.records import NoTasks, Task, read_tasks
from logmine.store import CATALOG, Store, StoreError, fetch_dicts

SCHEMA = Path(__file__).parents[1] / "schemas" / "atif-trajectory.schema.json"
SCHEMA_VERSION = "ATIF-v1.7"  # trajectory_id (a document's own id, apart from its run's session_id) is v1.7
AGENT_NAME = "codex"
AGENT_NAMES = {"claude": "claude-code"}  # a session format that is not Codex's -> its agent
BATCH_FILES = 100  # session files whose events are read at once

# the conversation's events (model-visible records) and each session's running token totals
_EVENTS_SQL = f"""
SELECT source_path, {', '.join(EVENT_COLUMNS)}, CASE WHEN kind = 'token_usage' THEN raw END AS raw FROM events
WHERE source_path IN (SELECT unnest(?))
  AND (kind = 'token_usage' OR {EVENTS_WHERE})
ORDER BY source_path, seq
"""
_EXITS_SQL = "SELECT source_path, call_id, exit_code FROM tool_calls WHERE source_path IN (SELECT unnest(?))"
_SESSIONS_SQL = """
SELECT source_path, any_value(format) AS format, any_value(cli_version) AS cli_version, any_value(model) AS model,
       any_value(model_provider) AS model_provider, any_value(originator) AS originator
FROM sessions WHERE source_path IN (SELECT unnest(?)) GROUP BY source_path
"""
_VERIFIERS_SQL = """
SELECT v.task_id, v.kind, v.status FROM verifiers v JOIN tasks t ON t.task_id = v.task_id AND t.seg_gen = v.seg_gen
WHERE v.task_id IN (SELECT unnest(?)) ORDER BY v.task_id, v.verifier_id
"""


class AtifExportError(LogmineError, RuntimeError):
    """The export cannot run: no store, a bad option, an output directory that is not empty or not
    writable."""


class NothingToExport(AtifExportError, NoTasks):
    """The store has no tasks: ``logmine segment`` has not run."""


@dataclass(frozen=True, slots=True)
class AtifExportConfig:
    store: Path
    out: Path
    tools: str = "canonical"  # canonical (bash + apply_patch, as export sft) | raw (the agent's own tools)
    reasoning: str = "summary"  # summary (reasoning summaries as reasoning_content) | drop
    overwrite: bool = False  # replace a non-empty OUT


@dataclass
class AtifExportSummary:
    tasks: int = 0  # tasks in the store
    trajectories: int = 0  # files written
    steps: int = 0  # steps in them
    with_tokens: int = 0  # trajectories with token counts
    dropped: Counter = field(default_factory=Counter)  # tasks not exported, by reason
    not_exported: list[tuple[str, str]] = field(default_factory=list)  # (task_id, reason)
    left_out: Counter = field(default_factory=Counter)  # parts of exported conversations left out
    sources: Counter = field(default_factory=Counter)  # (format, cli_version, model) -> sessions exported from
    redactions: Counter = field(default_factory=Counter)
    out: Path | None = None
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What the ``sessions`` table says about the agent of a session file."""

    format: str | None = None
    cli_version: str | None = None
    model: str | None = None
    model_provider: str | None = None
    originator: str | None = None

    @classmethod
    def from_row(cls, row: dict) -> SessionInfo:
        return cls(row["format"], row["cli_version"], row["model"], row["model_provider"], row["originator"])


def export_atif(config: AtifExportConfig, progress: Callable[[int, int], None] | None = None, *,
                store: Store | None = None) -> AtifExportSummary:
    """Write one ATIF trajectory per task of the store to ``config.out``; ``progress(done, total)``
    is called with tasks processed so far. ``store``: an already-open store, else ``config.store``
    is opened read-only. Raises :class:`AtifExportError` (:class:`NothingToExport` without tasks)."""
    started = time.monotonic()
    _check(config, has_store=store is not None)
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    options = TrajectoryOptions(config.tools, config.reasoning, system_prompt="")
    summary = AtifExportSummary(out=config.out)
    with staged(config.out, AtifExportError) as staging:
        (staging / "trajectories").mkdir()
        with nullcontext(store) if store is not None else _open_store(config.store) as store:
            tasks = _tasks(store)
            summary.tasks = len(tasks)
            writer = _Writer(staging / "trajectories", store.redactor(), validator, summary)
            by_path = [list(group) for _, group in groupby(tasks, key=lambda t: t.source_path)]
            done = 0
            for start in range(0, len(by_path), BATCH_FILES):
                batch = [task for group in by_path[start:start + BATCH_FILES] for task in group]
                _export_batch(store, batch, options, writer)
                done += len(batch)
                if progress:
                    progress(done, len(tasks))
        summary.redactions = writer.redactor.counts
        summary.elapsed_s = time.monotonic() - started
        write_text(staging / "README.md", _card(config, summary), writer.redactor)
    summary.elapsed_s = time.monotonic() - started
    return summary


def _check(config: AtifExportConfig, has_store: bool) -> None:
    for name, value, allowed in (("tools", config.tools, TOOL_MODES), ("reasoning", config.reasoning, REASONING_MODES)):
        if value not in allowed:
            raise AtifExportError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    if not has_store and not (config.store / CATALOG).exists():
        raise AtifExportError(f"no logmine store at {config.store}")
    if config.out.exists() and (not config.out.is_dir() or any(config.out.iterdir())) and not config.overwrite:
        raise AtifExportError(f"output directory {config.out} is not empty", "pass --overwrite to replace it")


def _open_store(path: Path) -> Store:
    try:
        return Store(path, read_only=True)
    except StoreError as exc:
        raise AtifExportError(str(exc)) from exc


def _tasks(store: Store) -> list[Task]:
    try:
        tasks = read_tasks(store)
    except duckdb.Error as exc:
        raise AtifExportError(f"cannot read the tasks of {store.root}: {str(exc).splitlines()[0]}") from exc
    if not tasks:
        raise NothingToExport.in_store(store.root)
    return tasks


def _export_batch(store: Store, tasks: list[Task], options: TrajectoryOptions, writer: _Writer) -> None:
    """The tasks of a batch of session files (all the tasks of each file), read with one query a table."""
    paths = list(dict.fromkeys(task.source_path for task in tasks))
    events: dict[str, list[Event]] = {p: [] for p in paths}
    totals: dict[str, list[tuple[int, TokenUsage]]] = {p: [] for p in paths}
    for row in fetch_dicts(store.con.execute(_EVENTS_SQL, [paths])):
        event, path = Event.from_row(row), row["source_path"]
        if event.kind != "token_usage":
            events[path].append(event)
        elif (total := thread_token_usage(event.raw)) is not None:
            totals[path].append((event.seq, total))
    events = active_events(store.con, events)  # a Claude Code turn abandoned for a retry is in no trajectory
    exits: dict[str, dict] = {p: {} for p in paths}
    for row in fetch_dicts(store.con.execute(_EXITS_SQL, [paths])):
        exits[row["source_path"]][row["call_id"]] = row["exit_code"]
    sessions = {r["source_path"]: SessionInfo.from_row(r) for r in fetch_dicts(store.con.execute(_SESSIONS_SQL, [paths]))}
    verifiers: dict[str, list[dict]] = {}
    for row in fetch_dicts(store.con.execute(_VERIFIERS_SQL, [[task.task_id for task in tasks]])):
        verifiers.setdefault(row["task_id"], []).append({"kind": row["kind"], "status": row["status"]})
    seqs = {p: [e.seq for e in events[p]] for p in paths}
    exported: set[str] = set()
    for task in tasks:
        path = task.source_path
        own = events[path][bisect_left(seqs[path], task.first_seq):bisect_right(seqs[path], task.last_seq)]
        result = build_trajectory(task, own, exits[path], options)
        if isinstance(result, Drop):
            writer.drop(result)
            continue
        usage = task_token_usage(totals[path], task)
        session = sessions.get(path, SessionInfo())
        document = trajectory_document(task, result, session, verifiers.get(task.task_id, []), usage, options)
        if writer.write(task.task_id, document):
            writer.summary.left_out.update(dict(result.left_out))
            writer.summary.with_tokens += usage is not None
            if path not in exported:
                exported.add(path)
                writer.summary.sources[(session.format, session.cli_version, session.model)] += 1


def task_token_usage(totals: list[tuple[int, TokenUsage]], task: Task) -> TokenUsage | None:
    """The tokens the task's model calls used: the session's running total at its last count minus
    the total before the task began (``totals``: (seq, total) in seq order). None when the task has
    no count, or when the totals went down (a thread that restarted its count)."""
    before, last = TokenUsage(), None
    for seq, total in totals:
        if seq < task.first_seq:
            before = total
        elif seq <= task.last_seq:
            last = total
    if last is None:
        return None
    used = last - before
    return used if min(used.input, used.cached_input, used.output, used.reasoning_output) >= 0 else None


def verifier_state(statuses: list[str | None]) -> str:
    """The best of a task's verifications, as ``export sft``'s ``verifier`` column says it: validated,
    open (not verified yet, unscored or not rebuilt), refuted, or none (no candidate)."""
    if "validated" in statuses:
        return "validated"
    if any(status is None or status in ("unscored", "not_rebuilt") for status in statuses):
        return "open"
    return "refuted" if statuses else "none"


def trajectory_document(task: Task, trajectory: Trajectory, session: SessionInfo, verifiers: list[dict],
                        usage: TokenUsage | None, options: TrajectoryOptions) -> dict:
    """The ATIF document of one task (not redacted yet: :class:`_Writer` does that)."""
    steps = atif_steps(trajectory.messages)
    agent = {"name": AGENT_NAMES.get(session.format or "", AGENT_NAME), "version": session.cli_version or "unknown",
             "model_name": session.model,
             "tool_definitions": list(trajectory.tools),
             "extra": _present({"model_provider": session.model_provider, "originator": session.originator})}
    metrics: dict = {"total_steps": len(steps)}
    if usage is not None:
        metrics.update(total_prompt_tokens=usage.input, total_completion_tokens=usage.output,
                       total_cached_tokens=usage.cached_input,
                       extra={"reasoning_output_tokens": usage.reasoning_output})
    provenance = {
        "task_id": task.task_id, "session_id": task.session_id, "task_index": task.index,
        "verifier": verifier_state([v["status"] for v in verifiers]), "verifiers": verifiers,
        "tools": options.tools, "reasoning": options.reasoning, "left_out": dict(trajectory.left_out),
        "started_at": _iso(task.started_at), "ended_at": _iso(task.ended_at), "exporter": f"logmine {__version__}"}
    interface = "bash and apply_patch (logmine's canonical tools)" if options.tools == "canonical" else \
        "Codex's own tool names and arguments"
    return _present({
        "schema_version": SCHEMA_VERSION, "session_id": task.session_id, "trajectory_id": task.task_id,
        "agent": _present(agent), "steps": steps,
        "notes": f"A task of an OpenAI Codex CLI session, exported by logmine. Tool calls: {interface}. "
                 "final_metrics counts every model call of the task, from the session's running token totals.",
        "final_metrics": metrics, "extra": {"logmine": provenance}})


def atif_steps(messages: tuple[dict, ...]) -> list[dict]:
    """ATIF steps from a conversation of :mod:`logmine.export.trajectory`: a ``user`` (or ``system``)
    message is a step of its own; an ``assistant`` turn is an ``agent`` step (``content`` its message,
    ``reasoning_content``, ``tool_calls`` with the arguments as an object); each ``tool`` result joins
    the ``observation`` of the agent step that made the call (the conversation puts results right
    after their turn)."""
    steps: list[dict] = []
    for message in messages:
        role = message["role"]
        if role == "tool":
            step = steps[-1]  # the turn that made the call (see the docstring)
            step.setdefault("observation", {"results": []})["results"].append(
                {"source_call_id": message["tool_call_id"], "content": message["content"]})
            continue
        step = {"step_id": len(steps) + 1, "source": "agent" if role == "assistant" else role,
                "message": message["content"]}
        if message.get("reasoning_content"):
            step["reasoning_content"] = message["reasoning_content"]
        if message.get("tool_calls"):
            step["tool_calls"] = [{"tool_call_id": call["id"], "function_name": call["function"]["name"],
                                   "arguments": orjson.loads(call["function"]["arguments"])}
                                  for call in message["tool_calls"]]
        steps.append(step)
    return steps


def check_trajectory(validator: jsonschema.protocols.Validator, document: dict) -> str | None:
    """Why ``document`` is not a valid ATIF trajectory, else None: the JSON Schema, then the two rules
    the schema cannot say (step ids 1, 2, 3…; an observation answers a call of its own step)."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the document"
        return f"{where}: {error.message}"[:300]
    for i, step in enumerate(document["steps"]):
        if step["step_id"] != i + 1:
            return f"steps/{i}: step_id {step['step_id']}, expected {i + 1}"
        calls = {call["tool_call_id"] for call in step.get("tool_calls") or ()}
        for result in (step.get("observation") or {}).get("results", ()):
            if result.get("source_call_id") is not None and result["source_call_id"] not in calls:
                return f"steps/{i}: an observation answers {result['source_call_id']!r}, not a call of its step"
    return None


class _Writer:
    """Redacts, checks and writes documents; accounts for every task that is not written."""

    def __init__(self, directory: Path, redactor: Redactor, validator, summary: AtifExportSummary):
        self.directory, self.redactor, self.validator, self.summary = directory, redactor, validator, summary

    def write(self, task_id: str, document: dict) -> bool:
        # plain JSON values (no tuples), redacted: what is checked is what is written
        document = self.redactor.redact_obj(orjson.loads(orjson.dumps(document)))
        problem = check_trajectory(self.validator, document)
        if problem:
            self.drop(Drop(task_id, "not a valid ATIF trajectory", problem))
            return False
        text = orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
        write_text(self.directory / f"{task_id}.json", text, self.redactor, json=True)
        self.summary.trajectories += 1
        self.summary.steps += len(document["steps"])
        return True

    def drop(self, drop: Drop) -> None:
        self.summary.dropped[drop.reason] += 1
        self.summary.not_exported.append((drop.task_id, f"{drop.reason}: {drop.detail}" if drop.detail else drop.reason))


def _present(values: dict) -> dict:
    return {key: value for key, value in values.items() if value is not None and value != {}}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _card(config: AtifExportConfig, summary: AtifExportSummary) -> str:
    """The README.md of the export: counts, settings, sources, mapping, redaction, usage."""
    counts = [("tasks in the store", summary.tasks), ("trajectories (`trajectories/`)", summary.trajectories),
              ("steps", summary.steps), ("trajectories with token counts", summary.with_tokens)]
    sources = [(f or "?", c or "?", m or "?", n) for (f, c, m), n in summary.sources.most_common()]
    return "\n".join([
        "# logmine ATIF export\n\nCoding-agent sessions (OpenAI Codex CLI) exported by `logmine export atif`: one "
        f"trajectory per task (a user request and the work it caused) in Harbor's Agent Trajectory Interchange "
        f"Format, `{SCHEMA_VERSION}`.\n",
        "## Counts\n\n" + markdown_table("| | |", counts),
        "### Tasks not exported\n\n" + markdown_table("| reason | tasks |", summary.dropped.most_common()),
        "### Left out of exported trajectories\n\n" + markdown_table("| what | count |", summary.left_out.most_common()),
        "## Settings\n\n" + markdown_table("| | |", [("tools", config.tools), ("reasoning", config.reasoning)]),
        "## Sources\n\n" + markdown_table("| format | Codex CLI | model | sessions |", sources),
        _MAPPING_DOC, _REDACTION_DOC, _USAGE_DOC])


_MAPPING_DOC = """## Files

`trajectories/<task_id>.json`: one ATIF trajectory each (JSON Schema: logmine `schemas/atif-trajectory.schema.json`;
the mapping field by field: logmine `docs/export-atif.md`).

- `session_id` is the Codex session (tasks of one session share it), `trajectory_id` the task;
- `agent`: `codex`, the Codex CLI version, the session's model, the tool schemas;
- `steps`: the request as a `user` step; each assistant turn an `agent` step (`message`, `reasoning_content`:
  reasoning summaries, `tool_calls`) whose `observation` holds the results of its calls (the output, then
  `[exit code: N]` when known); follow-up requests as `user` steps;
- `final_metrics`: `total_steps`, and the tokens of every model call of the task when the session logged them;
- `extra.logmine`: task and session ids, the verifier state (`validated`, `open`, `refuted`, `none`) and each
  verification, what the conversation left out.

Harbor keeps a trial's trajectory at `<trial>/agent/trajectory.json` next to the trial's `result.json`; these
trajectories come from logs, not from Harbor trials, so they are written flat, one file per task.
"""

_REDACTION_DOC = """## Redaction

Secrets were redacted when the sessions were ingested, and every trajectory passed the redaction gate again
before it was written: each secret is a pseudonym of the same shape (the same one wherever it occurred,
derived with a key that stays with the store) or, in a store ingested with `--redact-style placeholder`, a
typed placeholder such as `[REDACTED:github_token]`. Not redacted: names, e-mail addresses, home directory
paths, and the source code the agent read or wrote. Review the data before publishing it.
"""

_USAGE_DOC = """## Usage

```python
from pathlib import Path
from harbor.models.trajectories import Trajectory

trajectories = [Trajectory.model_validate_json(p.read_text()) for p in Path("OUT/trajectories").glob("*.json")]
```
"""
