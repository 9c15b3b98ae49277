"""Per-test outcomes of one test run, and grading by test identity.

A :class:`TestReport` is what one run of a test command said about each test it ran. Two reports of
the same command, one before a change and one after it, name the tests the change fixed
(:func:`fail_to_pass`) and the tests it left passing (:func:`pass_to_pass`), SWE-bench's FAIL_TO_PASS
and PASS_TO_PASS. :func:`grade` judges a later run (a candidate solution) against those two lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Literal

Status = Literal["passed", "failed", "error", "skipped"]
Source = Literal["junit", "json", "tap", "text"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "error", "skipped")
# when a run reports one id more than once (a subtest and its parent, two files with the same test
# name), the worst outcome stands: a test that failed anywhere did not pass
_RANK: dict[str, int] = {"error": 3, "failed": 2, "passed": 1, "skipped": 0}


@dataclass(frozen=True, slots=True)
class TestOutcome:
    """One test's result: ``test_id`` in the runner's own naming (pytest's node id
    ``tests/test_x.py::TestK::test_a[1]``, unittest's ``pkg.mod.Class.test_a``, ``file > suite > test``
    for JavaScript runners, ``package::TestName`` for go, libtest's ``mod::test`` for cargo).
    ``duration_s`` is None where the runner does not say."""

    __test__: ClassVar[bool] = False  # not a pytest test class, despite its name

    test_id: str
    status: Status
    duration_s: float | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown test status {self.status!r} (one of {', '.join(STATUSES)})")


@dataclass(frozen=True, slots=True)
class TestReport:
    """What one run of a test command reported: the runner (``pytest``, ``unittest``, ``vitest``,
    ``jest``, ``node``, ``go``, ``cargo``), every outcome in the order reported, and which kind of
    output it was read from (a JUnit XML file, a JSON report, TAP, or the runner's text)."""

    __test__: ClassVar[bool] = False

    runner: str
    outcomes: tuple[TestOutcome, ...]
    source: Source

    def by_id(self) -> dict[str, TestOutcome]:
        """Each test id once; an id reported more than once keeps its worst outcome
        (error > failed > passed > skipped)."""
        merged: dict[str, TestOutcome] = {}
        for outcome in self.outcomes:
            seen = merged.get(outcome.test_id)
            if seen is None or _RANK[outcome.status] > _RANK[seen.status]:
                merged[outcome.test_id] = outcome
        return merged

    def ids(self, *statuses: Status) -> frozenset[str]:
        """The ids whose (merged) outcome is one of ``statuses``."""
        return frozenset(i for i, o in self.by_id().items() if o.status in statuses)


def fail_to_pass(before: TestReport, after: TestReport) -> tuple[str, ...]:
    """The tests a change fixed: passed after it, and failed, errored or were absent before it (a test
    the change adds, or one a broken import kept from running, was not passing). A test skipped
    before is left out of both lists: its skip says nothing about the change. Sorted."""
    was = before.by_id()
    return tuple(sorted(i for i in after.ids("passed") if i not in was or was[i].status in ("failed", "error")))


def pass_to_pass(before: TestReport, after: TestReport) -> tuple[str, ...]:
    """The tests that passed both before and after a change: the ones a solution must not break. Sorted."""
    return tuple(sorted(before.ids("passed") & after.ids("passed")))


@dataclass(frozen=True, slots=True)
class Grade:
    """The verdict on one run: ``passed`` iff every required test passed; ``not_passing`` names the
    required tests that did not (failed, errored, skipped or absent from the run), sorted."""

    passed: bool
    not_passing: tuple[str, ...]


def grade(after: TestReport, fail_to_pass_ids: Iterable[str], pass_to_pass_ids: Iterable[str]) -> Grade:
    """Grade a candidate's run: it passes iff every FAIL_TO_PASS test passes and every PASS_TO_PASS test
    still passes. A required test missing from ``after`` counts as not passing, so deleting, renaming or
    skipping the failing test is no solution.

    Raises ``ValueError`` when ``fail_to_pass_ids`` is empty: with no test that the reference change
    fixed, a run says nothing about a solution, and the caller should not grade the task this way. A
    run that could not be read at all (no report) is the caller's to call unscored, not a failure."""
    required_to_flip = frozenset(fail_to_pass_ids)
    if not required_to_flip:
        raise ValueError("no FAIL_TO_PASS test: a task is graded by test identity only when some test flipped")
    required = required_to_flip | frozenset(pass_to_pass_ids)
    missing = tuple(sorted(required - after.ids("passed")))
    return Grade(passed=not missing, not_passing=missing)
