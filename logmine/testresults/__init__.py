"""Per-test outcomes from real test runners, and grading by test identity (SWE-bench's FAIL_TO_PASS
and PASS_TO_PASS) rather than by exit code.

    done = instrument("cd sub && pytest -q", "/tmp/report")   # -> Instrumented(command, "pytest", file)
    before = parse(done.runner, output, report_text)          # -> TestReport | None
    after = parse(done.runner, output_after, report_text_after)
    f2p, p2p = fail_to_pass(before, after), pass_to_pass(before, after)
    grade(candidate_run, f2p, p2p).passed

Standard library only. ``docs/testresults.md`` lists the runners, the flags each gets and the
grading rule; each parser's docstring says what it reads and what it leaves out.
"""

from .instrument import RUNNERS, Instrumented, instrument
from .json_reports import parse_go_json, parse_jest_json
from .junit import parse_junit
from .parse import parse
from .records import STATUSES, Grade, Status, TestOutcome, TestReport, fail_to_pass, grade, pass_to_pass
from .sandboxed import TestRun, run_tests
from .tap import parse_tap
from .text import parse_cargo, parse_pytest_text, parse_unittest_verbose

__all__ = [
    "RUNNERS",
    "STATUSES",
    "Grade",
    "Instrumented",
    "Status",
    "TestOutcome",
    "TestReport",
    "TestRun",
    "fail_to_pass",
    "grade",
    "instrument",
    "parse",
    "parse_cargo",
    "parse_go_json",
    "parse_jest_json",
    "parse_junit",
    "parse_pytest_text",
    "parse_tap",
    "parse_unittest_verbose",
    "pass_to_pass",
    "run_tests",
]
