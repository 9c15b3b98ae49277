"""Read one source file (or the part of it not read before) into rows.

Per line: decode UTF-8, redact, parse JSON, map. A line that fails any step becomes a quarantine row
with the reason and a redacted excerpt; the file goes on. Redaction runs on the raw text before
parsing, so every field derived from a line is already clean; lines are redacted in batches (one
prefilter pass per batch) and mapped one by one, in order.

Change detection: a file whose size and mtime are as recorded is not opened. Otherwise its content
(decompressed, for ``.gz``/``.zst``) is hashed in full (xxh3-128) up to the byte read last time; the
same hash means it only grew, so reading resumes there, else it is read again from the start. The
hash covers every byte read, so a same-size edit anywhere is seen.

The layout (one G0 JSON document, or JSON lines) is told from the first line's content: a G0
document opens with ``{`` alone on its line or is one line with ``session`` and ``items``. A UTF-8
byte-order mark at the start of the content is dropped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import orjson
import xxhash

from logmine.ingest.claude import ClaudeMapper, is_claude_line
from logmine.ingest.discover import is_claude_name
from logmine.ingest.mapping import FileState, SessionMapper, session_id_from_path
from logmine.ingest.reader import Block, ContentStream, iter_blocks, iter_lines, open_content
from logmine.ingest.records import EXCERPT_CHARS, EventRows, FileRecord, parse_ts
from logmine.ingest.shapes import (
    NotAnObject,
    RecordShapeError,
    decode_g2,
    decode_history,
    decode_legacy,
    decode_object,
    g0_document,
    json_problem,
)
from logmine.redact import Redactor

_DECODERS = {"g2": decode_g2, "g1": decode_legacy, "history": decode_history}
MAX_G0_BYTES = 1 << 30
BOM = b"\xef\xbb\xbf"
RESUMABLE = frozenset({"g1", "g2", "history", "claude"})  # formats read line by line, so a grown file resumes
# Lines are redacted in batches (one prefilter pass per batch, :meth:`Redactor.redact_jsonl`); a
# batch ends once it holds this many lines or bytes, whichever comes first, so memory stays bounded
# (a chunk's lines, at most :data:`~logmine.ingest.reader.CHUNK` bytes, join a batch together).
BATCH_LINES = 4096
BATCH_BYTES = 16 << 20


@dataclass
class FileResult:
    """Rows read from one file, and the file's state after reading them."""

    record: FileRecord
    change: str  # new | grown | rewritten | unchanged | bad
    events: EventRows = field(default_factory=EventRows)
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
        if is_claude_name(source):  # Claude Code leaves empty session files (2.0's --resume): not an error
            return FileResult(FileRecord(source, new_gen(), None, 0, st.st_mtime_ns, 0, None, None, None), "empty")
        return bad_file(source, prev, new_gen, "empty file", st)
    try:
        return _read_changed(path, prev, new_gen, redactor, max_line, st)
    except OSError as exc:  # unreadable, or a compressed stream that is corrupt (not merely cut short)
        return bad_file(source, prev, new_gen, f"cannot read file: {exc.strerror or exc}", st)


def _read_changed(path: Path, prev: FileRecord | None, new_gen, redactor: Redactor, max_line: int,
                  st: os.stat_result) -> FileResult:
    source = str(path)
    grown = False  # the file grew, but is read again whole: its session row was still open (below)
    if prev and prev.error is None and prev.format in RESUMABLE and prev.content_hash and prev.state:
        state = FileState.from_json(prev.state)
        with open_content(path) as content:
            hasher = xxhash.xxh3_128()
            _feed(content, hasher, prev.consumed)
            if content.pos == prev.consumed and hasher.hexdigest() == prev.content_hash:
                # a Claude Code file read before its first answer: its session row still takes fields from
                # the lines to come, so it is read again whole (a new generation), as one read would make it
                grown = bool((state.claude or {}).get("open"))
                if not grown:
                    reader = _JsonlReader(source, state, prev.file_gen, redactor, max_line)
                    reader.read(content, prev.consumed, hasher)
                    return reader.result(st, "grown" if reader.consumed > prev.consumed else "unchanged")
    gen = new_gen()
    change = ("grown" if grown else "rewritten") if prev else "new"
    if _is_g0(path, max_line):
        with open_content(path) as content:
            return _read_g0(content, source, gen, st, redactor, change)
    with open_content(path) as content:
        reader = _JsonlReader(source, FileState(format=None, session_id=session_id_from_path(source)), gen,
                              redactor, max_line)
        reader.read(content, 0, xxhash.xxh3_128())
        return reader.result(st, change)


