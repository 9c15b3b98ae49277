"""The Codex record shapes ingest reads, as msgspec types: each line is decoded straight into them.

Only the fields the mapping (:mod:`.mapping`) reads are declared; the decoder skips every other field
without building a Python value for it (a reasoning item's ``encrypted_content``, a token count's
rate limits). Field values stay untyped (``Any``): Codex wrote many of them with other types over its
generations, and the mapping decides per record kind which ones it requires (a wrong type there
quarantines the line with the field's name) and which it reads leniently.

What the types do check is the frame: a typed-wrapper line (G2) of a known kind must carry an object
payload. :func:`decode_g2` names that as the line's quarantine reason. A field declared with the
default ``UNSET`` is one whose presence matters (``"message"`` present but null is not the same as
absent); everywhere else absent and null are the same.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec
import orjson

from logmine.errors import LogmineError

UNSET: Any = msgspec.UNSET


class RecordShapeError(LogmineError, ValueError):
    """A record is valid JSON but its fields do not have the types its kind requires."""


class Payload(msgspec.Struct):
    """What every G2 payload may carry: the turn it belongs to (newer CLIs name it)."""

    turn_id: Any = None
    internal_chat_message_metadata_passthrough: Any = None  # {"turn_id": ...} where turn_id is not given


class SessionMeta(Payload):
    """A session's header: G2's ``session_meta`` payload, G1's first line, G0's ``session``."""

    id: Any = None
    timestamp: Any = None
    source: Any = None
    parent_thread_id: Any = None
    forked_from_id: Any = None
    git: Any = None
    base_instructions: Any = None
    instructions: Any = None
    cli_version: Any = None
    originator: Any = None
    model: Any = None
    model_provider: Any = None
    cwd: Any = None


class ResponseItem(Payload):
    """A Responses API item (every ``type``: message, reasoning, tool calls and outputs, ...)."""

    type: Any = None
    role: Any = None
    content: Any = None
    summary: Any = None
    name: Any = None
    input: Any = None
    arguments: Any = None
    call_id: Any = None
    id: Any = None
    output: Any = None
    action: Any = None
    status: Any = None
    ghost_commit: Any = None


class EventMsg(Payload):
    """An ``event_msg`` payload (every ``type``: user and agent messages, command ends, token counts, ...)."""

    type: Any = None
    message: Any = UNSET
    text: Any = None
    reason: Any = None
    call_id: Any = None
    command: Any = None
    aggregated_output: Any = None
    exit_code: Any = None
    duration: Any = None
    status: Any = None
    process_id: Any = None
    item: Any = None


class TurnContext(Payload):
    model: Any = None
    cwd: Any = None


class Compacted(Payload):
    message: Any = None


class _Wrapped(msgspec.Struct, tag_field="type", kw_only=True):
    timestamp: Any = None


class SessionMetaLine(_Wrapped, tag="session_meta"):
    payload: SessionMeta


class ResponseItemLine(_Wrapped, tag="response_item"):
    payload: ResponseItem


class EventMsgLine(_Wrapped, tag="event_msg"):
    payload: EventMsg


class TurnContextLine(_Wrapped, tag="turn_context"):
    payload: TurnContext


class CompactedLine(_Wrapped, tag="compacted"):
    payload: Compacted


class OtherLine(msgspec.Struct):
    """A G2 line of any other kind (``token_usage_record``, kinds newer than this code)."""

    timestamp: Any = None
    type: Any = None
    payload: Any = None


G2Line = SessionMetaLine | ResponseItemLine | EventMsgLine | TurnContextLine | CompactedLine | OtherLine
_KNOWN = (SessionMetaLine, ResponseItemLine, EventMsgLine, TurnContextLine, CompactedLine)
PAYLOAD_KINDS = frozenset(cls.__struct_config__.tag for cls in _KNOWN)


class LegacyLine(ResponseItem):
    """A G1 line: the bare session header, a bare response item, or the short-lived tagged draft of
    Sept 2025 (``record_type`` ``response``/``event``/``session_meta``/``state``), all in one shape.

    ``type`` and ``id`` default to ``UNSET``: a header is told by having an ``id`` and no ``type``.
    """

    record_type: Any = None
    type: Any = UNSET
    id: Any = UNSET
    timestamp: Any = None
    source: Any = None
    parent_thread_id: Any = None
    forked_from_id: Any = None
    git: Any = None
    base_instructions: Any = None
    instructions: Any = None
    cli_version: Any = None
    originator: Any = None
    model: Any = None
    model_provider: Any = None
    cwd: Any = None
    message: Any = UNSET
    text: Any = None
    reason: Any = None
    command: Any = None
    aggregated_output: Any = None
    exit_code: Any = None
    duration: Any = None
    process_id: Any = None
    item: Any = None


class HistoryLine(msgspec.Struct):
    """A ``history.jsonl`` prompt."""

    session_id: Any = None
    ts: Any = None
    text: Any = None


class G0Item(ResponseItem):
    """An item of a TypeScript CLI's document: a response item (it has a ``type``) or a
    chat-completions message written by forked CLIs."""

    type: Any = UNSET
    reasoning: Any = None
    tool_calls: Any = None
    tool_call_id: Any = None


class G0Document(msgspec.Struct):
    session: SessionMeta
    items: list[G0Item]


_G2 = msgspec.json.Decoder(Union[_KNOWN])  # noqa: UP007 - a union made of a tuple of types
_OTHER = msgspec.json.Decoder(OtherLine)
_LEGACY = msgspec.json.Decoder(LegacyLine)
_HISTORY = msgspec.json.Decoder(HistoryLine)


def decode_g2(data: bytes | str) -> G2Line:
    """A typed-wrapper line; a known kind whose payload is not an object raises :class:`RecordShapeError`."""
    try:
        return _G2.decode(data)
    except msgspec.ValidationError:
        line = _decode(_OTHER, data)  # a kind of its own (or no kind): decoded without a payload type
    if isinstance(line.type, str) and line.type in PAYLOAD_KINDS:
        raise RecordShapeError(f"{line.type} payload is not an object")
    if isinstance(line.type, (dict, list)):  # a scalar kind is kept, as an unknown kind named by its text
        raise RecordShapeError(f"type is {type(line.type).__name__}, expected a string")
    return line


def decode_legacy(data: bytes | str) -> LegacyLine:
    """A legacy JSONL line (G1), whichever of its shapes."""
    return _decode(_LEGACY, data)


def decode_history(data: bytes | str) -> HistoryLine:
    """A ``history.jsonl`` line."""
    return _decode(_HISTORY, data)


def decode_object(data: bytes | str) -> dict:
    """A line as a plain dict (Claude Code lines, read by their own mapper)."""
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise NotAnObject(data)
    return value


def g0_document(doc: dict) -> G0Document:
    """A TypeScript CLI's parsed document, typed; the wrong frame raises :class:`RecordShapeError`."""
    if not isinstance(doc.get("session"), dict) or not isinstance(doc.get("items"), list):
        raise RecordShapeError("G0 file lacks session/items")
    for index, item in enumerate(doc["items"]):
        if not isinstance(item, dict):
            raise RecordShapeError(f"item {index} is not an object")
    return msgspec.convert(doc, G0Document)


def _decode(decoder: msgspec.json.Decoder, data: bytes | str):
    """Decode a line whose only frame is a JSON object; the caller has checked it is one."""
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise NotAnObject(data) from exc


class NotAnObject(LogmineError, ValueError):
    """A line that is valid JSON but no object; :func:`json_problem` says what it is."""

    def __init__(self, data: bytes | str):
        super().__init__("not a JSON object")
        self.data = data


def json_problem(data: bytes | str, error: Exception) -> str:
    """Why a line was not decoded (``error``, what the decoder raised): its JSON error, as orjson words
    it, or the kind of value it holds instead of an object."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return f"invalid JSON: {exc}"
    if isinstance(value, dict):  # JSON that orjson reads and msgspec does not
        return f"invalid JSON: {error}"
    return f"JSON {type(value).__name__} where an object was expected"
