"""Canonical records of the verify stage: one verification per verifier candidate."""

from __future__ import annotations

from logmine.store.tables import VERIFICATIONS  # noqa: F401 - this stage's table

STATUSES = ("validated", "passes_at_start", "fails_after", "unscored", "not_rebuilt")

