"""Every table of the store, its view and its liveness rule, in one place.

The schemas live in :mod:`logmine.store.tables` (no stage is imported here); this module registers
them with the store: which generation column a table's rows carry, which state table says which generations are
live, and the derived views built on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from logmine.store import tables as t

CATALOG = "catalog.duckdb"  # the DuckDB file in a store's directory
#: Where a store lives when neither ``--store``, ``$LOGMINE_STORE`` nor a pipeline file says otherwise
#: (``logmine/pipelines/codex-default.toml`` names the same directory; a test keeps them equal).
DEFAULT_STORE = Path("logmine-store")


@dataclass(frozen=True, slots=True)
class TableSpec:
    """A stored table: its schema, the view exposing it, and which of its rows are live.

    ``redacted_at_source``: the function (dotted name) that redacts every text the table's rows are
    made of before they are built; :meth:`Store.commit <logmine.store.Store.commit>` passes every
    table without one through the redaction gate (``tests/ingest/test_redacted_at_source.py``
    drives every path of the function named).
    """

    schema: pa.Schema
    gen_column: str
    live_gens: str  # SQL returning the live generations
    view: str
    redacted_at_source: str | None = None


# Ingest redacts each source line before parsing it, in batches; redacting its tables again at
# commit would cost as much CPU again as all of ingest (fixture corpus: 0.06 s per MB of input for
# that second pass, 0.058 s per MB for the whole ingest).
_INGEST_REDACTS = "logmine.ingest.source.read_file"

TABLES: dict[str, TableSpec] = {
    # sessions is exposed raw; the public `sessions` view adds models and history sessions
    "sessions": TableSpec(t.SESSIONS, "file_gen", "SELECT file_gen FROM files", "_sessions_raw", _INGEST_REDACTS),
    "events": TableSpec(t.EVENTS, "file_gen", "SELECT file_gen FROM files", "events", _INGEST_REDACTS),
    "quarantine": TableSpec(t.QUARANTINE, "file_gen", "SELECT file_gen FROM files", "quarantine", _INGEST_REDACTS),
    "tasks": TableSpec(t.TASKS, "seg_gen", "SELECT seg_gen FROM segmented", "tasks"),
    # verifiers is exposed raw; the public `verifiers` view adds each candidate's verification status
    "verifiers": TableSpec(t.VERIFIERS, "seg_gen", "SELECT seg_gen FROM segmented", "_verifiers_raw"),
    "verifications": TableSpec(t.VERIFICATIONS, "verify_gen", "SELECT verify_gen FROM verified", "verifications"),
    "environments": TableSpec(t.ENVIRONMENTS, "verify_gen", "SELECT verify_gen FROM verified", "environments"),
}

STATE_DDL = (
    # ingest: one row per source file: its generation, how far it was read, the mapper state to resume
    """CREATE TABLE IF NOT EXISTS files (
        source_path VARCHAR PRIMARY KEY, file_gen BIGINT, format VARCHAR, size BIGINT, mtime_ns BIGINT,
        consumed BIGINT, content_hash VARCHAR, duplicate_of VARCHAR, state VARCHAR, pending_bytes BIGINT,
        error VARCHAR)""",
    # segment: which state of each source file its tasks were cut from (re-cut when it changes)
    """CREATE TABLE IF NOT EXISTS segmented (
        source_path VARCHAR PRIMARY KEY, file_gen BIGINT, consumed BIGINT, seg_gen BIGINT, n_tasks BIGINT,
        no_task_reason VARCHAR)""",
    # verify: which segmentation of each task was verified, and whether its workspace was rebuilt
    # (inputs: a fingerprint of what decided a not_rebuilt/unscored task, so a change redoes it)
    """CREATE TABLE IF NOT EXISTS verified (
        task_id VARCHAR PRIMARY KEY, seg_gen BIGINT, verify_gen BIGINT, rebuilt BOOLEAN, reason VARCHAR,
        inputs VARCHAR)""",
)

#: The free-text columns of the state tables (reasons, errors), redacted at commit like the tables;
#: keys, hashes and fingerprints are compared with what a stage computes, so they are kept as given.
STATE_TEXT: dict[str, tuple[str, ...]] = {
    "files": ("error",), "segmented": ("no_task_reason",), "verified": ("reason",),
}

#: How the units whose rows sat in a lost part are marked for redoing, per generation column (the
#: parameter is the part's list of generations). Ingest re-reads a file whose row has an error (the
#: rows of its other parts stay visible until then); segment re-cuts, and verify re-verifies, a unit
#: that has no state row.
STALE_ERROR = "stale: a store part holding its rows was lost"
STALE_SQL = {
    "file_gen": f"UPDATE files SET error = '{STALE_ERROR}' WHERE file_gen IN (SELECT unnest(?::BIGINT[]))",
    "seg_gen": "DELETE FROM segmented WHERE seg_gen IN (SELECT unnest(?::BIGINT[]))",
    "verify_gen": "DELETE FROM verified WHERE verify_gen IN (SELECT unnest(?::BIGINT[]))",
}


def migrate_state(con) -> None:
    """Bring an older catalog's state tables up to :data:`STATE_DDL`.

    ``verified.inputs`` (what decided the task: repository mapping, search roots, environment mode)
    is added empty, so a task that was not rebuilt or unscored before it existed is retried once.

    ``files.head_hash``/``tail_hash`` (sha1 of the first and last 4 KiB read) became ``content_hash``
    (xxh3-128 of every byte read) and ``duplicate_of``; the old hashes are dropped, so a file whose
    size or mtime changes is compared in full and re-read.
    """
    columns = {c for (c,) in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = 'files'").fetchall()}
    verified = {c for (c,) in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = 'verified'").fetchall()}
    if "inputs" not in verified:  # the fingerprint of what decided each task (added for retries)
        con.execute("ALTER TABLE verified ADD COLUMN inputs VARCHAR")
    if "head_hash" in columns:
        con.execute("ALTER TABLE files RENAME COLUMN head_hash TO content_hash")
        con.execute("ALTER TABLE files RENAME COLUMN tail_hash TO duplicate_of")
        con.execute("UPDATE files SET content_hash = NULL, duplicate_of = NULL")


# A session's model is named by its turn_context lines; history.jsonl prompts make sessions of
# their own (format 'history') so that prompts whose rollout is gone still have a session row.
SESSIONS_VIEW = """
CREATE OR REPLACE VIEW sessions AS
WITH models AS (
    SELECT source_path, arg_min(model, seq) AS model FROM events
    WHERE kind = 'turn_context' AND model IS NOT NULL GROUP BY source_path),
