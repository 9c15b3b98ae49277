"""``logmine export sft``: one SFT example per task, as a Hugging Face dataset directory.

    OUT/README.md                               dataset card: schema, counts, λ, tokenizer, sources, redaction
    OUT/data/train-00000-of-0000N.parquet       messages + tools (config "default"; TRL's SFTTrainer reads it as is)
    OUT/tokens/tokens-00000-of-0000N.parquet    with a tokenizer: input_ids, loss_weights, source (config "tokens")
    OUT/rejects.parquet                         every task not exported, with its reason

Selection: tasks whose verifiers reach ``min_verifier`` (validated; candidate = validated or not yet
refuted; any), conversations built by :mod:`logmine.export.trajectory`, identical conversations
exported once, length limits. With a tokenizer, :mod:`logmine.export.render` weights every token
(actions 1, observations λ, the rest 0); a conversation that yields no token example is dropped from
both configs, so the two describe the same tasks. The directory is written next to ``OUT`` and moved
into place at the end: an interrupted export leaves no partial dataset.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

import duckdb
import numpy as np
import orjson
import pyarrow as pa

from logmine.errors import LogmineError
from logmine.export.outdir import staged
from logmine.export.render import ACTION, OBSERVATION, SOURCES, UNSTABLE_MODES, Renderer, load_tokenizer
from logmine.export.sft_card import card
from logmine.export.trajectory import (
    EVENT_COLUMNS,
    EVENTS_WHERE,
    REASONING_MODES,
    SYSTEM_PROMPT,
    TOOL_MODES,
    Drop,
    Trajectory,
    TrajectoryOptions,
    build_trajectory,
)
from logmine.ingest.records import Event
from logmine.pipeline import packaged
from logmine.redact import Redactor, write_table, write_text
from logmine.segment.branches import active_events
from logmine.segment.records import NoTasks, Task, read_tasks
from logmine.store import CATALOG, Store, StoreError, fetch_dicts

MIN_VERIFIER = ("validated", "candidate", "any")
BATCH_FILES = 100

# each task's verifier state (validated, open: not verified yet or unscored, refuted, none) and model
_ABOUT_SQL = """
SELECT t.task_id, any_value(s.model) AS model,
       CASE WHEN count(v.verifier_id) FILTER (WHERE v.status = 'validated') > 0 THEN 'validated'
            WHEN count(v.verifier_id) FILTER (WHERE v.status IS NULL OR v.status IN ('unscored', 'not_rebuilt')) > 0
                THEN 'open'
            WHEN count(v.verifier_id) > 0 THEN 'refuted' ELSE 'none' END AS verifier
