"""The active trajectory of a Claude Code session: the branch of its ``uuid`` tree the session ended on.

Claude Code writes a session as a tree of lines linked by ``uuid``/``parentUuid``
(``docs/claude-code-format.md``). An edited earlier prompt, a retried turn or a ``/resume`` from an
earlier point starts a branch; the conversation the session ended with is the chain of parents from
its last line back to the root, and the other branches were abandoned. Ingest keeps every line in file
order (a line that does not follow the one before gets a ``chain/branch`` marker first); segment cuts
tasks from the active trajectory only, so an abandoned prompt is no task, and an abandoned branch's
edits are neither a task's work nor the earlier work redone before a later task.

What is on the trajectory though off the chain of parents:

- the lines of one response: the CLI writes its calls as lines chained one after another and hangs
  each call's result on that call's own line, so every result but the last is a dead end (a line of a
  response on the chain, same ``message.id``, and a line holding only results of calls on the
  trajectory are kept);
- sub-agent lines (``isSidechain``): another conversation, never a branch of this one;
- lines without a ``uuid`` (bookkeeping: queue operations, API requests): they go with the line with a
  ``uuid`` before them, so a task never spans an abandoned branch only to end at the bookkeeping after it.

The tree is read back from ``events.raw`` (the redacted line, on each line's first event) and from the
events' call ids, grouped by ``line_no``: :func:`read_lines`. Codex sessions have no such tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from logmine.ingest.claude import BOOKKEEPING
from logmine.ingest.records import Event
from logmine.segment.tasks import is_request
from logmine.store import fetch_dicts

#: Ingest's marker before a line whose parent is not the line before it (``logmine/ingest/claude.py``).
BRANCH = "chain/branch"
_BOOKKEEPING = ", ".join(f"'{kind}'" for kind in sorted(BOOKKEEPING))  # no uuid: their raw is not parsed
# One row per line of a Claude Code file; a line's raw is parsed once, on its first event. A
# compaction's boundary has no parentUuid: its logicalParentUuid continues the chain.
_LINES_SQL = f"""
SELECT source_path, line_no, max(f[1]) AS uuid, coalesce(max(f[2]), max(f[3])) AS parent,
       coalesce(max(f[4]) = 'true', false) AS sidechain, max(f[5]) AS message_id,
       coalesce(bool_or(kind = 'user_message' AND NOT coalesce(is_injected, false)), false) AS prompt,
       list(call_id) FILTER (WHERE kind = 'tool_call' AND call_id IS NOT NULL) AS calls,
       list(call_id) FILTER (WHERE kind = 'tool_output' AND call_id IS NOT NULL) AS results
FROM (SELECT source_path, line_no, kind, call_id, is_injected,
             CASE WHEN raw IS NOT NULL AND record_type NOT IN ({_BOOKKEEPING}) THEN
                  try(json_extract_string(raw, ['$.uuid', '$.parentUuid', '$.logicalParentUuid', '$.isSidechain',
                                                '$.message.id'])) END AS f
      FROM events WHERE source_path IN (SELECT unnest(?)) AND format = 'claude' AND line_no IS NOT NULL)
GROUP BY source_path, line_no ORDER BY source_path, line_no
"""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a Claude Code file, where it sits on the ``uuid`` tree and what it holds."""

    line_no: int
    uuid: str | None = None  # None: a line off the tree (bookkeeping)
    parent: str | None = None  # parentUuid, else logicalParentUuid (a compaction's boundary)
    sidechain: bool = False  # a sub-agent's line (isSidechain)
    message_id: str | None = None  # an assistant line's response (message.id)
    prompt: bool = False  # holds a user message that is not injected context
    calls: tuple[str, ...] = ()  # the tool_use ids it makes
    results: tuple[str, ...] = ()  # the tool_use ids its tool_results answer

    @classmethod
    def from_row(cls, row: dict) -> Line:
        return cls(row["line_no"], row["uuid"], row["parent"], bool(row["sidechain"]), row["message_id"],
                   bool(row["prompt"]), tuple(row["calls"] or ()), tuple(row["results"] or ()))


