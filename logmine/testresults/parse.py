"""One entry point from a run's output and report file to its :class:`TestReport`."""

from __future__ import annotations

from .json_reports import parse_go_json, parse_jest_json
from .junit import parse_junit
from .records import Source, TestOutcome, TestReport
from .tap import parse_tap
from .text import parse_cargo, parse_pytest_text, parse_unittest_verbose


def parse(runner: str, stdout: str, report_file_text: str | None, *, root: str | None = None) -> TestReport | None:
    """The outcomes of one run of an :func:`instrument`-ed command by ``runner`` (its ``runner``).

    ``stdout`` is the command's output, stderr included (unittest writes its lines there);
    ``report_file_text`` the content of its ``report_file``, or None where it has none or the run left
    none behind. ``root`` is the directory the tests ran from, as the runner saw it: JavaScript reports
    name files by absolute path, and ids are made relative to it.

    pytest's JUnit file is read first, its ``-rA``/``-v`` lines when the file is missing or unreadable;
    node's TAP file first, its output when that is TAP. None when nothing could be read: an unknown
    runner, no readable report and no test named in the output. Whether such a run failed (the runner
    stopped before any test) or was never run (the sandbox failed) is for the caller to tell."""
    found: tuple[tuple[TestOutcome, ...] | None, Source]
    if runner == "pytest":
        found = _first((parse_junit(report_file_text) if report_file_text else None, "junit"),
                       (parse_pytest_text(stdout), "text"))
    elif runner == "unittest":
        found = (parse_unittest_verbose(stdout), "text")
    elif runner in ("vitest", "jest"):
        found = (parse_jest_json(report_file_text, root) if report_file_text else None, "json")
    elif runner == "node":
        found = _first((parse_tap(report_file_text) if report_file_text else None, "tap"),
                       (parse_tap(stdout) if "TAP version" in stdout else None, "tap"))
    elif runner == "go":
        found = (parse_go_json(stdout), "json")
    elif runner == "cargo":
        found = (parse_cargo(stdout), "text")
    else:
        return None
    outcomes, source = found
    if outcomes is None or (source == "text" and not outcomes):
        return None
    return TestReport(runner, outcomes, source)


def _first(*candidates: tuple[tuple[TestOutcome, ...] | None, Source]) -> tuple[tuple[TestOutcome, ...] | None, Source]:
    """The first candidate that read as a report (a structured one may be empty; text must name a test)."""
    for outcomes, source in candidates:
        if outcomes is not None and (outcomes or source != "text"):
            return outcomes, source
    return candidates[-1]
