"""The agent's tool protocol: one format of tool results, one submission marker, for export and agent."""

from __future__ import annotations

import json
from pathlib import Path

from logmine.protocol import SUBMIT, SYSTEM_PROMPT, USER_PROMPT, format_observation

SCHEMA = Path(__file__).resolve().parents[1] / "logmine" / "schemas" / "tmax_row.schema.json"


def test_format_observation_is_exact():
    assert format_observation("F\n", 1) == "F\n[exit code: 1]"
    assert format_observation("ok", 0) == "ok\n[exit code: 0]"
    assert format_observation("", 0) == "[exit code: 0]"
    assert format_observation(None, 2) == "[exit code: 2]"
    assert format_observation("failed in sandbox: x", None) == "failed in sandbox: x"


def test_the_rows_messages_name_the_submission_the_schema_wants():
    """A TMax row's system message must hold the marker (the row schema's pattern); both messages say
    how to submit with it."""
    schema = json.loads(SCHEMA.read_text())
    assert SUBMIT in json.dumps(schema)
    assert f"echo {SUBMIT}" in SYSTEM_PROMPT
    assert f"`echo {SUBMIT}`" in USER_PROMPT.format(prompt="Fix add", where="/pkg")
