"""The record's own rules: merging an id reported twice, the lists, and what grading refuses."""

from __future__ import annotations

import pytest

from logmine.testresults import TestOutcome, TestReport, fail_to_pass, grade, pass_to_pass


def _report(**statuses: str) -> TestReport:
    return TestReport("pytest", tuple(TestOutcome(i, s) for i, s in statuses.items()), "junit")  # type: ignore[arg-type]


def test_an_id_reported_twice_keeps_its_worst_outcome():
    report = TestReport("unittest", (TestOutcome("a", "passed"), TestOutcome("a", "error"), TestOutcome("b", "skipped"),
                                     TestOutcome("b", "passed")), "text")
    assert {i: o.status for i, o in report.by_id().items()} == {"a": "error", "b": "passed"}


def test_fail_to_pass_counts_a_test_absent_before_and_never_a_skipped_one():
    before = _report(old="failed", broken="error", skipped="skipped", kept="passed", lost="passed")
    after = _report(old="passed", broken="passed", skipped="passed", kept="passed", lost="failed", new="passed")
    assert fail_to_pass(before, after) == ("broken", "new", "old")
    assert pass_to_pass(before, after) == ("kept",)


def test_grading_needs_a_test_that_flipped():
    with pytest.raises(ValueError, match="FAIL_TO_PASS"):
        grade(_report(a="passed"), [], ["a"])


def test_an_unknown_status_is_refused():
    with pytest.raises(ValueError, match="unknown test status"):
        TestOutcome("a", "ok")  # type: ignore[arg-type]
