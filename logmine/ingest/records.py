"""Canonical records written by ingest: one pyarrow schema per table.

Every later stage reads these tables (through the DuckDB catalog), so the schemas here and the JSON
Schemas in ``schemas/`` are the contract of the ``ingest`` stage. Rows are plain dicts keyed by
column name: ingest produces millions of them and a dict per row is the cheapest form pyarrow takes.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import pyarrow as pa

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

TS = pa.timestamp("ms", tz="UTC")

SESSIONS = pa.schema(
    [
        ("session_id", pa.string()),
        ("source_path", pa.string()),
        ("format", pa.string()),
        ("cli_version", pa.string()),
        ("originator", pa.string()),
        ("source", pa.string()),  # "cli", "exec", "vscode", "subagent:review", ...
        ("parent_session_id", pa.string()),
        ("forked_from_id", pa.string()),
        ("model", pa.string()),  # from session_meta when present; the view fills it from turn_context
        ("model_provider", pa.string()),
        ("cwd", pa.string()),
        ("git_commit", pa.string()),
        ("git_branch", pa.string()),
        ("git_repo_url", pa.string()),
        ("started_at", TS),
        ("instructions", pa.string()),
        ("file_gen", pa.int64()),
    ]
)

EVENTS = pa.schema(
    [
        ("session_id", pa.string()),
        ("seq", pa.int64()),  # order within the session file, dense from 0
        ("line_no", pa.int64()),  # 1-based line in the source (G0: item index + 1)
        ("byte_offset", pa.int64()),
        ("ts", TS),
        ("turn_id", pa.string()),
        ("kind", pa.string()),
        ("record_type", pa.string()),  # original line kind, e.g. "response_item/function_call"
        ("role", pa.string()),
        ("text", pa.string()),
        ("tool_name", pa.string()),
        ("call_id", pa.string()),
        ("arguments", pa.string()),  # JSON text (function calls) or raw input (custom tools)
        ("command", pa.string()),  # shell command as one string, for shell-like tools
        ("workdir", pa.string()),
        ("exit_code", pa.int64()),
        ("duration_s", pa.float64()),
        ("exec_session_id", pa.string()),  # unified exec process still running / written to
        ("status", pa.string()),
        ("is_injected", pa.bool_()),
        ("injected_kind", pa.string()),
        ("patch_op", pa.string()),
        ("path", pa.string()),
        ("move_path", pa.string()),
        ("model", pa.string()),
        ("source_path", pa.string()),
        ("format", pa.string()),
        ("raw", pa.string()),
        ("file_gen", pa.int64()),
    ]
)

QUARANTINE = pa.schema(
    [
        ("source_path", pa.string()),
        ("line_no", pa.int64()),  # null for a whole-file problem
        ("byte_offset", pa.int64()),
        ("reason", pa.string()),
        ("excerpt", pa.string()),
        ("file_gen", pa.int64()),
    ]
)

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
    head_hash: str | None  # sha1 of the first and last 4 KiB read: unchanged means the file only grew
    tail_hash: str | None
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
