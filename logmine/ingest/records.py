"""Canonical records written by ingest: the event vocabulary and the ``files`` state row.

The table schemas (``sessions``, ``events``, ``quarantine``) live in :mod:`logmine.store.tables`,
below the store; with the JSON Schemas in ``schemas/`` they are the contract of the ``ingest`` stage. Rows are plain dicts keyed by
column name: ingest produces millions of them and a dict per row is the cheapest form pyarrow takes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime
from operator import attrgetter

import pyarrow as pa
import pyarrow.compute as pc

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

FORMATS = ("g0", "g1", "g2", "history")


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

    Most of an event's 29 columns are null; building a dict per event and reading every column back
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