def unchanged(prev: FileRecord | None, size: int, mtime_ns: int) -> bool:
    """A file read cleanly before whose size and mtime are as recorded is not opened again."""
    return prev is not None and prev.error is None and (prev.size, prev.mtime_ns) == (size, mtime_ns)


@dataclass
class _LineBatch:
    """Lines waiting to be redacted together: about :data:`BATCH_LINES` lines or :data:`BATCH_BYTES`."""

    numbers: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, line_no: int, offset: int, data: bytes) -> None:
        self.numbers.append(line_no)
        self.offsets.append(offset)
        self.data.append(data)
        self.size += len(data)

    def extend(self, first: int, block: Block) -> None:
        """A block's lines, numbered from ``first``; blank lines are skipped, a BOM at offset 0 dropped."""
        lines = block.lines
        if block.offsets[0] == 0:
            lines = [lines[0].removeprefix(BOM), *lines[1:]]
        if all(map(bytes.strip, lines)):  # no blank line (strip returns the line itself when it can)
            self.numbers.extend(range(first, first + len(lines)))
            self.offsets.extend(block.offsets)
            self.data.extend(lines)
        else:
            kept = [i for i, data in enumerate(lines) if data.strip()]
            self.numbers.extend(first + i for i in kept)
            self.offsets.extend(block.offsets[i] for i in kept)
            self.data.extend(lines[i] for i in kept)
        self.size += sum(map(len, lines))

    def full(self) -> bool:
        return len(self.numbers) >= BATCH_LINES or self.size >= BATCH_BYTES

    def clear(self) -> None:
        self.numbers, self.offsets, self.data, self.size = [], [], [], 0