FROM tasks t
LEFT JOIN verifiers v ON v.task_id = t.task_id AND v.seg_gen = t.seg_gen
LEFT JOIN (SELECT source_path, any_value(model) AS model FROM sessions GROUP BY source_path) s USING (source_path)
GROUP BY t.task_id
"""
_EVENTS_SQL = f"""
SELECT source_path, {', '.join(EVENT_COLUMNS)} FROM events
WHERE source_path IN (SELECT unnest(?)) AND {EVENTS_WHERE}
ORDER BY source_path, seq
"""
_EXITS_SQL = "SELECT source_path, call_id, exit_code FROM tool_calls WHERE source_path IN (SELECT unnest(?))"
_SOURCES_SQL = """
SELECT format, coalesce(cli_version, '?') AS cli_version, coalesce(model, '?') AS model, count(*) AS sessions
FROM sessions WHERE source_path IN (SELECT unnest(?)) GROUP BY ALL ORDER BY sessions DESC
"""
_NOT_SELECTED = {"open": "verifier not validated yet", "refuted": "every verifier refuted",
                 "none": "no verifier candidate"}

_FUNCTION = pa.struct([("name", pa.string()), ("arguments", pa.string())])
_TOOL_CALL = pa.struct([("id", pa.string()), ("type", pa.string()), ("function", _FUNCTION)])
MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("reasoning_content", pa.string()),
                     ("tool_calls", pa.list_(_TOOL_CALL)), ("tool_call_id", pa.string()), ("name", pa.string())])
DATA = pa.schema([("task_id", pa.string()), ("session_id", pa.string()), ("messages", pa.list_(MESSAGE)),
                  ("tools", pa.string()), ("verifier", pa.string()), ("model", pa.string()),
                  ("n_turns", pa.int32()), ("n_tool_calls", pa.int32())])
TOKENS = pa.schema([("example_id", pa.string()), ("task_id", pa.string()), ("turn", pa.int32()),
                    ("input_ids", pa.list_(pa.int32())), ("loss_weights", pa.list_(pa.float32())),
                    ("source", pa.list_(pa.string())), ("assistant_masks", pa.list_(pa.int8())),
                    ("n_tokens", pa.int32()), ("n_action_tokens", pa.int32()), ("n_observation_tokens", pa.int32())])
REJECTS = pa.schema([("task_id", pa.string()), ("reason", pa.string()), ("detail", pa.string())])


class SftExportError(LogmineError, RuntimeError):
    """The export cannot run: no store or no tasks, a bad option, an unusable tokenizer, an output
    directory that is not empty."""


class NothingToExport(SftExportError, NoTasks):
    """The store has no tasks: ``logmine segment`` has not run."""


@dataclass(frozen=True, slots=True)
class SftExportConfig:
    store: Path
    out: Path
    min_verifier: str = field(default_factory=lambda: packaged("export")["min_verifier"])  # validated | candidate | any
    tools: str = "canonical"  # canonical (bash + apply_patch, the sandbox harness's tools) | raw (the agent's own: Codex's, Claude Code's)
    reasoning: str = "drop"  # drop | summary (reasoning summaries as reasoning_content)
    system_prompt: str = SYSTEM_PROMPT  # "" for no system message
    tokenizer: Path | None = None  # a local tokenizer directory: also write the token-level form
    lam: float = 1.0  # λ, the loss weight of observation tokens (0 = action-only SFT)
    on_unstable: str = "drop"  # a conversation that is not prefix-stable: drop | split (one example per turn)
    max_chars: int | None = None  # drop conversations with more characters of text
    max_tokens: int | None = None  # drop token examples longer than this
    dedupe: bool = True  # export identical conversations once
    shard_rows: int = 1000  # rows per Parquet shard
    overwrite: bool = False  # replace a non-empty OUT

    @classmethod
    def from_settings(cls, settings: dict, **fields) -> SftExportConfig:
        """From a pipeline's ``[export]`` settings; ``fields`` (``store``, ``out``, the flags given) win."""
        return cls(**{"min_verifier": settings["min_verifier"], **fields})


@dataclass
class SftExportSummary:
    tasks: int = 0  # tasks in the store
    examples: int = 0  # rows of data/ (one per exported task)
    token_examples: int = 0  # rows of tokens/
    longest_tokens: int = 0  # tokens of the longest row of tokens/
    duplicates: int = 0
    dropped: Counter = field(default_factory=Counter)  # tasks not exported, by reason
    turns_dropped: Counter = field(default_factory=Counter)  # split mode: turn examples left out, by reason
    unstable: Counter = field(default_factory=Counter)  # conversations not prefix-stable, by reason
    left_out: Counter = field(default_factory=Counter)  # parts of exported conversations left out
    tokens: Counter = field(default_factory=Counter)  # token-level form: tokens by source
    sessions: int = 0  # sessions the exported tasks come from
    sources: list = field(default_factory=list)  # (format, cli_version, model, sessions)
    shards: int = 0
    out: Path | None = None
    elapsed_s: float = 0.0


