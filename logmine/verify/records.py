"""Canonical records of the verify stage: one verification per verifier candidate."""

from __future__ import annotations

import pyarrow as pa

STATUSES = ("validated", "passes_at_start", "fails_after", "unscored", "not_rebuilt")

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
        ("verify_gen", pa.int64()),
    ]
)
