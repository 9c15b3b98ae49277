"""Map decoded Codex records (one JSON object each) to canonical ``events`` and ``sessions`` rows.

One :class:`SessionMapper` serves one source file. It is fed records in file order and keeps the
little state a record needs from earlier ones (session id, current turn, event counter); that state
is a plain dataclass so an incremental run can resume a file where the previous run stopped.

Shapes follow ``docs/codex-format.md``: response items appear bare in G0/G1 and wrapped in G2;
event messages, turn_context and compacted records exist only in G2.
A record whose fields have the wrong types raises :class:`RecordShapeError`; the caller quarantines
that line and goes on.

A forked session (a sub-agent spawned with its parent's context, a conversation forked or
backtracked in the TUI) starts its file with its own ``session_meta`` and then a copy of the parent's
rollout: the parent's ``session_meta`` line and every item after it, re-stamped as they are written.
The events of that copy carry ``copied_from`` (the parent's id), so that no stage takes the parent's
requests and work for the child's. The copy ends at the first line that is the child's own: one
written more than :data:`COPY_GAP_S` after the line before it (the copy is written in one burst), or
one naming a turn that began after the child was created (turn and session ids are UUIDv7 in the
CLIs that name turns).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

import orjson

from logmine.ingest.injected import injected_kind
from logmine.ingest.records import EventRows, ghost_fields
from logmine.ingest.records import parse_ts as _ts
from logmine.ingest.shapes import (
    UNSET,
    CompactedLine,
    EventMsg,
    EventMsgLine,
    G0Document,
    G0Item,
    G2Line,
    HistoryLine,
    LegacyLine,
    Payload,
    RecordShapeError,
    ResponseItem,
    ResponseItemLine,
    SessionMeta,
    SessionMetaLine,
    TurnContextLine,
)
from logmine.ingest.tools import (
    content_text,
    duration_seconds,
    output_text,
    parse_arguments,
    parse_output,
    patch_input,
    shell_call,
)
from logmine.patch import PatchError, parse_patch

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")
_CWD = re.compile(r"<cwd>(.*?)</cwd>", re.S)
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
#: The longest pause between two lines of a copied parent history (it is written in one burst,
#: milliseconds apart; the child's own first line follows it 0.6 s later at the least in real files).
COPY_GAP_S = 1.0
_EVENT_KINDS = {
    "user_message": "user_message",
    "agent_message": "assistant_message",
    "agent_reasoning": "reasoning",
    "agent_reasoning_raw_content": "reasoning",
    "token_count": "token_usage",
    "turn_aborted": "aborted",
    "context_compacted": "compaction",
}


@dataclass
class FileState:
    """What mapping a file's next record needs to know about the records before it."""

    format: str
    session_id: str | None = None
    seq: int = 0
    line_no: int = 0
    turn_id: str | None = None
    turn_n: int = 0
    explicit_turns: bool = False  # the file names its turns (G2 >= ~0.10x); else they are counted
    meta_seen: bool = False
    copied_from: str | None = None  # inside a forked session's copy of its parent's history: the parent
    copy_ts: str | None = None  # the timestamp of the copy's latest line
    claude: dict | None = None  # a Claude Code file: its mapper's own state (logmine.ingest.claude)

    def to_json(self) -> str:
        return orjson.dumps(asdict(self)).decode()

    @classmethod
    def from_json(cls, text: str) -> FileState:
        return cls(**orjson.loads(text))


