"""The string scans that find patch markers and heredoc terminators find what the regexes and the
line-by-line reading they replace find, on texts built from the pieces that make them differ."""

from __future__ import annotations

import random
import re

import pytest

from logmine.patch import _extract as ex

PIECES = ["*** Begin Patch", "*** End Patch", " ", "\t", "\r", "\n", "\n", "x", "EOF", "EOFX", "\u3000",
          "*** Begin Patch*** End Patch"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 24)))


# The regexes the scans replaced: a marker line is the marker with nothing but non-newline
# whitespace around it.
_BEGIN = re.compile(r"^[^\S\n]*(\*\*\* Begin Patch)[^\S\n]*$", re.M)
_END = re.compile(r"^[^\S\n]*(\*\*\* End Patch)[^\S\n]*$", re.M)


def _span_by_regex(text: str) -> str | None:
    begin = _BEGIN.search(text)
    if begin is None:
        return None
    ends = list(_END.finditer(text, begin.end()))
    return text[begin.start(1) : ends[-1].end(1)] if ends else None


def _heredoc_by_lines(rest: str, tag: str) -> str:
    body = []
    for line in rest.split("\n"):
        if line.rstrip("\r") == tag:
            break
        body.append(line)
    return "\n".join(body)


@pytest.mark.parametrize("seed", range(300))
def test_marker_lines_are_found_where_the_marker_regexes_find_them(seed):
    text = _text(random.Random(seed))
    assert ex._span(text) == _span_by_regex(text)


@pytest.mark.parametrize("seed", range(300))
def test_a_heredoc_ends_at_the_line_reading_it_line_by_line_ends(seed):
    rest = _text(random.Random(seed))
    at = ex._tag_line(rest, "EOF")
    assert (rest if at is None else rest[: max(at - 1, 0)]) == _heredoc_by_lines(rest, "EOF")


def test_a_heredoc_patch_after_cd_is_extracted():
    body = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    script = f"cd /w && apply_patch <<'EOF'\n{body}\nEOF\necho done"
    assert ex.extract_patch(script) == body
    assert ex.extract_patch(script.replace("apply_patch", "xapply_patch")) is None