def export_sft(config: SftExportConfig, progress: Callable[[int, int], None] | None = None, *,
               store: Store | None = None) -> SftExportSummary:
    """Export the store's tasks as an SFT dataset directory at ``config.out``; ``progress(done,
    total)`` is called with tasks processed so far. ``store``: an already-open store, else
    ``config.store`` is opened read-only. Raises :class:`SftExportError` (:class:`NothingToExport`
    without tasks)."""
    started = time.monotonic()
    _check(config, has_store=store is not None)
    renderer = _renderer(config) if config.tokenizer else None
    summary = SftExportSummary(out=config.out)
    options = TrajectoryOptions(config.tools, config.reasoning, config.system_prompt)
    with staged(config.out, SftExportError) as staging:
        data = _Shards(staging / "data", "train", lambda rows: pa.Table.from_pylist(rows, schema=DATA),
                       config.shard_rows)
        tokens = _Shards(staging / "tokens", "tokens", token_table, config.shard_rows) if renderer else None
        rejects: list[dict] = []
        with nullcontext(store) if store is not None else _open_store(config.store) as store:
            redactor = store.redactor()  # the store's pseudonyms stay as they are
            for shards in (data, tokens):
                if shards is not None:
                    shards.redactor = redactor
            tasks, about = _tasks(store)
            summary.tasks = len(tasks)
            selected = []
            for task in tasks:
                state = about[task.task_id][0]
                if config.min_verifier == "any" or state == "validated" or (
                        config.min_verifier == "candidate" and state == "open"):
                    selected.append(task)
                else:
                    _reject(summary, rejects, Drop(task.task_id, _NOT_SELECTED[state]))
            exporter = _Exporter(config, options, renderer, summary, rejects, data, tokens, about)
            by_path = [list(group) for _, group in groupby(selected, key=lambda t: t.source_path)]
            done = len(tasks) - len(selected)
            for start in range(0, len(by_path), BATCH_FILES):
                batch = by_path[start:start + BATCH_FILES]
                exporter.run(store, [group[0].source_path for group in batch], [t for g in batch for t in g])
                done += sum(len(group) for group in batch)
                if progress:
                    progress(done, len(tasks))
            summary.sources = [tuple(r.values()) for r in fetch_dicts(store.con.execute(_SOURCES_SQL, [exporter.paths]))]
            summary.sessions = len(exporter.sessions)
        summary.shards = data.close()
        if tokens:
            tokens.close()
        write_table(pa.Table.from_pylist(rejects, schema=REJECTS), staging / "rejects.parquet", data.redactor)
        summary.elapsed_s = time.monotonic() - started
        write_text(staging / "README.md", card(config, summary, renderer), data.redactor)
    summary.elapsed_s = time.monotonic() - started
    return summary


def _check(config: SftExportConfig, has_store: bool) -> None:
    for name, value, allowed in (("min_verifier", config.min_verifier, MIN_VERIFIER),
                                 ("tools", config.tools, TOOL_MODES), ("reasoning", config.reasoning, REASONING_MODES),
                                 ("on_unstable", config.on_unstable, UNSTABLE_MODES)):
        if value not in allowed:
            raise SftExportError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    if not 0 <= config.lam <= 1:
        raise SftExportError(f"lambda must be between 0 and 1, got {config.lam}")
    if not has_store and not (config.store / CATALOG).exists():
        raise SftExportError(f"no logmine store at {config.store}")
    if config.out.exists() and (not config.out.is_dir() or any(config.out.iterdir())) and not config.overwrite:
        raise SftExportError(f"output directory {config.out} is not empty")


def _renderer(config: SftExportConfig) -> Renderer:
    try:
        return Renderer(load_tokenizer(config.tokenizer), config.lam, config.on_unstable)
    except ValueError as exc:
        raise SftExportError(str(exc)) from exc


def _open_store(path: Path) -> Store:
    try:
        return Store(path, read_only=True)
    except StoreError as exc:
        raise SftExportError(str(exc)) from exc