@dataclass
class SessionMapper:
    """Accumulates the rows produced by one file's records."""

    source_path: str
    state: FileState
    file_gen: int
    events: EventRows = field(default_factory=EventRows)
    sessions: list[dict] = field(default_factory=list)

    # -- entry points, one per on-disk generation ---------------------------------------------

    def g2_line(self, line: G2Line, line_no: int, offset: int | None, raw: str | bytes) -> None:
        """A typed-wrapper line ``{timestamp, type, payload}`` (:func:`~.shapes.decode_g2`)."""
        ctx = _Ctx(line_no, offset, _stamp(line.timestamp), raw)
        payload = line.payload
        if self.state.copied_from is not None:
            self._copy_goes_on(ctx.ts, payload)
        if isinstance(line, ResponseItemLine):
            self._track_turn(payload)
            self._response_item(payload, ctx)
        elif isinstance(line, EventMsgLine):
            self._track_turn(payload)
            self._event_msg(payload, ctx)
        elif isinstance(line, SessionMetaLine):
            self._session_meta(payload, ctx)
        elif isinstance(line, TurnContextLine):
            self._track_turn(payload)
            self._emit(ctx, "turn_context", "turn_context", model=_str(payload.model), workdir=_str(payload.cwd))
        elif isinstance(line, CompactedLine):
            self._emit(ctx, "compaction", "compacted", text=_str(payload.message))
        elif line.type == "token_usage_record":
            self._emit(ctx, "token_usage", "token_usage_record")
        else:
            self._emit(ctx, "other", str(line.type))

    def g1_line(self, line: LegacyLine, line_no: int, offset: int | None, raw: str | bytes) -> None:
        """A legacy JSONL line (:func:`~.shapes.decode_legacy`): the bare SessionMeta header, a bare
        ResponseItem or a state line."""
        ctx = _Ctx(line_no, offset, None, raw)
        record_type = line.record_type
        header = record_type == "session_meta" or (not self.state.meta_seen and line.type is UNSET
                                                   and line.id is not UNSET)
        line.type = None if line.type is UNSET else line.type
        line.id = None if line.id is UNSET else line.id
        if record_type in ("response", "event"):  # short-lived tagged draft of Sept 2025
            (self._response_item if record_type == "response" else self._event_msg)(line, ctx)
        elif header:
            self._session_meta(line, _Ctx(line_no, offset, _stamp(line.timestamp), raw))
        elif record_type is not None:
            self._emit(ctx, "other", f"record_type/{record_type}")
        else:
            self._response_item(line, ctx)

    def g0_document(self, doc: G0Document, raw_items: list[str]) -> None:
        """The TypeScript CLI's ``{session, items}`` file; items may be Responses or chat-style."""
        session = doc.session
        self._session_meta(session, _Ctx(None, None, _stamp(session.timestamp), None))
        for index, item in enumerate(doc.items):
            ctx = _Ctx(index + 1, None, None, raw_items[index])
            if item.type is not UNSET:
                self._response_item(item, ctx)
            else:
                item.type = None
                self._chat_message(item, ctx)

    def history_line(self, line: HistoryLine, line_no: int, offset: int | None, raw: str | bytes) -> None:
        """A ``history.jsonl`` prompt: ``{session_id, ts, text}``."""
        _require(isinstance(line.text, str), "history entry without text")
        _require(isinstance(line.session_id, str), "history entry without session_id")
        ctx = _Ctx(line_no, offset, _epoch(line.ts), raw)
        self._emit(ctx, "user_message", "history", session_id=line.session_id, role="user", text=line.text,
                   is_injected=False)

    # -- record kinds -------------------------------------------------------------------------

    def _session_meta(self, p: SessionMeta | LegacyLine, ctx: _Ctx) -> None:
        sid = _text(p.id, "id")
        if self.state.meta_seen:  # resumed files repeat it; the first one names the file
            if sid is not None and sid != self.state.session_id:
                self._fork_of(sid, ctx)
            self._emit(ctx, "session_meta", "session_meta")
            return
        self._emit(ctx, "session_meta", "session_meta")
        self.state.meta_seen = True
        sid = sid or self.state.session_id
        self.state.session_id = sid
        self.events.set_missing("session_id", sid)  # events before the header (rare) get the id too
        source, parent = _source(p.source)
        git = p.git if isinstance(p.git, dict) else {}
        instructions = p.instructions
        if instructions is None and isinstance(p.base_instructions, dict):
            instructions = p.base_instructions.get("text")
        self.sessions.append(
            {
                "session_id": sid,
                "source_path": self.source_path,
                "format": self.state.format,
                "cli_version": _str(p.cli_version),
                "originator": _str(p.originator),
                "source": source,
                "parent_session_id": parent or _str(p.parent_thread_id),
                "forked_from_id": _str(p.forked_from_id),
                "model": _text(p.model, "model"),
                "model_provider": _str(p.model_provider),
                "cwd": _text(p.cwd, "cwd"),
                "git_commit": _str(git.get("commit_hash")),
                "git_branch": _str(git.get("branch")),
                "git_repo_url": _str(git.get("repository_url")),
                "started_at": _ts(p.timestamp) or _ts(ctx.ts),
                "instructions": _str(instructions),
                "file_gen": self.file_gen,
            }
        )

    def _fork_of(self, parent: str, ctx: _Ctx) -> None:
        """Another session's header after this file's own: the parent's history, copied, follows.

        A header inside the copy (the parent was itself a fork) belongs to the copy. The fork is
        linked to its parent here when its header does not say so (older CLIs' headers have no
        ``forked_from_id``). Without a timestamp (G1) the copy cannot be told from what follows:
        only the header is marked.
        """
        state = self.state
        if state.copied_from is not None:
            return
        state.copied_from, state.copy_ts = parent, ctx.ts
        if self.sessions and self.sessions[0]["forked_from_id"] is None:
            self.sessions[0]["forked_from_id"] = parent

    def _copy_goes_on(self, ts: str | None, payload) -> None:
        """Called for each line inside a copied history: does the copy end before this line?"""
        state = self.state
        now, last = _ts(ts), _ts(state.copy_ts)
        if isinstance(payload, Payload):
            turn = payload.turn_id
        else:
            turn = payload.get("turn_id") if isinstance(payload, dict) else None
        if now is None or last is None or (now - last).total_seconds() > COPY_GAP_S \
                or (isinstance(turn, str) and _began_after(turn, state.session_id)):
            state.copied_from = state.copy_ts = None
        else:
            state.copy_ts = ts

    def _response_item(self, p: ResponseItem, ctx: _Ctx) -> None:
        kind = p.type
        rt = f"response_item/{kind}"
        if kind == "message":
            self._message(p.role, content_text(p.content), ctx, rt)
        elif kind == "reasoning":
            text = content_text(p.summary) or content_text(p.content)
            self._emit(ctx, "reasoning", rt, role="assistant", text=text)
        elif kind in ("function_call", "custom_tool_call"):
            freeform = isinstance(p.input, str)
            self._tool_call(p.name, p.input if freeform else _str(p.arguments), freeform, (p.call_id, p.id), ctx, rt)
        elif kind == "local_shell_call":
            action = p.action if isinstance(p.action, dict) else {}
            self._tool_call("local_shell", orjson.dumps(action).decode(), False, (p.call_id or p.id, None), ctx, rt)
        elif kind in _OUTPUT_TYPES:
            self._tool_output(p.call_id, output_text(p.output), ctx, rt)
        elif kind == "web_search_call":
            action = p.action
            self._emit(ctx, "tool_call", rt, role="assistant", tool_name="web_search", status=_str(p.status),
                       call_id=_text(p.call_id or p.id, "call_id"),
                       arguments=None if action is None else orjson.dumps(action).decode())
        elif kind in ("compaction", "compaction_summary"):
            self._emit(ctx, "compaction", rt)
        elif kind == "ghost_snapshot":
            commit, untracked = ghost_fields(p.ghost_commit)
            self._emit(ctx, "other", rt, ghost_commit=commit, ghost_untracked=untracked)
        else:
            self._emit(ctx, "other", rt)

    def _event_msg(self, p: EventMsg | LegacyLine, ctx: _Ctx) -> None:
        kind = p.type
        rt = f"event_msg/{kind}"
        canonical = _EVENT_KINDS.get(kind)
        if kind == "user_message":
            text = _str(_given(p.message))
            injected = injected_kind("user", text)
            self._emit(ctx, "user_message", rt, role="user", text=text, is_injected=injected is not None,
                       injected_kind=injected)
        elif kind in ("agent_message", "agent_reasoning", "agent_reasoning_raw_content"):
            text = p.text if p.message is UNSET else p.message
            self._emit(ctx, canonical, rt, role="assistant", text=_str(text))
        elif kind == "turn_aborted":
            self._emit(ctx, "aborted", rt, text=_str(p.reason))
        elif kind == "exec_command_end":
            self._command_end(p.command, p.call_id, p.aggregated_output, p.exit_code, p.duration, p.status,
                              p.process_id, ctx, rt)
        elif kind == "item_completed" and isinstance(p.item, dict) and p.item.get("type") == "CommandExecution":
            item = p.item
            self._command_end(item.get("command"), item.get("id"), item.get("aggregated_output"),
                              item.get("exit_code"), item.get("duration"), item.get("status"),
                              item.get("process_id"), ctx, f"{rt}/CommandExecution")
        elif canonical:
            self._emit(ctx, canonical, rt)
        else:
            self._emit(ctx, "other", rt)

    def _message(self, role, text: str | None, ctx: _Ctx, rt: str) -> None:
        injected = injected_kind(role, text)
        if role == "user" and injected is None and not self.state.explicit_turns:
            self.state.turn_n += 1
            self.state.turn_id = f"{self.state.session_id or 'session'}:{self.state.turn_n}"
        if injected == "environment_context" and self.sessions and self.sessions[0]["cwd"] is None:
            found = _CWD.search(text)  # G0/G1 headers lack cwd; the injected context names it
            self.sessions[0]["cwd"] = found.group(1).strip() if found else None
        kind = "assistant_message" if role == "assistant" else "user_message"
        self._emit(ctx, kind, rt, role=_str(role), text=text, is_injected=injected is not None,
                   injected_kind=injected)

    def _tool_call(self, name, arguments: str | None, freeform: bool, ids: tuple, ctx: _Ctx, rt: str) -> None:
        """A tool call: ``arguments`` as written (JSON text; a custom tool's raw input when ``freeform``);
        its id is the first of ``ids`` (``call_id``, ``id``) given."""
        name = _text(name, "name") or ""
        args, status = ({}, None) if freeform else parse_arguments(arguments)
        shell = shell_call(name, args)
        command = shell.command if shell else None
        call_id = _text(ids[0], "call_id") or _text(ids[1], "id")
        patch = patch_input(name, args, arguments if freeform else None, command)
        ops = []
        if patch is not None:
            try:
                ops = parse_patch(patch)
            except PatchError as exc:
                status = f"invalid patch: {exc}"
        self._emit(ctx, "tool_call", rt, role="assistant", tool_name=name, call_id=call_id, arguments=arguments,
                   command=command, workdir=shell.workdir if shell else None, status=status,
                   exec_session_id=shell.exec_session_id if shell else None)
        for op in ops:
            self._emit(ctx, "patch", rt, role="assistant", tool_name="apply_patch", call_id=call_id, raw=None,
                       patch_op=op.op, path=op.path, move_path=op.move_to,
                       arguments=orjson.dumps(op.to_dict()).decode())

    def _tool_output(self, call_id, text: str, ctx: _Ctx, rt: str) -> None:
        out = parse_output(text)
        self._emit(ctx, "tool_output", rt, role="tool", call_id=_text(call_id, "call_id"), text=out.body,
                   exit_code=_exit_code(out.exit_code), duration_s=out.duration_s, exec_session_id=out.exec_session_id,
                   status=out.status)

    def _command_end(self, argv, call_id, output, exit_code, duration, status, process_id, ctx: _Ctx,
                     rt: str) -> None:
        """A command's end event (``exec_command_end``, app-server ``CommandExecution`` items)."""
        command = shell_call("shell", {"command": argv}).command if argv is not None else None
        self._emit(ctx, "tool_output", rt, role="tool", call_id=_text(call_id, "call_id"), command=command,
                   text=_str(output), exit_code=_exit_code(exit_code), duration_s=duration_seconds(duration),
                   status=_str(status), exec_session_id=_str(process_id))

    def _chat_message(self, item: G0Item, ctx: _Ctx) -> None:
        """Chat-completions-shaped items written by forked TypeScript CLIs."""
        role = item.role
        if role == "tool":
            self._tool_output(item.tool_call_id, output_text(item.content), ctx, "chat/tool")
            return
        if role == "assistant" and item.reasoning:
            self._emit(ctx, "reasoning", "chat/reasoning", role="assistant", text=_str(item.reasoning))
        text = content_text(item.content)
        if text or role != "assistant":
            self._message(role, text, ctx, "chat/message")
        for call in item.tool_calls or []:
            _require(isinstance(call, dict), "tool_calls entry is not an object")
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            self._tool_call(fn.get("name"), _str(fn.get("arguments")), False, (call.get("id"), None), ctx,
                            "chat/tool_call")

    # -- helpers ------------------------------------------------------------------------------

    def _track_turn(self, p: Payload) -> None:
        turn_id = p.turn_id
        if turn_id is None:
            meta = p.internal_chat_message_metadata_passthrough
            turn_id = meta.get("turn_id") if isinstance(meta, dict) else None
        if isinstance(turn_id, str) and turn_id:
            self.state.explicit_turns = True
            self.state.turn_id = turn_id

    def _emit(self, ctx: _Ctx, kind: str, record_type: str, is_injected: bool | None = False, **fields) -> None:
        state = self.state
        if state.copied_from is not None:
            fields["copied_from"] = state.copied_from
        self.events.append((state.session_id, state.seq, ctx.line_no, ctx.offset, ctx.ts, state.turn_id, kind,
                            record_type, self.source_path, state.format, ctx.raw, self.file_gen, bool(is_injected)),
                           fields)
        state.seq += 1
        ctx.raw = None  # a line's raw text is stored once, on its first event


