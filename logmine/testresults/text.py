"""Outcomes read from what a runner prints: pytest's ``-rA`` summary and ``-v`` lines, unittest's
``-v`` lines, libtest's (``cargo test``) lines. Pass the command's output with stderr included:
unittest writes its lines there. None of these carry durations."""

from __future__ import annotations

import re

from .records import Status, TestOutcome

_PYTEST_WORDS: dict[str, Status] = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped",
                                    "XFAIL": "skipped", "XPASS": "passed"}
_PYTEST_HEADER = re.compile(r"^=+ (?P<title>.+?) =+$")
_PYTEST_SUMMARY = re.compile(r"^(?P<word>PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (?P<id>.+?)(?: - .*)?$")
_PYTEST_VERBOSE = re.compile(r"^(?P<id>\S.*?::.+?) (?P<word>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_PYTEST_XDIST = re.compile(r"^\[gw\d+\] (?:\[ *\d+%\] )?(?P<word>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) "
                           r"(?P<id>\S.*::.*)$")


def parse_pytest_text(output: str) -> tuple[TestOutcome, ...]:
    """The outcomes pytest printed: its progress lines under ``-v`` (``tests/x.py::test_a PASSED [ 50%]``,
    xdist's ``[gw0] [ 50%] PASSED tests/x.py::test_a``) and its short summary under ``-rA``
    (``PASSED tests/x.py::test_a``, ``FAILED tests/x.py::test_b - assert 1 == 2``, ``ERROR tests/y.py``).
    Lines elsewhere (failure details, captured output) are not read, so a test printing ``PASSED x``
    does not invent an outcome. XFAIL is ``skipped`` and XPASS ``passed``, as in pytest's JUnit XML; the
    summary's ``SKIPPED [1] tests/x.py:12: reason`` names a location, not a test, and is left out."""
    outcomes: list[TestOutcome] = []
    section = "progress"
    for line in output.splitlines():
        header = _PYTEST_HEADER.match(line)
        if header:
            title = header["title"]
            section = ("progress" if title == "test session starts"
                       else "summary" if title == "short test summary info" else "other")
            continue
        pattern = (_PYTEST_SUMMARY,) if section == "summary" else (
            (_PYTEST_VERBOSE, _PYTEST_XDIST) if section == "progress" else ())
        found = next((m for m in (p.match(line) for p in pattern) if m), None)
        if found is None or (found["word"] == "SKIPPED" and "::" not in found["id"]):
            continue
        outcomes.append(TestOutcome(found["id"].strip(), _PYTEST_WORDS[found["word"]]))
    return tuple(outcomes)


# `test_a (pkg.mod.Class.test_a) ... ok` (3.11+) or `test_a (pkg.mod.Class) ... ok` (3.10 and before);
# a subtest adds its parameters: `  test_a (pkg.mod.Class.test_a) (i=2) ... FAIL`
_UNITTEST_TEST = re.compile(r"^ *(?P<name>[^\s(]+) \((?P<where>[\w.]+)\)(?P<params> \(.*?\))?(?P<rest>(?: \.\.\. .*)?)$")
_UNITTEST_RESULT = re.compile(r"(?:^|^\.\.\. |.* \.\.\. )(?P<result>ok|FAIL|ERROR|skipped(?: .*)?|expected failure|"
                              r"unexpected success)$")
# 3.10 leaves a line open when a test's result comes only in the details: `test_a (m.C) ... test_b (m.C) ... ok`
_UNITTEST_RUN_ON = re.compile(r"(?<= \.\.\. )(?=[^\s(]+ \([\w.]+\))")
_UNITTEST_DETAIL = re.compile(r"^(?P<result>FAIL|ERROR): (?P<test>.*)$")
_UNITTEST_WORDS: dict[str, Status] = {"ok": "passed", "FAIL": "failed", "ERROR": "error", "skipped": "skipped",
                                      "expected failure": "skipped", "unexpected success": "failed"}


def parse_unittest_verbose(output: str) -> tuple[TestOutcome, ...]:
    """The outcomes ``python -m unittest -v`` printed, named ``pkg.mod.Class.test_a`` in both the
    Python 3.11+ form (``test_a (pkg.mod.Class.test_a) ... ok``) and the older one
    (``test_a (pkg.mod.Class) ... ok``). A result may come on a later line: after the docstring's first
    line, or after what the test printed. The headers of the failure details (``FAIL: test_a (…)``)
    count too; nothing else of the details is read. A failing subtest is its own outcome
    (``pkg.mod.Class.test_a (i=2)``) and fails its test too. ``expected failure`` is ``skipped``,
    ``unexpected success`` ``failed``; a class or module that failed to set up is an ``error`` under
    its own name (``pkg.mod.Class.setUpClass``, ``pkg.mod``)."""
    outcomes: list[TestOutcome] = []
    pending: list[str] = []  # the test (and its parent, for a subtest) awaiting its result
    in_details = after_rule = False
    for line in (part for whole in output.splitlines() for part in _UNITTEST_RUN_ON.split(whole)):
        detail = _UNITTEST_DETAIL.match(line) if after_rule else None
        test = _UNITTEST_TEST.match(detail["test"] if detail else line)
        if detail and test:
            outcomes.extend(_unittest_outcomes(_unittest_ids(test), detail["result"]))
        after_rule = line.startswith("=" * 70)
        in_details = (in_details or after_rule) and not re.match(r"^Ran \d+ tests? in ", line)
        if in_details:
            pending = []
            continue
        if test:
            pending, line = _unittest_ids(test), test["rest"]
        result = _UNITTEST_RESULT.match(line.strip()) if pending else None
        if result:
            outcomes.extend(_unittest_outcomes(pending, result["result"].split(" '")[0]))
            pending = []
    return tuple(outcomes)


def _unittest_outcomes(ids: list[str], word: str) -> list[TestOutcome]:
    """The outcome of a test, or of a subtest and (when it did not pass) its parent test."""
    status = _UNITTEST_WORDS[word]
    return [TestOutcome(i, status) for i in ids if i == ids[0] or status != "passed"]


def _unittest_ids(test: re.Match[str]) -> list[str]:
    name, where, params = test["name"], test["where"], test["params"]
    if where.startswith("unittest.loader._FailedTest"):
        return [name]  # a module that did not import: `pkg.mod (unittest.loader._FailedTest.pkg.mod)`
    test_id = where if where.endswith("." + name) else f"{where}.{name}"
    return [f"{test_id}{params}", test_id] if params else [test_id]


_CARGO = re.compile(r"^test (?P<name>.+?) \.\.\. (?P<result>ok|FAILED|ignored(?:, .*)?)$")


def parse_cargo(output: str) -> tuple[TestOutcome, ...]:
    """The outcomes libtest printed for ``cargo test`` (``test tests::adds ... ok``, ``... FAILED``,
    ``... ignored``, doc tests as ``test src/lib.rs - add (line 3) ... ok``), in every test binary the
    run reached. Ids are libtest's names: the same name in two binaries (a unit test and an integration
    test) is one id. Not read: the terse form of ``-q`` (:func:`instrument` drops it), a result printed
    lines after its test under ``--nocapture``."""
    outcomes = []
    for line in output.splitlines():
        found = _CARGO.match(line.rstrip())
        if found:
            word = found["result"]
            status: Status = "passed" if word == "ok" else "failed" if word == "FAILED" else "skipped"
            outcomes.append(TestOutcome(found["name"], status))
    return tuple(outcomes)
