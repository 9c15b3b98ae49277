"""Canonical records of the segment stage: tasks and their verifier candidates.

JSON-valued columns (``start_state``, ``runs``, ``files``, ``followups``) hold JSON text so the
tables stay flat and readable from any Parquet reader; their shapes are documented in
``schemas/tasks.schema.json`` and ``schemas/verifiers.schema.json`` and in ``docs/segment.md``.
"""

from __future__ import annotations

from logmine.store.tables import TASKS, VERIFIERS  # noqa: F401 - this stage's tables

VERIFIER_KINDS = ("test_command", "check_command", "file_diff")
TMAX_KINDS = ("test_pass", "exact_text", "metric_threshold")

