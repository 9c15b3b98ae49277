"""Canonical records of the segment stage: tasks and their verifier candidates.

JSON-valued columns (``start_state``, ``runs``, ``files``, ``followups``) hold JSON text so the
tables stay flat and readable from any Parquet reader; their shapes are documented in
``schemas/tasks.schema.json`` and ``schemas/verifiers.schema.json`` and in ``docs/segment.md``.
"""

from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("ms", tz="UTC")

VERIFIER_KINDS = ("test_command", "check_command", "file_diff")
TMAX_KINDS = ("test_pass", "exact_text", "metric_threshold")

TASKS = pa.schema(
    [
        ("task_id", pa.string()),
        ("session_id", pa.string()),
        ("source_path", pa.string()),
        ("index", pa.int64()),  # 0-based position of the task in its session
        ("prompt", pa.string()),
        ("followups", pa.string()),  # JSON list of follow-up messages folded into the task
        ("first_seq", pa.int64()),
        ("last_seq", pa.int64()),
        ("n_tool_calls", pa.int64()),
        ("n_failed_commands", pa.int64()),
        ("files_touched", pa.list_(pa.string())),
        ("started_at", TS),
        ("ended_at", TS),
        ("duration_s", pa.float64()),
        ("aborted", pa.bool_()),
        ("final_message", pa.string()),
        ("has_final_message", pa.bool_()),
        ("cwd", pa.string()),
        ("start_state", pa.string()),  # JSON recipe to rebuild the workspace as the task began
        ("rebuildable", pa.bool_()),
        ("start_state_reason", pa.string()),  # why not rebuildable, when it is not
        ("n_candidates", pa.int64()),
        ("seg_gen", pa.int64()),
    ]
)

VERIFIERS = pa.schema(
    [
        ("verifier_id", pa.string()),
        ("task_id", pa.string()),
        ("session_id", pa.string()),
        ("kind", pa.string()),  # test_command | check_command | file_diff
        ("mode", pa.string()),  # file_diff: exact | hunks
        ("command", pa.string()),  # command kinds: the command as last run
        ("workdir", pa.string()),
        ("runs", pa.string()),  # JSON [{seq, exit_code}] for command kinds, in order
        ("ran_after_last_edit", pa.bool_()),
        ("fail_to_pass", pa.bool_()),
        ("files", pa.string()),  # JSON: file_diff: the net change per file; test_command: test files
        ("incomplete", pa.bool_()),
        ("strength", pa.float64()),
        ("tmax_kind", pa.string()),
        ("seg_gen", pa.int64()),
    ]
)