hist AS (
    SELECT session_id, source_path, 'history' AS format, min(ts) AS started_at, min(file_gen) AS file_gen
    FROM events WHERE format = 'history' GROUP BY session_id, source_path)
SELECT s.* REPLACE (coalesce(s.model, m.model) AS model)
FROM _sessions_raw s LEFT JOIN models m USING (source_path)
UNION ALL BY NAME
SELECT * FROM hist
"""

# One row per tool call, paired with its output (by call_id within the file). exec_command_end /
# item_completed events fill in exit codes the output text lacks. A unified-exec command still running
# at its first output ("Process running with session ID N") gets its exit code from the first
# write_stdin poll that saw it exit; a poll belongs to the latest command before it that started a
# process with that session id (ids are reused within a file). `failed`: the exit code is non-zero, or
# (no code) the output or end event says the command failed; false on exit 0; null when unknown.
TOOL_CALLS_VIEW = """
CREATE OR REPLACE VIEW tool_calls AS
WITH calls AS (SELECT * FROM events WHERE kind = 'tool_call'),
outs AS (
    SELECT * FROM events WHERE kind = 'tool_output' AND record_type NOT LIKE 'event_msg/%'
    QUALIFY row_number() OVER (PARTITION BY source_path, call_id ORDER BY seq) = 1),
ends AS (
    SELECT source_path, call_id, arg_min(exit_code, seq) FILTER (WHERE exit_code IS NOT NULL) AS exit_code,
           arg_min(duration_s, seq) FILTER (WHERE exit_code IS NOT NULL) AS duration_s,
           bool_or(status = 'failed') AS failed
    FROM events WHERE kind = 'tool_output' AND record_type LIKE 'event_msg/%'
      AND (exit_code IS NOT NULL OR status = 'failed')
    GROUP BY ALL),
started AS (
    SELECT c.source_path, c.seq, o.exec_session_id
    FROM calls c JOIN outs o ON o.source_path = c.source_path AND o.call_id = c.call_id
    WHERE c.tool_name <> 'write_stdin' AND o.exec_session_id IS NOT NULL),
poll_exits AS (
    SELECT c.source_path, c.seq, c.exec_session_id, o.seq AS output_seq, o.exit_code
    FROM calls c JOIN outs o ON o.source_path = c.source_path AND o.call_id = c.call_id
    WHERE c.tool_name = 'write_stdin' AND o.exit_code IS NOT NULL),
polls AS (
    SELECT s.source_path, s.seq AS started_seq, arg_min(p.exit_code, p.output_seq) AS exit_code
    FROM poll_exits p ASOF JOIN started s
      ON s.source_path = p.source_path AND s.exec_session_id = p.exec_session_id AND p.seq > s.seq
    GROUP BY ALL),
joined AS (
    SELECT c.*, o.seq AS output_seq, o.text AS output, o.status AS output_status,
           coalesce(o.exit_code, e.exit_code, p.exit_code) AS code,
           coalesce(o.duration_s, e.duration_s) AS duration, o.exec_session_id AS output_session, e.failed AS end_failed
    FROM calls c
    LEFT JOIN outs o ON o.source_path = c.source_path AND o.call_id = c.call_id
    LEFT JOIN ends e ON e.source_path = c.source_path AND e.call_id = c.call_id
    LEFT JOIN polls p ON p.source_path = c.source_path AND p.started_seq = c.seq)
SELECT session_id, source_path, seq, ts, turn_id, call_id, tool_name, command, workdir,
       arguments, status AS call_status, output_seq, output, code AS exit_code, duration AS duration_s,
       CASE WHEN code IS NOT NULL THEN code <> 0 WHEN output_status = 'failed' OR end_failed THEN true END AS failed,
       output_session AS exec_session_id,
       output_seq IS NOT NULL AS has_output,
       tool_name <> 'web_search' AND output_seq IS NULL AS interrupted
FROM joined
"""

# A candidate's verification counts only if it verified the candidate's current segmentation.
VERIFIERS_VIEW = """
CREATE OR REPLACE VIEW verifiers AS
SELECT v.*, r.status, r.status_reason, r.before_passed, r.after_passed, r.before_exit_code, r.after_exit_code,
       r.before_s, r.after_s, r.before_excerpt, r.after_excerpt, r.env_mode, r.env_reason,
       r.test_runner, r.graded_by, r.tests_fail_to_pass, r.tests_pass_to_pass
FROM _verifiers_raw v LEFT JOIN verifications r ON r.verifier_id = v.verifier_id AND r.seg_gen = v.seg_gen
"""

VIEWS = (SESSIONS_VIEW, TOOL_CALLS_VIEW, VERIFIERS_VIEW)