class _JsonlReader:
    """Line-by-line reading of G1, G2 and history files."""

    def __init__(self, source: str, state: FileState, gen: int, redactor: Redactor, max_line: int):
        self.mapper = SessionMapper(source, state, gen)
        self.decode: Callable[[bytes | str], object] | None = None  # the file's format's decoder, once known
        self.map_line: Callable[..., None] | None = None  # the mapper's method for the file's format, once known
        self.claude: ClaudeMapper | None = None  # a Claude Code file's mapper
        self.redactor = redactor
        self.max_line = max_line
        self.quarantine: list[dict] = []
        self.consumed = 0
        self.start = 0

    def read(self, content: ContentStream, start: int, hasher) -> None:
        """Read lines from content byte ``start``; ``hasher`` holds the hash of the bytes before it."""
        self.start = self.consumed = self.end = start
        self.hasher = hasher
        state = self.mapper.state
        batch = _LineBatch()
        for item in iter_blocks(content, start, self.max_line, hasher):
            if isinstance(item, Block):  # ordinary lines, the bulk of every file
                first = state.line_no + 1
                state.line_no += len(item.lines)
                self.consumed = self.end = item.end
                batch.extend(first, item)
                if batch.full():
                    self._lines(batch)
                continue
            line = item  # a line over the limit, or a last one without its newline
            self.end = line.offset + line.length + (1 if line.terminated else 0)
            if not line.terminated and line.data is not None and not _is_json(line.data.removeprefix(BOM)):
                break  # a line still being written: it waits for the next run
            if not line.terminated and line.data is not None:
                hasher.update(line.data)
            state.line_no += 1
            self.consumed = self.end
            if line.data is None:
                self._lines(batch)  # rows keep the order of the lines
                self._quarantine(line.offset, f"line of {line.length} bytes exceeds the {self.max_line}-byte limit",
                                 "")
            elif line.data.strip():
                batch.add(state.line_no, line.offset, line.data.removeprefix(BOM) if line.offset == 0 else line.data)
        self._lines(batch)

    def _lines(self, batch: _LineBatch) -> None:
        """Map a batch of lines, redacted together (one prefilter pass over the batch), in order."""
        if not batch.numbers:
            return
        state = self.mapper.state
        read_so_far = state.line_no
        try:
            texts: list[str | UnicodeDecodeError] = [data.decode("utf-8") for data in batch.data]
            decoded, valid = texts, batch.data
        except UnicodeDecodeError:  # some line is not UTF-8: each line on its own
            texts = list(map(_decoded, batch.data))
            decoded = [t for t in texts if isinstance(t, str)]
            valid = [data for data, text in zip(batch.data, texts) if isinstance(text, str)]
        cleans = iter(self.redactor.redact_jsonl(decoded, valid))
        for line_no, offset, data, text in zip(batch.numbers, batch.offsets, batch.data, texts):
            state.line_no = line_no  # rows and quarantine entries name their own line
            if isinstance(text, str):
                self._line(text, next(cleans), offset, data)
            else:
                excerpt = self.redactor.redact_text(data.decode("utf-8", "replace"))
                self._quarantine(offset, f"invalid UTF-8 at byte {text.start}", excerpt)
        state.line_no = read_so_far
        batch.clear()

    def _line(self, text: str, clean: str, offset: int, data: bytes) -> None:
        """One decoded line and its redacted text: decoded into its format's record type (:mod:`.shapes`),
        mapped, or quarantined with the reason.

        A line redaction left as it was is decoded and stored from its bytes (``data``): the decoders
        and Arrow take UTF-8, and a ``str`` holding any non-ASCII character would be encoded again for each.
        """
        source = data if clean is text else clean
        if self.decode is None or self.map_line is None:
            if (found := self._first_line(source, text, clean, offset)) is None:
                return
            self.decode, self.map_line = found
        mapper, state = self.mapper, self.mapper.state
        try:
            record = self.decode(source)
        except RecordShapeError as exc:
            self._quarantine(offset, f"unexpected record shape: {exc}", clean)
            return
        except (msgspec.DecodeError, orjson.JSONDecodeError, NotAnObject) as exc:
            reason = json_problem(source, exc)
            self._quarantine(offset, reason, self.redactor.redact_text(text) if reason.startswith("invalid JSON") else clean)
            return
        mark = (len(mapper.events), len(mapper.sessions), state.seq, state.meta_seen)
        try:
            self.map_line(record, state.line_no, offset, source)
        except (RecordShapeError, TypeError, AttributeError, ValueError, KeyError) as exc:
            mapper.events.truncate(mark[0])
            del mapper.sessions[mark[1]:]
            state.seq, state.meta_seen = mark[2], mark[3]
            self._quarantine(offset, f"unexpected record shape: {exc}", clean)

    def _first_line(self, source: bytes | str, text: str, clean: str,
                    offset: int) -> tuple[Callable[[bytes | str], object], Callable[..., None]] | None:
        """The file's first JSON line: tells its format (a file resumed knows it), hence its decoder and
        mapper. None when the line is no JSON object (quarantined, and the next line is first)."""
        mapper, state = self.mapper, self.mapper.state
        if state.format is None:
            try:
                obj = orjson.loads(source)
            except orjson.JSONDecodeError as exc:
                self._quarantine(offset, f"invalid JSON: {exc}", self.redactor.redact_text(text))
                return None
            if not isinstance(obj, dict):
                self._quarantine(offset, f"JSON {type(obj).__name__} where an object was expected", clean)
                return None
            state.format = detect_format(mapper.source_path, obj)
        if state.format == "claude":
            self.claude = ClaudeMapper(mapper)
            return decode_object, self.claude.line
        return _DECODERS[state.format], getattr(mapper, f"{state.format}_line")

    def _quarantine(self, offset: int, reason: str, excerpt: str) -> None:
        self.quarantine.append({
            "source_path": self.mapper.source_path, "line_no": self.mapper.state.line_no, "byte_offset": offset,
            "reason": reason, "excerpt": excerpt[:EXCERPT_CHARS], "file_gen": self.mapper.file_gen,
        })

    def result(self, st: os.stat_result, change: str) -> FileResult:
        mapper = self.mapper
        state = mapper.state
        if self.claude is not None:
            self.claude.finish()
        elif not state.meta_seen and mapper.events and state.format in ("g1", "g2"):
            _headerless_session(mapper)
        record = FileRecord(
            mapper.source_path, mapper.file_gen, state.format, st.st_size, st.st_mtime_ns, self.consumed,
            self.hasher.hexdigest(), None, state.to_json(), self.end - self.consumed, None,
        )
        return FileResult(record, change, mapper.events, mapper.sessions, self.quarantine,
                          self.consumed - self.start)


