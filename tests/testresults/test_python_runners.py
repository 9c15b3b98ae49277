"""Real pytest and unittest runs, instrumented, read test by test; and grading by test identity on them."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from testresults_support import exit_code, run_instrumented, statuses, write

from logmine.testresults import fail_to_pass, grade, parse, pass_to_pass

PYTHON = shlex.quote(sys.executable)
BUGGY = "def add(a, b):\n    return a + b if a >= 0 else a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
PYTEST_TESTS = '''import pytest
from calc import add


def test_add():
    assert add(1, 2) == 3


def test_add_negative():
    assert add(-1, -1) == -2


@pytest.mark.skip(reason="not yet")
def test_later():
    pass


class TestDouble:
    @pytest.mark.parametrize("n", [1, 2])
    def test_double(self, n):
        assert add(n, n) == 2 * n
'''
PYTEST_IDS = {"tests/test_calc.py::test_add": "passed", "tests/test_calc.py::test_add_negative": "failed",
              "tests/test_calc.py::test_later": "skipped", "tests/test_calc.py::TestDouble::test_double[1]": "passed",
              "tests/test_calc.py::TestDouble::test_double[2]": "passed"}


def _pytest_project(root: Path, calc: str = BUGGY, tests: str = PYTEST_TESTS) -> Path:
    return write(root, {"pytest.ini": "[pytest]\npythonpath = src\n", "src/calc.py": calc, "tests/test_calc.py": tests})


def test_pytest_reports_each_test_through_its_junit_file(tmp_path):
    project = _pytest_project(tmp_path / "p")
    command = f"cd {shlex.quote(str(project))} && {PYTHON} -m pytest -q -p no:cacheprovider"
    report, code, _ = run_instrumented(command, tmp_path, tmp_path / "report")
    assert report is not None and (report.runner, report.source) == ("pytest", "junit")
    assert statuses(report) == PYTEST_IDS
    assert all(o.duration_s is not None for o in report.outcomes)
    assert code == exit_code(command, tmp_path) == 1  # the exit code means what it meant


def test_pytest_output_alone_names_the_same_tests(tmp_path):
    """Without its JUnit file (a run that left none), the ``-rA`` summary and ``-v`` lines are read;
    pytest's summary names a skip by its location only, so the skipped test is absent there."""
    project = _pytest_project(tmp_path / "p")
    for flags, skipped_seen in (("-q", False), ("-v", True)):
        _, _, output = run_instrumented(f"{PYTHON} -m pytest {flags} -p no:cacheprovider", project, tmp_path / flags)
        report = parse("pytest", output, None)
        assert report is not None and report.source == "text"
        expected = {k: v for k, v in PYTEST_IDS.items() if skipped_seen or v != "skipped"}
        assert statuses(report) == expected, flags


def test_a_module_that_does_not_import_is_an_error_named_by_its_file(tmp_path):
    project = _pytest_project(tmp_path / "p", tests="import calc_missing\n\n\ndef test_a():\n    pass\n")
    report, code, _ = run_instrumented(f"{PYTHON} -m pytest -p no:cacheprovider", project, tmp_path / "report")
    assert statuses(report) == {"tests/test_calc.py": "error"} and code == 2


UNITTEST_TESTS = '''import unittest

from calc import add


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 2), 3)

    def test_add_negative(self):
        self.assertEqual(add(-1, -1), -2)

    @unittest.skip("not yet")
    def test_later(self):
        pass

    def test_pairs(self):
        for a in (1, -1):
            with self.subTest(a=a):
                self.assertEqual(add(a, a), 2 * a)

    def test_broken(self):
        raise RuntimeError("boom")
'''


def test_unittest_verbose_lines_name_each_test(tmp_path):
    project = write(tmp_path / "p", {"calc.py": BUGGY, "tests/__init__.py": "", "tests/test_calc.py": UNITTEST_TESTS})
    command = f"{PYTHON} -m unittest discover -s tests -t ."
    report, code, _ = run_instrumented(command, project, tmp_path / "report")
    assert report is not None and (report.runner, report.source) == ("unittest", "text")
    assert statuses(report) == {
        "tests.test_calc.TestAdd.test_add": "passed", "tests.test_calc.TestAdd.test_add_negative": "failed",
        "tests.test_calc.TestAdd.test_later": "skipped", "tests.test_calc.TestAdd.test_pairs": "failed",
        "tests.test_calc.TestAdd.test_pairs (a=-1)": "failed", "tests.test_calc.TestAdd.test_broken": "error"}
    assert code == exit_code(command, project) == 1


# ------------------------------------------------------------------------------ grading by test identity

def _run(tmp_path: Path, name: str, calc: str, tests: str = PYTEST_TESTS):
    project = _pytest_project(tmp_path / name, calc, tests)
    report, code, _ = run_instrumented(f"{PYTHON} -m pytest -q -p no:cacheprovider", project, tmp_path / f"{name}-r")
    assert report is not None
    return report, code


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The task: a failing run before, and the author's fix after."""
    tmp_path = tmp_path_factory.mktemp("reference")
    before, _ = _run(tmp_path, "before", BUGGY)
    after, _ = _run(tmp_path, "after", FIXED)
    return fail_to_pass(before, after), pass_to_pass(before, after)


def test_the_reference_run_names_what_flipped_and_what_stayed(reference):
    f2p, p2p = reference
    assert f2p == ("tests/test_calc.py::test_add_negative",)
    assert p2p == ("tests/test_calc.py::TestDouble::test_double[1]", "tests/test_calc.py::TestDouble::test_double[2]",
                   "tests/test_calc.py::test_add")


def test_deleting_the_failing_test_is_no_solution(tmp_path, reference):
    deleted = PYTEST_TESTS.replace("def test_add_negative():\n    assert add(-1, -1) == -2\n", "")
    after, code = _run(tmp_path, "deleted", BUGGY, deleted)
    assert code == 0  # the exit code alone would call this a pass
    assert grade(after, *reference).not_passing == ("tests/test_calc.py::test_add_negative",)
    assert not grade(after, *reference).passed


def test_skipping_the_failing_test_is_no_solution(tmp_path, reference):
    skipped = PYTEST_TESTS.replace("def test_add_negative", "@pytest.mark.skip\ndef test_add_negative")
    after, code = _run(tmp_path, "skipped", BUGGY, skipped)
    assert code == 0 and not grade(after, *reference).passed


def test_a_fix_that_breaks_a_passing_test_is_no_solution(tmp_path, reference):
    after, _ = _run(tmp_path, "broke", "def add(a, b):\n    return a + b if a < 0 else 0\n")
    assert grade(after, *reference).not_passing == ("tests/test_calc.py::TestDouble::test_double[1]",
                                                   "tests/test_calc.py::TestDouble::test_double[2]",
                                                   "tests/test_calc.py::test_add")


def test_a_real_fix_passes(tmp_path, reference):
    after, code = _run(tmp_path, "fixed", "def add(a, b):\n    return sum((a, b))\n")
    assert code == 0 and grade(after, *reference).passed
