"""TAP (the Test Anything Protocol) as ``node --test`` writes it: subtests nested four spaces deeper,
each announced by ``# Subtest: name``, each point followed by a YAML block with its ``duration_ms``."""

from __future__ import annotations

import re

from .records import Status, TestOutcome

_POINT = re.compile(r"^(?P<indent> *)(?P<ok>not ok|ok)\b(?: +\d+)?(?: +-)? *(?P<description>.*)$")
_SUBTEST = re.compile(r"^(?P<indent> *)# Subtest: (?P<name>.*)$")
_DIRECTIVE = re.compile(r"(?<!\\)#\s*(?P<word>SKIP|TODO)\b.*$", re.IGNORECASE)
_YAML_FIELD = re.compile(r"^(?P<indent> *)(?P<key>duration_ms|type): *(?P<value>.*)$")


def parse_tap(text: str) -> tuple[TestOutcome, ...]:
    """The tests of a TAP stream, named by their path of names joined with `` > `` (``group > deeper >
    deep fail``). Only leaves are tests: a point with subtests (a ``describe``, a test calling
    ``t.test``) stands for its children, unless it failed while none of them did (a hook failed): then
    it is an ``error``. ``# SKIP`` and ``# TODO`` points are ``skipped`` (a failing todo does not fail
    the run). node names no file in its TAP, so tests with the same path of names in two files are one
    id."""
    outcomes: list[TestOutcome] = []
    names: dict[int, str] = {}  # depth -> the name its last `# Subtest:` announced
    has_children: set[int] = set()  # depths whose next point closes a group
    failed_below: set[int] = set()  # depths whose open group has a failing test inside
    last: tuple[int, int] | None = None  # (depth, index in outcomes) of the point a YAML block follows
    for line in text.splitlines():
        subtest = _SUBTEST.match(line)
        if subtest:
            names[len(subtest["indent"]) // 4] = _unescape(subtest["name"])
            continue
        point = _POINT.match(line)
        if point:
            depth = len(point["indent"]) // 4
            outcome = _outcome(point["ok"], point["description"], [names[d] for d in range(depth) if d in names])
            group = depth in has_children
            has_children.discard(depth)
            if depth:
                has_children.add(depth - 1)
            last = None
            if not group or (outcome.status == "failed" and depth not in failed_below):
                outcomes.append(outcome if not group else TestOutcome(outcome.test_id, "error"))
                last = (depth, len(outcomes) - 1)
                if outcome.status == "failed":
                    failed_below.update(range(depth))
            failed_below.discard(depth)
            for deeper in [d for d in names if d > depth]:
                del names[deeper]
            continue
        field = _YAML_FIELD.match(line)
        if field and last and len(field["indent"]) == last[0] * 4 + 2:
            last = _annotate(outcomes, last, field["key"], field["value"])
    return tuple(o for o in outcomes if o.test_id)


def _outcome(ok: str, description: str, parents: list[str]) -> TestOutcome:
    directive = _DIRECTIVE.search(description)
    name = _unescape((description[:directive.start()] if directive else description).strip())
    status: Status = "skipped" if directive else "passed" if ok == "ok" else "failed"
    return TestOutcome(" > ".join([*parents, name]), status)


def _annotate(outcomes: list[TestOutcome], last: tuple[int, int], key: str, value: str) -> tuple[int, int] | None:
    """Apply a YAML field to the point it follows: its duration, or its removal (a suite without tests
    is no test; one whose hook failed stays an error)."""
    depth, index = last
    if key == "type" and value.strip("'\"") == "suite" and outcomes[index].status != "error":
        outcomes[index] = TestOutcome("", outcomes[index].status)  # dropped at the end
        return None
    try:
        seconds = float(value) / 1000
    except ValueError:
        return last
    outcomes[index] = TestOutcome(outcomes[index].test_id, outcomes[index].status, seconds)
    return last


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)
