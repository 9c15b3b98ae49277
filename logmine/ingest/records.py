"""Canonical records written by ingest: the event vocabulary, the ``files`` state row and
:class:`Event`, the typed ``events`` row every later stage reads.

The table schemas (``sessions``, ``events``, ``quarantine``) live in :mod:`logmine.store.tables`,
below the store; with the JSON Schemas in ``schemas/`` they are the contract of the ``ingest`` stage.
Ingest builds events column by column (:class:`EventRows`: it produces millions of them); segment
and export read them back as :class:`Event` records, whose :meth:`Event.from_row` is the one place
``events.arguments`` is decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime
from operator import attrgetter

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from logmine.patch import FileOp
from logmine.store.rows import table_of_columns, without_pandas_lookup
from logmine.store.tables import EVENTS, QUARANTINE, SESSIONS, TS

#: Event kinds. The first eleven are the canonical ones; ``session_meta`` marks the header line
#: of a rollout (its content goes to ``sessions``), ``other`` keeps anything unrecognised verbatim.
EVENT_KINDS = (
    "user_message",
    "assistant_message",
    "reasoning",
    "tool_call",
    "tool_output",
    "patch",
    "turn_context",
    "compaction",
    "aborted",
    "token_usage",
    "other",
    "session_meta",
)

FORMATS = ("g0", "g1", "g2", "history", "claude")


TABLES: dict[str, pa.Schema] = {"sessions": SESSIONS, "events": EVENTS, "quarantine": QUARANTINE}


@dataclass
class FileRecord:
    """A source file as the catalog's ``files`` table knows it (columns in this order)."""

    source_path: str
    file_gen: int
    format: str | None
    size: int
    mtime_ns: int
    consumed: int  # bytes read and turned into rows; the rest waits (an incomplete last line)
    content_hash: str | None  # xxh3-128 of the ``consumed`` content bytes: unchanged means the file only grew
    duplicate_of: str | None  # format 'duplicate': the file with the same content whose rows stand for it
    state: str | None  # the mapper's FileState as JSON, to resume the file
    pending_bytes: int = 0
    error: str | None = None

    def row(self) -> tuple:
        return _FILE_ROW(self)  # not dataclasses.astuple, which deep-copies every value: a fifth of a second per 1,000 files


_FILE_ROW = attrgetter(*(f.name for f in fields(FileRecord)))

EXCERPT_CHARS = 240