@dataclass
class _Ctx:
    line_no: int | None
    offset: int | None
    ts: str | None  # the record's ISO timestamp as written; parsed column-wise (records.EventRows.table)
    raw: str | bytes | None  # the line as stored (its UTF-8 bytes when redaction left it as it was)


def session_id_from_path(path: str) -> str:
    """Rollout file names end in the session's UUID (``rollout-<time>-<uuid>.jsonl``); a file named
    otherwise gets a stable id derived from its path until its header names the session."""
    found = _UUID.findall(path.rsplit("/", 1)[-1])
    return found[-1] if found else "file-" + hashlib.sha1(path.encode()).hexdigest()[:16]


def _began_after(turn_id: str, session_id: str | None) -> bool:
    """Did the turn begin after the session was created? Only UUIDv7 ids (their first 48 bits are
    the time in milliseconds) tell; any other id says no."""
    if not session_id or not _UUID7.fullmatch(turn_id) or not _UUID7.fullmatch(session_id):
        return False
    return turn_id[:13] >= session_id[:13]  # same-width lowercase hex: text order is time order


def _require(condition: bool, message: str) -> None:
    """Raise :class:`RecordShapeError` unless ``condition``; for constant messages (a formatted one
    is built before the call, on every record: those checks raise inline)."""
    if not condition:
        raise RecordShapeError(message)


