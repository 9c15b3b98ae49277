"""Read one source file (or the part of it not read before) into rows.

Per line: decode UTF-8, redact, parse JSON, map. A line that fails any step becomes a quarantine row
with the reason and a redacted excerpt; the file goes on. Redaction runs on the raw text before
parsing, so every field derived from a line is already clean.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from logmine.ingest.mapping import FileState, RecordShapeError, SessionMapper, session_id_from_path
from logmine.ingest.reader import iter_lines
from logmine.ingest.records import EXCERPT_CHARS, FileRecord
from logmine.ingest.redact import Redactor

HASH_SPAN = 4096
MAX_G0_BYTES = 1 << 30


@dataclass
class FileResult:
    """Rows read from one file, and the file's state after reading them."""

    record: FileRecord
    change: str  # new | grown | rewritten | unchanged | bad
    events: list[dict] = field(default_factory=list)
    sessions: list[dict] = field(default_factory=list)
    quarantine: list[dict] = field(default_factory=list)
    bytes_read: int = 0


def read_file(path: Path, prev: FileRecord | None, new_gen, redactor: Redactor, max_line: int) -> FileResult:
    """Ingest what is new in ``path`` given what the catalog knew of it (``prev``).

    ``new_gen()`` allocates a file generation; it is called only when the file's rows are (re)made.
    """
    source = str(path)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(0, "not a regular file")
    except OSError as exc:
        return bad_file(source, prev, new_gen, f"cannot read file: {exc.strerror or exc}", None)
    if unchanged(prev, st.st_size, st.st_mtime_ns):
        return FileResult(prev, "unchanged")
    if st.st_size == 0:
        return bad_file(source, prev, new_gen, "empty file", st)
    try:
        handle = open(path, "rb")
    except OSError as exc:
        return bad_file(source, prev, new_gen, f"cannot read file: {exc.strerror}", st)
    with handle:
        if prev and prev.error is None and prev.format != "g0" and _same_prefix(handle, prev, st.st_size):
            if st.st_size == prev.consumed:
                return FileResult(_replace(prev, size=st.st_size, mtime_ns=st.st_mtime_ns), "unchanged")
            state = FileState.from_json(prev.state)
            reader = _JsonlReader(source, state, prev.file_gen, redactor, max_line)
            reader.read(handle, prev.consumed)
            return reader.result(handle, st, "grown")
        gen = new_gen()
        change = "rewritten" if prev else "new"
        if _looks_like_g0(handle, source):
            return _read_g0(handle, source, gen, st, redactor, change)
        state = FileState(format=None, session_id=session_id_from_path(source))
        reader = _JsonlReader(source, state, gen, redactor, max_line)
        reader.read(handle, 0)
        return reader.result(handle, st, change)


def unchanged(prev: FileRecord | None, size: int, mtime_ns: int) -> bool:
    """A file read cleanly before whose size and mtime are as recorded is not opened again."""
    return prev is not None and prev.error is None and (prev.size, prev.mtime_ns) == (size, mtime_ns)


class _JsonlReader:
    """Line-by-line reading of G1, G2 and history files."""

    def __init__(self, source: str, state: FileState, gen: int, redactor: Redactor, max_line: int):
        self.mapper = SessionMapper(source, state, gen)
        self.redactor = redactor
        self.max_line = max_line
        self.quarantine: list[dict] = []
        self.consumed = 0
        self.start = 0

    def read(self, handle, start: int) -> None:
        self.start = self.consumed = start
        state = self.mapper.state
        for line in iter_lines(handle, start, self.max_line):
            if not line.terminated and line.data is not None and not _is_json(line.data):
                break  # a line still being written: it waits for the next run
            state.line_no += 1
            self.consumed = line.offset + line.length + (1 if line.terminated else 0)
            if line.data is None:
                self._quarantine(line.offset, f"line of {line.length} bytes exceeds the {self.max_line}-byte limit", "")
            elif line.data.strip():
                self._line(line.data, line.offset)

    def _line(self, data: bytes, offset: int) -> None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            excerpt = self.redactor.redact_text(data.decode("utf-8", "replace"))
            self._quarantine(offset, f"invalid UTF-8 at byte {exc.start}", excerpt)
            return
        clean = self.redactor.redact_json_line(text)
        try:
            obj = orjson.loads(clean)
        except orjson.JSONDecodeError as exc:
            self._quarantine(offset, f"invalid JSON: {exc}", self.redactor.redact_text(text))
            return
        if not isinstance(obj, dict):
            self._quarantine(offset, f"JSON {type(obj).__name__} where an object was expected", clean)
            return
        mapper, state = self.mapper, self.mapper.state
        if state.format is None:
            state.format = detect_format(self.mapper.source_path, obj)
        mark = (len(mapper.events), len(mapper.sessions), state.seq, state.meta_seen)
        try:
            getattr(mapper, f"{state.format}_line")(obj, state.line_no, offset, clean)
        except (RecordShapeError, TypeError, AttributeError, ValueError, KeyError) as exc:
            del mapper.events[mark[0]:], mapper.sessions[mark[1]:]
            state.seq, state.meta_seen = mark[2], mark[3]
            self._quarantine(offset, f"unexpected record shape: {exc}", clean)

    def _quarantine(self, offset: int, reason: str, excerpt: str) -> None:
        self.quarantine.append({
            "source_path": self.mapper.source_path, "line_no": self.mapper.state.line_no, "byte_offset": offset,
            "reason": reason, "excerpt": excerpt[:EXCERPT_CHARS], "file_gen": self.mapper.file_gen,
        })

    def result(self, handle, st: os.stat_result, change: str) -> FileResult:
        mapper = self.mapper
        state = mapper.state
        if not state.meta_seen and mapper.events and state.format in ("g1", "g2"):
            _headerless_session(mapper)
        head, tail = _hashes(handle, self.consumed)
        record = FileRecord(
            mapper.source_path, mapper.file_gen, state.format, st.st_size, st.st_mtime_ns, self.consumed,
            head, tail, state.to_json(), st.st_size - self.consumed, None,
        )
        return FileResult(record, change, mapper.events, mapper.sessions, self.quarantine,
                          self.consumed - self.start)