def detect_format(source_path: str, first: dict) -> str:
    """G2 lines are wrapped (``type`` + ``payload``); history lines are prompts; Claude Code lines carry
    ``sessionId``/``parentUuid`` or a type of their own (:func:`~logmine.ingest.claude.is_claude_line`);
    the rest is G1."""
    if source_path.endswith("history.jsonl") or {"session_id", "ts", "text"} <= first.keys():
        return "history"
    if "payload" in first and "type" in first:
        return "g2"
    if is_claude_line(first):
        return "claude"
    return "g1"


def _read_g0(content: ContentStream, source: str, gen: int, st: os.stat_result, redactor: Redactor,
             change: str) -> FileResult:
    data = content.read(MAX_G0_BYTES + 1)
    digest = xxhash.xxh3_128_hexdigest(data)

    def record(state: str | None) -> FileRecord:
        return FileRecord(source, gen, "g0", st.st_size, st.st_mtime_ns, len(data), digest, None, state, 0, None)

    def quarantine(reason: str, excerpt: str) -> FileResult:  # the whole document is one record
        row = {"source_path": source, "line_no": None, "byte_offset": 0, "reason": reason,
               "excerpt": excerpt[:EXCERPT_CHARS], "file_gen": gen}
        return FileResult(record(None), change, quarantine=[row], bytes_read=len(data))

    if len(data) > MAX_G0_BYTES:
        return quarantine(f"JSON document larger than {MAX_G0_BYTES} bytes", "")
    try:
        text = data.removeprefix(BOM).decode("utf-8")
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
        mapper.g0_document(g0_document(doc if isinstance(doc, dict) else {}), raw_items)
    except (RecordShapeError, TypeError, AttributeError, ValueError, KeyError) as exc:
        return quarantine(f"unexpected document shape: {exc}", clean)
    return FileResult(record(state.to_json()), change, mapper.events, mapper.sessions, bytes_read=len(data))


def _headerless_session(mapper: SessionMapper) -> None:
    """A file that never had its session_meta line (truncated at the start) still gets a session."""
    state = mapper.state
    state.meta_seen = True
    first_ts = parse_ts(mapper.events.first("ts"))
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


def _is_g0(path: Path, max_line: int) -> bool:
    """A G0 document is one line holding ``session`` and ``items``, or opens with ``{`` alone on its
    first line and goes on with a line that is no JSON object of its own (pretty-printed). Anything
    else is read as JSON lines, a broken first line included."""
    seen = []
    with open_content(path) as content:
        for line in iter_lines(content, 0, max_line):
            if line.data is None:
                return False
            text = (line.data.removeprefix(BOM) if line.offset == 0 else line.data).strip()
            if text:
                seen.append(_json_object(text))
            if len(seen) == 2 or (seen and seen[0] is not None):
                break
    if not seen:
        return False
    if seen[0] is not None:
        return {"session", "items"} <= seen[0].keys()
    return _first_line_is_brace(path) and (len(seen) < 2 or seen[1] is None)


def _json_object(text: bytes) -> dict | None:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _first_line_is_brace(path: Path) -> bool:
    with open_content(path) as content:
        head = content.read(64).removeprefix(BOM).lstrip(b" \t\r\n")
    return head[:1] == b"{" and head[1:].lstrip(b" \t\r")[:1] == b"\n"


def _decoded(data: bytes) -> str | UnicodeDecodeError:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc


def _is_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def _feed(content: ContentStream, hasher, n: int) -> None:
    """Hash the next ``n`` content bytes (fewer if the content ends first)."""
    while n > 0:
        chunk = content.read(min(n, 1 << 22))
        if not chunk:
            return
        hasher.update(chunk)
        n -= len(chunk)
