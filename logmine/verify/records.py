"""Canonical records of the verify stage: one verification per verifier candidate, one environment per task."""

from __future__ import annotations

from logmine.store.tables import ENVIRONMENTS, VERIFICATIONS  # noqa: F401 - this stage's tables

STATUSES = ("validated", "passes_at_start", "fails_after", "unscored", "not_rebuilt")