def _tasks(store: Store) -> tuple[list[Task], dict[str, tuple[str, str | None]]]:
    """The store's tasks in order, and each one's verifier state and model by task id."""
    try:
        tasks = read_tasks(store)
        about = {r["task_id"]: (r["verifier"], r["model"]) for r in fetch_dicts(store.con.execute(_ABOUT_SQL))}
    except duckdb.Error as exc:
        raise SftExportError(f"cannot read the tasks of {store.root}: {str(exc).splitlines()[0]}") from exc
    if not tasks:
        raise NothingToExport.in_store(store.root)
    return tasks, about


def _reject(summary: SftExportSummary, rejects: list[dict], drop: Drop) -> None:
    summary.dropped[drop.reason] += 1
    rejects.append({"task_id": drop.task_id, "reason": drop.reason, "detail": drop.detail})


class _Exporter:
    """Turns batches of tasks into rows of the shards; accounts for every task."""

    def __init__(self, config, options, renderer, summary, rejects, data, tokens, about):
        self.config, self.options, self.renderer, self.summary = config, options, renderer, summary
        self.rejects, self.data, self.tokens = rejects, data, tokens
        self.about: dict[str, tuple[str, str | None]] = about  # task id -> (verifier state, model)
        self.digests: set[str] = set()
        self.paths: list[str] = []
        self.sessions: set[str] = set()

    def run(self, store: Store, paths: list[str], tasks: list[Task]) -> None:
        events: dict[str, list[Event]] = {p: [] for p in paths}
        for row in fetch_dicts(store.con.execute(_EVENTS_SQL, [paths])):
            events[row["source_path"]].append(Event.from_row(row))
        events = active_events(store.con, events)  # a Claude Code turn abandoned for a retry is in no trajectory
        exits: dict[str, dict] = {p: {} for p in paths}
        for row in fetch_dicts(store.con.execute(_EXITS_SQL, [paths])):
            exits[row["source_path"]][row["call_id"]] = row["exit_code"]
        seqs = {p: np.array([e.seq for e in events[p]], dtype=np.int64) for p in paths}
        kept: list[tuple[Task, Trajectory]] = []
        for task in tasks:
            path = task.source_path
            lo = int(np.searchsorted(seqs[path], task.first_seq, side="left"))
            hi = int(np.searchsorted(seqs[path], task.last_seq, side="right"))
            result = build_trajectory(task, events[path][lo:hi], exits[path], self.options)
            if isinstance(result, Drop):
                _reject(self.summary, self.rejects, result)
            elif self.config.dedupe and result.digest in self.digests:
                self.summary.duplicates += 1
                _reject(self.summary, self.rejects, Drop(task.task_id, "duplicate"))
            else:
                self.digests.add(result.digest)
                if self.config.max_chars is not None and result.n_chars > self.config.max_chars:
                    _reject(self.summary, self.rejects, Drop(task.task_id, "too long (characters)",
                                                             f"{result.n_chars} > {self.config.max_chars}"))
                else:
                    kept.append((task, result))
        rendered = self.renderer.render([(t.messages, t.tools) for _, t in kept]) if self.renderer else None
        for i, (task, trajectory) in enumerate(kept):
            if rendered is not None and not self._token_rows(task, rendered[i]):
                continue
            self._data_row(task, trajectory)

    def _token_rows(self, task: Task, result) -> bool:
        summary, limit = self.summary, self.config.max_tokens
        if result.unstable:
            summary.unstable[result.unstable] += 1
        examples = [e for e in result.examples if limit is None or len(e.input_ids) <= limit]
        too_long = len(result.examples) - len(examples)
        if not examples:
            reason = "too many tokens" if too_long else result.dropped[0]
            _reject(summary, self.rejects, Drop(task.task_id, reason))
            return False
        if result.unstable:
            summary.turns_dropped.update(result.dropped)
            if too_long:
                summary.turns_dropped["too many tokens"] += too_long
        for example in examples:
            summary.tokens.update({name: example.count(code) for code, name in enumerate(SOURCES)})
            example_id = task.task_id if example.turn is None else f"{task.task_id}/{example.turn}"
            self.tokens.add((example_id, task.task_id, example))
        summary.token_examples += len(examples)
        summary.longest_tokens = max(summary.longest_tokens, *(len(e.input_ids) for e in examples))
        return True

    def _data_row(self, task: Task, trajectory: Trajectory) -> None:
        messages = trajectory.messages
        verifier, model = self.about[task.task_id]
        self.data.add({
            "task_id": task.task_id, "session_id": task.session_id, "messages": list(messages),
            "tools": orjson.dumps(trajectory.tools).decode(), "verifier": verifier,
            "model": model, "n_turns": sum(m["role"] == "assistant" for m in messages),
            "n_tool_calls": sum(len(m.get("tool_calls", ())) for m in messages)})
        self.summary.examples += 1
        self.summary.left_out.update(dict(trajectory.left_out))
        if task.source_path not in self.sessions:
            self.sessions.add(task.source_path)
            self.paths.append(task.source_path)