def _text(value, name: str) -> str | None:
    """A field that must be a string when present (ids, names, paths)."""
    if value is None or isinstance(value, str):
        return value
    raise RecordShapeError(f"{name} is {type(value).__name__}, expected a string")


_INT64 = (-(2**63), 2**63 - 1)


def _exit_code(value) -> int | None:
    """An exit code must be an integer that fits the int64 column."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordShapeError(f"exit_code is {type(value).__name__}, expected an integer")
    if not _INT64[0] <= value <= _INT64[1]:
        raise RecordShapeError(f"exit_code {value} is outside the int64 range")
    return value


def _given(value):
    """A field declared ``UNSET`` by default (:mod:`.shapes`), absent read as null."""
    return None if value is UNSET else value


def _epoch(value) -> str | None:
    """A history entry's ``ts`` (seconds since the epoch) as ISO text; None where it is no time a
    timestamp can hold (the system's own call fails with an OSError there, which read the file as unreadable)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        return datetime.fromtimestamp(value, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _str(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def _stamp(value) -> str | None:
    """A record's timestamp as the events' ``ts`` column takes it: the text, parsed with the column."""
    return value if isinstance(value, str) else None


def _source(value) -> tuple[str | None, str | None]:
    """``"cli"`` / ``{"subagent": "review"}`` / ``{"subagent": {"thread_spawn": {...}}}`` -> (label, parent)."""
    if value is None or isinstance(value, str):
        return value, None
    if isinstance(value, dict) and "subagent" in value:
        sub = value["subagent"]
        if isinstance(sub, str):
            return f"subagent:{sub}", None
        if isinstance(sub, dict) and sub:
            name, detail = next(iter(sub.items()))
            parent = detail.get("parent_thread_id") if isinstance(detail, dict) else None
            return f"subagent:{name}", _str(parent)
    return _str(value), None