class EventRows:
    """A file's events, column by column: the columns every event sets (:data:`DENSE`) as one tuple
    per event, and each other column as (row, value) pairs for the rows that set it.

    Most of an event's 31 columns are null; building a dict per event and reading every column back
    out of every dict cost a fifth of ingest. :meth:`table` makes the Arrow table directly.
    """

    DENSE = ("session_id", "seq", "line_no", "byte_offset", "ts", "turn_id", "kind", "record_type",
             "source_path", "format", "raw", "file_gen", "is_injected")
    _AT = {name: i for i, name in enumerate(DENSE)}

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.sparse: dict[str, list[tuple[int, object]]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def append(self, values: tuple, fields: dict) -> None:
        """One event: ``values`` in :data:`DENSE` order, and other columns in ``fields`` (a dense
        column named there overrides its value in ``values``; None is the default of the rest)."""
        row = len(self.rows)
        dense, sparse = self._AT, self.sparse
        for name, value in fields.items():
            if (at := dense.get(name)) is not None:
                values = values[:at] + (value,) + values[at + 1:]
            elif value is not None:
                if (pairs := sparse.get(name)) is None:
                    sparse[name] = [(row, value)]
                else:
                    pairs.append((row, value))
        self.rows.append(values)

    def set_missing(self, name: str, value) -> None:
        """Give ``value`` to every event whose dense column ``name`` is empty."""
        at = self._AT[name]
        self.rows = [row if row[at] else (*row[:at], value, *row[at + 1:]) for row in self.rows]

    def first(self, name: str):
        """The first non-null value of the dense column ``name``, else None."""
        at = self._AT[name]
        return next((row[at] for row in self.rows if row[at] is not None), None)

    def column(self, name: str) -> list:
        """The values of the dense column ``name``, one per event."""
        at = self._AT[name]
        return [row[at] for row in self.rows]

    def truncate(self, rows: int) -> None:
        """Drop the events from row ``rows`` on (a line that turned out malformed)."""
        del self.rows[rows:]
        for name, pairs in list(self.sparse.items()):
            kept = [pair for pair in pairs if pair[0] < rows]
            if kept:
                self.sparse[name] = kept
            else:
                del self.sparse[name]

    def table(self) -> pa.Table:
        """The events as a table of the ``events`` schema."""
        dense = dict(zip(self.DENSE, zip(*self.rows))) if self.rows else {}
        columns = []
        for name in EVENTS.names:
            if name == "ts":
                columns.append(ts_array(dense.get(name, ())))
            elif name in self._AT:
                columns.append(dense.get(name, ()))
            elif name not in self.sparse:  # most columns of most files: no event sets them
                columns.append(pa.nulls(len(self.rows), EVENTS.field(name).type))
            else:
                values = [None] * len(self.rows)
                for row, value in self.sparse[name]:
                    values[row] = value
                columns.append(values)
        return table_of_columns(columns, EVENTS)


GHOST_SNAPSHOT = "response_item/ghost_snapshot"


@dataclass(frozen=True, slots=True)
class Event:
    """One row of ``events``, typed (``store/tables.EVENTS`` names and explains the columns).

    Readers select the columns they need: one not selected is None here. ``args`` is ``arguments``
    decoded: the JSON object a function call was given, or a patch event's file operation; None for a
    freeform (custom tool) input, for arguments that are not a JSON object, and without arguments.
    """

    seq: int
    kind: str
    record_type: str
    session_id: str | None = None
    line_no: int | None = None
    byte_offset: int | None = None
    ts: datetime | None = None
    turn_id: str | None = None
    role: str | None = None
    text: str | None = None
    tool_name: str | None = None
    call_id: str | None = None
    arguments: str | None = None  # as stored: JSON text, or a custom tool's raw input
    command: str | None = None
    workdir: str | None = None
    exit_code: int | None = None
    duration_s: float | None = None
    exec_session_id: str | None = None
    status: str | None = None
    is_injected: bool = False
    injected_kind: str | None = None
    copied_from: str | None = None
    patch_op: str | None = None
    path: str | None = None
    move_path: str | None = None
    model: str | None = None
    ghost_commit: str | None = None
    ghost_untracked: tuple[str, ...] = ()
    source_path: str | None = None
    format: str | None = None
    raw: str | None = None
    file_gen: int | None = None
    args: dict | None = None  # ``arguments`` decoded (see the class docstring)

    @property
    def freeform(self) -> bool:
        """A custom tool's call: ``arguments`` is the raw input the model wrote, not JSON."""
        return _freeform(self.kind, self.record_type)

    @property
    def file_op(self) -> FileOp:
        """A patch event's file operation (ingest stores it in ``arguments``)."""
        if self.kind != "patch" or self.args is None:
            raise ValueError(f"event {self.seq} ({self.kind}) holds no file operation")
        return FileOp.from_dict(self.args)

    @classmethod
    def from_row(cls, row: dict) -> Event:
        """From an ``events`` row as a query returns it (at least ``seq``, ``kind``, ``record_type``;
        columns that are not the table's are ignored). A ghost snapshot in a part written before
        the ``ghost_commit`` column existed reads it from ``raw``, when the query selected that."""
        values = {name: value for name, value in row.items() if name in _EVENT_COLUMNS}
        untracked = values.pop("ghost_untracked", None)
        if untracked:
            values["ghost_untracked"] = tuple(untracked)
        if values.get("is_injected") is None:
            values.pop("is_injected", None)
        kind, record_type = values["kind"], values["record_type"]
        if values.get("arguments") and not _freeform(kind, record_type):
            values["args"] = _json_object(values["arguments"])
        if values.get("raw") and values.get("ghost_commit") is None and record_type == GHOST_SNAPSHOT:
            line = orjson.loads(values["raw"])
            payload = line.get("payload") if line.get("type") == "response_item" else line
            commit, untracked = ghost_fields(payload.get("ghost_commit") if isinstance(payload, dict) else None)
            values["ghost_commit"], values["ghost_untracked"] = commit, tuple(untracked or ())
        return cls(**values)


def _freeform(kind: str, record_type: str) -> bool:
    return kind == "tool_call" and record_type.endswith("custom_tool_call")


_EVENT_COLUMNS = frozenset(EVENTS.names)


def _json_object(text: str | None) -> dict | None:
    if not text:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def ghost_fields(ghost) -> tuple[str | None, list[str] | None]:
    """A ``ghost_snapshot`` response item's commit id and the files it found untracked, from its
    ``ghost_commit`` (``.id``, ``.preexisting_untracked_files``); None for what it lacks."""
    if not isinstance(ghost, dict):
        return None, None
    commit = ghost.get("id")
    files = ghost.get("preexisting_untracked_files")
    untracked = [f for f in files if isinstance(f, str)] if isinstance(files, list) else None
    return (commit if isinstance(commit, str) else None), untracked


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens a Codex thread has used so far, as Codex counts them: ``input`` includes
    ``cached_input``, ``output`` includes ``reasoning_output``."""

    input: int = 0
    cached_input: int = 0
    output: int = 0
    reasoning_output: int = 0

    def __sub__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.input - other.input, self.cached_input - other.cached_input,
                          self.output - other.output, self.reasoning_output - other.reasoning_output)


def thread_token_usage(raw: str | None) -> TokenUsage | None:
    """The running total in a ``token_usage`` event's source line (``raw``): a ``token_count``
    event's ``info.total_token_usage``, or a ``token_usage_record``'s ``thread_token_usage``. None
    when the line holds no total (``info: null``, a rate-limit update) or is not JSON."""
    try:
        line = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return None
    payload = line.get("payload", line) if isinstance(line, dict) else None
    if not isinstance(payload, dict):
        return None
    info = payload.get("info")
    total = info.get("total_token_usage") if isinstance(info, dict) else payload.get("thread_token_usage")
    if not isinstance(total, dict):
        return None
    counts = [total.get(name) for name in ("input_tokens", "cached_input_tokens", "output_tokens",
                                           "reasoning_output_tokens")]
    return TokenUsage(*(n if isinstance(n, int) and not isinstance(n, bool) else 0 for n in counts))


def parse_ts(value) -> datetime | None:
    """An ISO timestamp (a zone-less one is UTC), else None."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


_NS = pa.timestamp("ns", tz="UTC")


def ts_array(stamps) -> pa.Array:
    """The ``ts`` column from the records' timestamp texts, as :func:`parse_ts` reads each one.

    Arrow parses the whole column at once (the usual ``…T12:34:56.789Z``); where it cannot (a stamp
    without a zone, out of its range, not a timestamp) each value is parsed on its own. Converting
    Python datetimes to Arrow cost a tenth of a worker's time, parsing the texts here a sixth of that.
    """
    without_pandas_lookup()
    texts = pa.array(stamps, pa.string())
    try:
        return pc.floor_temporal(texts.cast(_NS), unit="millisecond").cast(TS)  # ms, as for a datetime
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([parse_ts(s) for s in stamps], TS)
