"""The pyarrow schema of every stored table, below the store and every stage.

Each stage writes rows of these shapes (its ``records`` module re-exports the ones it owns and adds
its typed records); the store's catalog registers them. The JSON Schemas in ``schemas/`` mirror them
(``tests/test_schemas.py`` keeps the two in step). JSON-valued columns (``start_state``, ``runs``,
``files``, ``followups``) hold JSON text so the tables stay flat and readable from any Parquet reader;
:mod:`logmine.segment.records` decodes them, in one place (``events.arguments``:
:meth:`logmine.ingest.records.Event.from_row`).
"""

from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("ms", tz="UTC")

# -- ingest ----------------------------------------------------------------------------------------

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
        ("copied_from", pa.string()),  # a forked session's copy of its parent's history: the parent's id
        ("patch_op", pa.string()),
        ("path", pa.string()),
        ("move_path", pa.string()),
        ("model", pa.string()),
        ("ghost_commit", pa.string()),  # a ghost_snapshot line: the commit Codex made of the work tree
        ("ghost_untracked", pa.list_(pa.string())),  # and the files it found untracked there
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

# -- segment ---------------------------------------------------------------------------------------

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

# -- verify ----------------------------------------------------------------------------------------

TEST_OUTCOMES = pa.list_(pa.struct([("test_id", pa.string()), ("status", pa.string()), ("duration_s", pa.float64())]))

VERIFICATIONS = pa.schema(
    [
        ("verifier_id", pa.string()),
        ("task_id", pa.string()),
        ("seg_gen", pa.int64()),  # the segmentation the candidate came from
        ("status", pa.string()),
        ("status_reason", pa.string()),
        ("before_passed", pa.bool_()),  # None: unscored or not run
        ("after_passed", pa.bool_()),
        ("before_exit_code", pa.int64()),
        ("after_exit_code", pa.int64()),
        ("before_s", pa.float64()),
        ("after_s", pa.float64()),
        ("before_excerpt", pa.string()),
        ("after_excerpt", pa.string()),
        ("env_mode", pa.string()),  # how the task's environment was provided: host | built | none
        ("env_reason", pa.string()),  # why that way (or why none could be)
        ("test_runner", pa.string()),  # the runner that reported each test (pytest, vitest, ...), or null
        ("before_tests", TEST_OUTCOMES),  # each test's outcome on the start state (null: not reported)
        ("after_tests", TEST_OUTCOMES),  # and after the replay
        ("tests_fail_to_pass", pa.list_(pa.string())),  # tests failing (or absent) at the start that pass after
        ("tests_pass_to_pass", pa.list_(pa.string())),  # tests passing at the start that still pass after
        ("graded_by", pa.string()),  # tests | exit_code | files: what the verdict rests on
        ("node", pa.string()),  # the executor's node that verified the task (docs/distributed.md)
        ("worker", pa.string()),  # and its worker there
        ("verify_gen", pa.int64()),
    ]
)

# One row per verified task: the software environment its start state needs and how verify provided it.
ENVIRONMENTS = pa.schema(
    [
        ("task_id", pa.string()),
        ("seg_gen", pa.int64()),
        ("languages", pa.list_(pa.string())),
        ("manifests", pa.list_(pa.string())),  # paths relative to the repository root
        ("tools", pa.list_(pa.string())),
        ("interpreters", pa.list_(pa.string())),
        ("venvs", pa.list_(pa.string())),
        ("runners", pa.list_(pa.string())),
        ("versions", pa.string()),  # JSON {tool: version or constraint}
        ("dirs", pa.list_(pa.string())),  # directories the commands ran in, relative to the repository root
        ("mode", pa.string()),  # host | built | none | unavailable
        ("mode_reason", pa.string()),
        ("recipe_key", pa.string()),  # built: the cache key of the install recipe
        ("base_image", pa.string()),
        ("binds", pa.list_(pa.string())),  # host: "HOST -> INSIDE", read-only
        ("notes", pa.list_(pa.string())),  # refused binds, unresolved tools, tried modes
        ("provide_s", pa.float64()),  # seconds to provide it (a build, or 0 for a cached one)
        ("cached", pa.bool_()),
        ("verify_gen", pa.int64()),
    ]
)