@dataclass(frozen=True, slots=True)
class OffBranch:
    """What of a session was off its active trajectory, and so in none of its tasks."""

    lines: int = 0
    events: int = 0
    requests: int = 0  # genuine user requests (an edited prompt's earlier versions, abandoned turns)
    tool_calls: int = 0


def read_lines(con, paths: Iterable[str]) -> dict[str, list[Line]]:
    """The lines of the Claude Code files among ``paths``, in file order (other files: none)."""
    lines: dict[str, list[Line]] = {}
    for row in fetch_dicts(con.execute(_LINES_SQL, [list(paths)])):
        lines.setdefault(row["source_path"], []).append(Line.from_row(row))
    return lines


def off_branch(lines: Sequence[Line]) -> frozenset[int]:
    """The numbers of the lines off the active trajectory (``lines`` in file order): the chain of
    parents from the last line with a ``uuid`` that is no sub-agent's, with the dead-end lines of its
    responses (see the module docstring)."""
    main = [line for line in lines if line.uuid is not None and not line.sidechain]
    if not main:
        return frozenset()
    known = {line.uuid for line in main}
    parents: dict[str, str | None] = {}
    before: str | None = None
    for line in main:
        uid: str = line.uuid or ""  # ``main`` holds lines with a uuid only
        up: str | None = line.parent
        if (up is not None and up not in known) or (up is None and before is not None and not line.prompt):
            # a parent the file does not hold (a line ingest quarantined), or a root that is no prompt
            # (a boundary without logicalParentUuid): the line continues the one before it, as written
            up = before
        parents.setdefault(uid, up)
        before = uid
    kept: set[str | None] = set()
    at: str | None = main[-1].uuid
    while at is not None and at not in kept:
        kept.add(at)
        at = parents.get(at)
    responses = {line.message_id for line in main if line.uuid in kept and line.message_id}
    calls = {call for line in main if line.uuid in kept for call in line.calls}
    for line in main:  # a parallel call's result, hung on its own call's line, is a dead end
        if line.uuid in kept:
            continue
        if (line.message_id and line.message_id in responses) or \
                (line.results and not line.prompt and calls.issuperset(line.results)):
            kept.add(line.uuid)
            calls.update(line.calls)
    off: set[int] = set()
    dead = False  # the last line with a uuid before this one is off the trajectory
    for line in lines:
        if line.uuid is None:
            if dead:
                off.add(line.line_no)
        elif not line.sidechain:
            dead = line.uuid not in kept
            if dead:
                off.add(line.line_no)
    return frozenset(off)


def on_branch(events: list[Event], lines: Sequence[Line]) -> tuple[list[Event], OffBranch]:
    """``events`` (a session's, in order) less those of lines off its active trajectory, and what was
    left out. Ingest's branch markers go too: the marker before an edited prompt would otherwise end
    the task before it, stretching that task's span over the abandoned branch. Without ``lines`` (a
    Codex session) every event is kept."""
    if not lines:
        return events, OffBranch()
    off = off_branch(lines)
    kept = [event for event in events if event.line_no not in off and event.record_type != BRANCH]
    if not off:
        return kept, OffBranch()
    dropped = [event for event in events if event.line_no in off]
    return kept, OffBranch(lines=len(off), events=len(dropped), requests=sum(map(is_request, dropped)),
                           tool_calls=sum(event.kind == "tool_call" for event in dropped))


def active_events(con, events: dict[str, list[Event]]) -> dict[str, list[Event]]:
    """Each file's events (``line_no`` read) less those of lines off a Claude Code file's active
    trajectory: an export reads a task's events by its ``seq`` span, which may hold a turn the
    session abandoned for a retry. Codex files' events are returned as they are."""
    lines = read_lines(con, list(events))
    return {path: on_branch(evs, lines[path])[0] if path in lines else evs for path, evs in events.items()}
