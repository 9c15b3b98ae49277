"""Canonical records written by ingest: the event vocabulary and the ``files`` state row.

The table schemas (``sessions``, ``events``, ``quarantine``) live in :mod:`logmine.store.tables`,
below the store; with the JSON Schemas in ``schemas/`` they are the contract of the ``ingest`` stage. Rows are plain dicts keyed by
column name: ingest produces millions of them and a dict per row is the cheapest form pyarrow takes.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import pyarrow as pa

from logmine.store.tables import EVENTS, QUARANTINE, SESSIONS

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
        return astuple(self)

EVENT_COLUMNS = tuple(EVENTS.names)
EXCERPT_CHARS = 240


def empty_event(**fields) -> dict:
    """An events row with every column present (None where not given)."""
    row = dict.fromkeys(EVENT_COLUMNS)
    row.update(fields)
    return row
