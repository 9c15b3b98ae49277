"""JSON reports: jest's ``--json`` (which vitest's ``json`` reporter copies) and go's ``test -json``."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable

from .records import Status, TestOutcome

_JEST_WORDS: dict[str, Status] = {"passed": "passed", "failed": "failed", "pending": "skipped",
                                  "skipped": "skipped", "todo": "skipped", "disabled": "skipped"}


def parse_jest_json(text: str, root: str | None = None) -> tuple[TestOutcome, ...] | None:
    """Every assertion of a jest or vitest JSON report, named ``file > describe > … > test``; None when
    the text is not such a report. ``file`` is relative to ``root`` when given and below it (the
    reports hold absolute paths; the same tree checked out elsewhere then names its tests the same).
    A file whose tests could not run (it did not import, a hook failed) while none of its tests
    failed is an ``error`` named by the file alone. Skipped, pending and todo tests are ``skipped``."""
    try:
        report = json.loads(text)
    except ValueError:
        return None
    if not isinstance(report, dict) or not isinstance(report.get("testResults"), list):
        return None
    outcomes: list[TestOutcome] = []
    for result in report["testResults"]:
        if not isinstance(result, dict):
            continue
        file = _relative(str(result.get("name", "")), root)
        tests = [a for a in result.get("assertionResults") or [] if isinstance(a, dict)]
        for test in tests:
            test_id = " > ".join([file, *map(str, test.get("ancestorTitles") or []), str(test.get("title", ""))])
            status = _JEST_WORDS.get(str(test.get("status")), "error")
            duration = test.get("duration")
            seconds = duration / 1000 if isinstance(duration, (int, float)) else None
            outcomes.append(TestOutcome(test_id, status, seconds))
        if result.get("status") == "failed" and not any(t.get("status") == "failed" for t in tests):
            outcomes.append(TestOutcome(file, "error"))
    return tuple(outcomes)


def _relative(path: str, root: str | None) -> str:
    if root and posixpath.isabs(path) and path.startswith(root.rstrip("/") + "/"):
        return posixpath.relpath(path, root)
    return path


_GO_WORDS: dict[str, Status] = {"pass": "passed", "fail": "failed", "skip": "skipped"}


def parse_go_json(lines: str | Iterable[str]) -> tuple[TestOutcome, ...] | None:
    """The tests ``go test -json`` reported passing, failing or skipped (test2json's events), named
    ``import/path::TestName`` (subtests ``import/path::TestName/case``, reported besides their parent);
    None when no line is a test2json event. Lines that are not JSON (build errors go to stderr, but the
    output may hold both) are passed over; a package's own pass or fail is not a test's."""
    events = 0
    outcomes = []
    for line in lines.splitlines() if isinstance(lines, str) else lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or "Action" not in event:
            continue
        events += 1
        action, test = event.get("Action"), event.get("Test")
        if action in _GO_WORDS and test:
            package = event.get("Package") or ""
            elapsed = event.get("Elapsed")
            outcomes.append(TestOutcome(f"{package}::{test}" if package else str(test), _GO_WORDS[action],
                                        float(elapsed) if isinstance(elapsed, (int, float)) else None))
    return tuple(outcomes) if events else None