class _Shards:
    """Rows → ``DIR/PREFIX-00000-of-0000N.parquet`` files of at most ``rows`` rows each."""

    def __init__(self, directory: Path, prefix: str, to_table: Callable[[list], pa.Table], rows: int):
        self.directory, self.prefix, self.to_table, self.rows = directory, prefix, to_table, max(1, rows)
        self.pending: list = []
        self.written: list[Path] = []
        self.redactor: Redactor | None = None  # the store's, once it is open
        directory.mkdir(parents=True)

    def add(self, row) -> None:
        self.pending.append(row)
        if len(self.pending) >= self.rows:
            self._flush()

    def _flush(self) -> None:
        path = self.directory / f"{self.prefix}-{len(self.written):05d}.parquet"
        write_table(self.to_table(self.pending), path, self.redactor)
        self.written.append(path)
        self.pending = []

    def close(self) -> int:
        """Writes the last shard (an empty one if there was no row) and names them ``-of-N``."""
        if self.pending or not self.written:
            self._flush()
        for i, path in enumerate(self.written):
            path.rename(self.directory / f"{self.prefix}-{i:05d}-of-{len(self.written):05d}.parquet")
        return len(self.written)


def token_table(rows: list[tuple]) -> pa.Table:
    """(example_id, task_id, TokenizedExample) rows as a TOKENS table, built column-wise."""
    examples = [example for _, _, example in rows]
    lengths = np.array([len(e.input_ids) for e in examples], dtype=np.int64)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    codes = np.concatenate([e.source for e in examples]) if examples else np.zeros(0, np.uint8)

    def lists(values: pa.Array) -> pa.Array:
        return pa.ListArray.from_arrays(offsets, values)

    ids = np.concatenate([np.asarray(e.input_ids, dtype=np.int32) for e in examples]) if examples else []
    weights = np.concatenate([e.loss_weights for e in examples]) if examples else np.zeros(0, np.float32)
    source = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int8)), pa.array(SOURCES)).cast(pa.string())
    counts = {code: np.array([e.count(code) for e in examples], dtype=np.int32) for code in (ACTION, OBSERVATION)}
    return pa.Table.from_arrays([
        pa.array([r[0] for r in rows], pa.string()), pa.array([r[1] for r in rows], pa.string()),
        pa.array([e.turn for e in examples], pa.int32()), lists(pa.array(ids, pa.int32())),
        lists(pa.array(weights, pa.float32())), lists(source), lists(pa.array((codes == ACTION).astype(np.int8))),
        pa.array(lengths.astype(np.int32)), pa.array(counts[ACTION]), pa.array(counts[OBSERVATION])],
        schema=TOKENS)