def detect_format(source_path: str, first: dict) -> str:
    """G2 lines are wrapped (``type`` + ``payload``); history lines are prompts; the rest is G1."""
    if source_path.endswith("history.jsonl") or {"session_id", "ts", "text"} <= first.keys():
        return "history"
    if "payload" in first and "type" in first:
        return "g2"
    return "g1"


def _read_g0(handle, source: str, gen: int, st: os.stat_result, redactor: Redactor, change: str) -> FileResult:
    handle.seek(0)
    data = handle.read(MAX_G0_BYTES + 1)

    def quarantine(reason: str, excerpt: str) -> FileResult:  # the whole document is one record
        row = {"source_path": source, "line_no": None, "byte_offset": 0, "reason": reason,
               "excerpt": excerpt[:EXCERPT_CHARS], "file_gen": gen}
        return FileResult(_record(source, gen, "g0", st, len(data), None), change, quarantine=[row],
                          bytes_read=len(data))

    if len(data) > MAX_G0_BYTES:
        return quarantine(f"JSON document larger than {MAX_G0_BYTES} bytes", "")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return quarantine(f"invalid UTF-8 at byte {exc.start}", redactor.redact_text(data.decode("utf-8", "replace")))
    clean = redactor.redact_json_line(text)
    try:
        doc = orjson.loads(clean)
    except orjson.JSONDecodeError as exc:
        return quarantine(f"invalid JSON document: {exc}", redactor.redact_text(text))
    state = FileState(format="g0", session_id=session_id_from_path(source))
    mapper = SessionMapper(source, state, gen)
    items = doc.get("items") if isinstance(doc, dict) else None
    try:
        raw_items = [orjson.dumps(i).decode() for i in items] if isinstance(items, list) else []
        mapper.g0_document(doc if isinstance(doc, dict) else {}, raw_items)
    except (RecordShapeError, TypeError, AttributeError, ValueError, KeyError) as exc:
        return quarantine(f"unexpected document shape: {exc}", clean)
    return FileResult(_record(source, gen, "g0", st, len(data), state.to_json()), change,
                      mapper.events, mapper.sessions, bytes_read=len(data))


def _headerless_session(mapper: SessionMapper) -> None:
    """A file that never had its session_meta line (truncated at the start) still gets a session."""
    state = mapper.state
    state.meta_seen = True
    first_ts = next((e["ts"] for e in mapper.events if e["ts"] is not None), None)
    mapper.sessions.append({"session_id": state.session_id, "source_path": mapper.source_path,
                            "format": state.format, "started_at": first_ts, "file_gen": mapper.file_gen})


def bad_file(source: str, prev: FileRecord | None, new_gen, reason: str, st=None) -> FileResult:
    """A file (or listed path) that yields no rows: one quarantine row, reported once per change."""
    size = st.st_size if st else -1
    mtime = st.st_mtime_ns if st else -1
    if prev and prev.error == reason and (prev.size, prev.mtime_ns) == (size, mtime):
        return FileResult(prev, "unchanged")
    gen = new_gen()
    record = FileRecord(source, gen, None, size, mtime, 0, None, None, None, 0, reason)
    row = {"source_path": source, "line_no": None, "byte_offset": None, "reason": reason, "excerpt": "",
           "file_gen": gen}
    return FileResult(record, "bad", quarantine=[row])


def _record(source: str, gen: int, fmt: str, st, consumed: int, state: str | None) -> FileRecord:
    return FileRecord(source, gen, fmt, st.st_size, st.st_mtime_ns, consumed, None, None, state, 0, None)


def _replace(record: FileRecord, **changes) -> FileRecord:
    return FileRecord(**{**vars(record), **changes})


def _looks_like_g0(handle, source: str) -> bool:
    handle.seek(0)
    head = handle.read(64).lstrip()
    return source.endswith(".json") or head.startswith(b"{\n") or head.startswith(b"{\r\n")


def _is_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def _hashes(handle, consumed: int) -> tuple[str, str]:
    handle.seek(0)
    head = hashlib.sha1(handle.read(min(consumed, HASH_SPAN))).hexdigest()
    start = max(0, consumed - HASH_SPAN)
    handle.seek(start)
    tail = hashlib.sha1(handle.read(consumed - start)).hexdigest()
    return head, tail


def _same_prefix(handle, prev: FileRecord, size: int) -> bool:
    """The bytes read last time are still there: the file only grew (or was touched)."""
    return size >= prev.consumed and _hashes(handle, prev.consumed) == (prev.head_hash, prev.tail_hash)
