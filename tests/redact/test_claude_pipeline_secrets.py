"""Planted secrets in a Claude Code session, through ingest and segment: none reaches the store.

The Claude Code counterpart of ``test_pipeline_secrets.py``: every kind of ``planted()`` secret
(generated when the test runs) is planted in every channel of a Claude Code 2.1 session written line
by line in the real CLI's shapes (``claude_support.ClaudeLines``): the typed prompt (and the
``queue-operation``/``last-prompt`` lines that repeat it), a Bash command, its ``tool_result`` and
``toolUseResult`` ``stdout``/``stderr``, a failed command's output (``Exit code N``), a result given as
text blocks, a Write's ``content``, an Edit's ``old_string``/``new_string`` (and the ``originalFile`` and
``structuredPatch`` the CLI records), thinking and the assistant's text. After ``ingest`` and
``segment``, every Parquet part of the store (column by column) and its catalog are searched for every
planted value (``redact.leaks.find_leaks``): none may be found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from claude_support import ClaudeLines
from conftest import query
from redact.leaks import find_leaks
from redact.planted import planted

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment

PLANTED = planted()  # random on every run: nothing secret-shaped is committed
NEEDLES = sorted({n for p in PLANTED for n in p.needles})
#: Secrets written over several lines (PEM blocks, a service account's JSON): an Edit of them leaks
#: (test_an_edit_of_a_multi_line_secret_leaks_through_its_structured_patch), so the main session edits
#: the others only.
MULTI_LINE = [p for p in PLANTED if "\n" in p.text.strip()]
ONE_LINE = [p for p in PLANTED if p not in MULTI_LINE]


@dataclass(frozen=True)
class Run:
    session: Path
    store: Path
    ingested: object  # the ingest summary
    segmented: object  # the segment summary


def _session() -> ClaudeLines:
    s = ClaudeLines()
    s.prompt("Fix add so that the checks pass. Context:\n" + "\n".join(p.channel_texts()["prompt"] for p in PLANTED))
    s.think("The context holds credentials: " + " ".join(p.text for p in PLANTED))
    for i, p in enumerate(PLANTED):
        s.bash(p.channel_texts()["command"], stdout=p.channel_texts()["tool_output"], stderr=p.text)
        s.bash(f"python3 check.py {i}", stderr=p.text, exit_code=1)
        call_id = s.call("Grep", {"pattern": "secret", "path": s.cwd})
        s.result(call_id, [{"type": "text", "text": p.text}])  # a result as text blocks
        s.write(f"secrets/{i}.txt", p.channel_texts()["file"])
    for i, p in enumerate(ONE_LINE):
        s.edit(f"config_{i}.py", p.text, ONE_LINE[(i + 1) % len(ONE_LINE)].text)  # old and new: both secrets
    s.say("Fixed; the checks pass. I used " + ", ".join(p.text for p in PLANTED))
    return s


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Run:
    tmp = tmp_path_factory.mktemp("claude-secrets")
    session = _session().save(tmp / "projects")
    store = tmp / "store"
    ingested = ingest(IngestConfig(paths=(tmp / "projects",), store=store, jobs=1))
    return Run(session, store, ingested, segment(SegmentConfig(store=store)))


def _channels(session: Path) -> dict[str, list[str]]:
    lines = [json.loads(line) for line in session.read_text().splitlines()]
    blocks = [(ln, b) for ln in lines if isinstance((ln.get("message") or {}).get("content"), list)
              for b in ln["message"]["content"]]
    uses = [b for _, b in blocks if b.get("type") == "tool_use"]
    results = [(ln, b) for ln, b in blocks if b.get("type") == "tool_result"]
    edits = [u["input"] for u in uses if u["name"] == "Edit"]
    return {
        "prompt": [ln["message"]["content"] for ln in lines if ln.get("type") == "user"
                   and isinstance(ln["message"]["content"], str)],
        "queued prompt": [ln["content"] for ln in lines if ln.get("operation") == "enqueue"],
        "bash command": [u["input"]["command"] for u in uses if u["name"] == "Bash"],
        "tool result": [b["content"] for _, b in results if isinstance(b["content"], str) and not b["is_error"]],
        "failed result": [b["content"] for _, b in results if b["is_error"]],
        "result blocks": [t["text"] for _, b in results if isinstance(b["content"], list) for t in b["content"]],
        "stdout": [ln["toolUseResult"]["stdout"] for ln, _ in results
                   if isinstance(ln.get("toolUseResult"), dict) and "stdout" in ln["toolUseResult"]],
        "stderr": [ln["toolUseResult"]["stderr"] for ln, _ in results
                   if isinstance(ln.get("toolUseResult"), dict) and "stderr" in ln["toolUseResult"]],
        "write content": [u["input"]["content"] for u in uses if u["name"] == "Write"],
        "edit old_string": [e["old_string"] for e in edits],
        "edit new_string": [e["new_string"] for e in edits],
        "edit structuredPatch": [line for ln, _ in results if "structuredPatch" in (ln.get("toolUseResult") or {})
                                 for hunk in ln["toolUseResult"]["structuredPatch"] for line in hunk["lines"]],
        "thinking": [b["thinking"] for _, b in blocks if b.get("type") == "thinking"],
        "assistant text": [b["text"] for ln, b in blocks if ln["type"] == "assistant" and b.get("type") == "text"],
    }


def test_every_secret_is_planted_in_every_channel(pipeline):
    edited = sorted({n for p in ONE_LINE for n in p.needles})
    for name, texts in _channels(pipeline.session).items():
        joined = "\n".join(texts)
        missing = [n[:12] for n in (edited if name.startswith("edit") else NEEDLES) if n not in joined]
        assert texts and not missing, name
    assert len(MULTI_LINE) >= 3 and ONE_LINE


def test_ingest_and_segment_did_the_work(pipeline):
    """The search below means something only if the session was read whole, as Claude Code's, and cut
    into a task whose patches are the Write and Edit file operations."""
    summary = pipeline.ingested
    assert summary.formats == {"claude": 1} and summary.quarantined == 0
    assert sum(summary.redactions.values()) >= len(PLANTED)
    lines = pipeline.session.read_text().count("\n")
    assert query(pipeline.store, "SELECT count(DISTINCT line_no) AS n FROM events")[0]["n"] == lines
    ops = query(pipeline.store, "SELECT record_type, count(*) AS n FROM events WHERE kind = 'patch' "
                                "GROUP BY record_type ORDER BY record_type")
    assert ops == [{"record_type": "file_op/Edit", "n": len(ONE_LINE)},
                   {"record_type": "file_op/Write", "n": len(PLANTED)}]
    (task,) = query(pipeline.store, "SELECT * FROM tasks")
    assert task["session_id"] == pipeline.session.stem


def test_the_planted_values_are_there_to_find(pipeline):
    """The leak search finds them in the session file itself (so that an empty result below is no
    blind spot of the search)."""
    found = {leak.needle for leak in find_leaks([pipeline.session], NEEDLES)}
    assert found == set(NEEDLES)


def test_store_holds_no_planted_secret(pipeline):
    """Every Parquet part of ingest's and segment's tables, column by column, and the catalog."""
    leaks = find_leaks([pipeline.store], NEEDLES)
    assert leaks == [], [str(leak) for leak in leaks]


@pytest.mark.parametrize("column", ["text", "command", "arguments", "raw"])
def test_the_redacted_values_are_in_the_events_as_placeholders_or_pseudonyms(pipeline, column):
    """Redaction replaced the secrets, it did not drop the texts that held them."""
    rows = query(pipeline.store, f"SELECT {column} AS v FROM events WHERE {column} IS NOT NULL")
    assert rows and not [r for r in rows if any(n in r["v"] for n in NEEDLES)]


def test_an_edit_of_a_multi_line_secret_keeps_none_of_it_in_its_structured_patch(tmp_path):
    """The CLI records an Edit's hunks one JSON string per line ('+MIIE…'): each body line is found
    alone (patterns.py pem-private-key-diff-line); it once reached events.raw and the file_op."""
    s = ClaudeLines().prompt("Rotate the keys in the config")
    for i, p in enumerate(MULTI_LINE):
        s.edit(f"keys_{i}.txt", p.text, MULTI_LINE[(i + 1) % len(MULTI_LINE)].text)
    s.say("Rotated.")
    s.save(tmp_path / "projects")
    ingest(IngestConfig(paths=(tmp_path / "projects",), store=tmp_path / "store", jobs=1))
    needles = {n for p in MULTI_LINE for n in p.needles}
    leaks = find_leaks([tmp_path / "store"], needles)
    assert leaks == [], sorted({leak.where for leak in leaks})


def test_the_multi_line_secrets_are_redacted_in_an_edit_s_own_strings(tmp_path):
    """Without the recorded hunks (a 2.1 sub-agent's Edit has no toolUseResult) an Edit of a private
    key keeps none of it: the leak above is the structuredPatch's alone."""
    s = ClaudeLines().prompt("Rotate the keys in the config")
    for i, p in enumerate(MULTI_LINE):
        call_id = s.call("Edit", {"replace_all": False, "file_path": f"{s.cwd}/keys_{i}.txt", "old_string": p.text,
                                  "new_string": MULTI_LINE[(i + 1) % len(MULTI_LINE)].text})
        s.result(call_id, f"The file {s.cwd}/keys_{i}.txt has been updated successfully.",
                 {"filePath": f"{s.cwd}/keys_{i}.txt", "oldString": p.text, "originalFile": p.text + "\n",
                  "newString": MULTI_LINE[(i + 1) % len(MULTI_LINE)].text})
    session = s.say("Rotated.").save(tmp_path / "projects")
    ingest(IngestConfig(paths=(tmp_path / "projects",), store=tmp_path / "store", jobs=1))
    needles = {n for p in MULTI_LINE for n in p.needles}
    assert find_leaks([session], needles)
    assert find_leaks([tmp_path / "store"], needles) == []
