"""JUnit XML reports (pytest's ``--junitxml``), read into outcomes named by pytest's node ids."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from .records import Status, TestOutcome


def parse_junit(xml_text: str) -> tuple[TestOutcome, ...] | None:
    """Every ``<testcase>`` of a JUnit XML report, in document order; None when the text is not XML.

    A case with an ``<error>`` is ``error`` (pytest: a fixture or teardown failed, or the module did not
    import), with a ``<failure>`` ``failed``, with ``<skipped>`` ``skipped`` (pytest's xfail too), else
    ``passed``. Ids are pytest's node ids (``tests/test_x.py::TestK::test_a[1]``) where the case carries
    its ``file`` (pytest's ``junit_family=xunit1``, which :func:`instrument` asks for); a collection error
    is named by its file (``tests/test_y.py``), as pytest's summary names it. A case without ``file``
    (xunit2, other tools) is ``classname::name``."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        return None
    outcomes = []
    for case in root.iter("testcase"):
        test_id = _test_id(case.get("file") or "", case.get("classname") or "", case.get("name") or "")
        outcomes.append(TestOutcome(test_id, _status(case), _seconds(case.get("time"))))
    return tuple(outcomes)


def _status(case: ET.Element) -> Status:
    tags = {child.tag for child in case}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    return "skipped" if "skipped" in tags else "passed"


def _test_id(file: str, classname: str, name: str) -> str:
    """pytest's node id back from the case's attributes: pytest wrote ``classname`` as the file's path
    with ``/`` made ``.`` and ``.py`` dropped, then the classes (``tests.test_x.TestK``)."""
    if file:
        if not classname:
            return file
        module = re.sub(r"\.py$", "", file).replace("/", ".")
        if classname == module:
            return f"{file}::{name}"
        if classname.startswith(module + "."):
            return f"{file}::{classname[len(module) + 1:].replace('.', '::')}::{name}"
    return f"{classname}::{name}" if classname else name


def _seconds(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None
