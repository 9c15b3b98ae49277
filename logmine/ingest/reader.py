"""Stream session files' lines with byte offsets (finding the files: :mod:`.discover`).

Reading is bounded in memory: files are read in chunks, and a line longer than the limit is skipped
(reported, never loaded whole). A last line without its newline is returned as unterminated: a live
session may still be writing it.

A file's *content* is its bytes, or for ``.gz``/``.zst`` files (newer Codex versions compress archived
sessions) the decompressed stream, read as a stream (:func:`open_content`); offsets count content
bytes. A compressed stream that ends early (still being written, or cut off) ends the content there.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

CHUNK = 1 << 22  # 4 MiB
CODECS = {".gz": "gzip", ".zst": "zstd"}  # compressed content, read through pyarrow's stream codecs


@dataclass(frozen=True, slots=True)
class Line:
    offset: int
    data: bytes | None  # None when the line was too long to load
    terminated: bool
    length: int  # bytes, without the newline


def codec(path: Path | str) -> str | None:
    """The decompression codec a file's name calls for, else None."""
    return CODECS.get(os.path.splitext(str(path))[1])


class ContentStream:
    """A file's content (decompressed when compressed), read forward; the position counts content bytes.

    gzip is decompressed here (zlib, member after member), so a stream cut short yields every byte
    before the cut; zstd goes through pyarrow's stream codec, which may hold back the last block of a
    stream cut short.
    """

    def __init__(self, path: Path | str):
        name = codec(path)
        self.compressed = name is not None
        self._raw = open(path, "rb")
        self._zstd = pa.CompressedInputStream(pa.PythonFile(self._raw, mode="r"), name) if name == "zstd" else None
        self._gzip = zlib.decompressobj(wbits=31) if name == "gzip" else None
        self._pending = b""
        self.pos = 0
        self.truncated = False  # a compressed stream that ended early

    def read(self, n: int) -> bytes:
        if self._gzip is not None:
            data = self._read_gzip(n)
        elif self._zstd is not None:
            data = self._read_zstd(n)
        else:
            data = self._raw.read(n)
        self.pos += len(data)
        return data

    def _read_gzip(self, n: int) -> bytes:
        try:
            while len(self._pending) < n and not self.truncated:
                raw = self._raw.read(1 << 16)
                if not raw:
                    self.truncated = not self._gzip.eof
                    break
                self._pending += self._gzip.decompress(raw)
                while self._gzip.eof and self._gzip.unused_data:  # the next gzip member
                    rest = self._gzip.unused_data
                    self._gzip = zlib.decompressobj(wbits=31)
                    self._pending += self._gzip.decompress(rest)
        except zlib.error as exc:
            raise OSError(f"corrupt gzip stream: {exc}") from exc
        data, self._pending = self._pending[:n], self._pending[n:]
        return data

    def _read_zstd(self, n: int) -> bytes:
        if self.truncated:
            return b""
        try:
            return self._zstd.read(n)
        except OSError as exc:
            if "truncated" not in str(exc).lower():
                raise
            self.truncated = True
            return b""

    def seek(self, offset: int) -> None:
        """Go to content byte ``offset``: a seek for plain files, read-and-discard forward for compressed ones."""
        if not self.compressed:
            self._raw.seek(offset)
            self.pos = offset
            return
        if offset < self.pos:
            raise ValueError("compressed content cannot seek backwards")
        while self.pos < offset and self.read(min(CHUNK, offset - self.pos)):
            pass

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> ContentStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_content(path: Path | str) -> ContentStream:
    return ContentStream(path)


def iter_lines(handle, start: int, max_line: int, hasher=None) -> Iterator[Line]:
    """Lines of a binary file from byte ``start``, one by one (:func:`iter_blocks`, each line its own
    :class:`Line`); oversize lines come back with ``data=None``."""
    for item in iter_blocks(handle, start, max_line, hasher):
        if isinstance(item, Line):
            yield item
        else:
            for offset, data in zip(item.offsets, item.lines):
                yield Line(offset, data, True, len(data))


@dataclass(frozen=True, slots=True)
class Block:
    """Consecutive whole lines of one chunk, each ended by its newline and none over the limit: their
    content offsets and bytes (without the newline)."""

    offsets: list[int]
    lines: list[bytes]

    @property
    def end(self) -> int:
        """The content offset after the last line's newline."""
        return self.offsets[-1] + len(self.lines[-1]) + 1


def iter_blocks(handle, start: int, max_line: int, hasher=None, chunk_size: int = CHUNK) -> Iterator[Block | Line]:
    """The content of a binary file from byte ``start``, in order: the ordinary lines of each chunk
    read as one :class:`Block`, and as a :class:`Line` of its own
    each line over ``max_line`` bytes (``data=None``, never loaded whole) and a last line without its
    newline.

    ``hasher`` (an ``update``-able hash), when given, is fed every byte of every line returned as
    terminated or oversize, newlines included; the caller feeds a last unterminated line it accepts.
    """
    feed = hasher.update if hasher is not None else (lambda _: None)
    offset = start
    buf = b""
    skipping = 0  # bytes of an oversize line consumed so far
    handle.seek(start)
    while chunk := handle.read(chunk_size):
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                skipping += len(chunk)
                feed(chunk)
                continue
            feed(chunk[:nl + 1])
            yield Line(offset, None, True, skipping + nl)
            offset += skipping + nl + 1
            skipping = 0
            chunk = chunk[nl + 1:]
        buf = buf + chunk if buf else chunk
        end = buf.rfind(b"\n") + 1
        if end:
            feed(memoryview(buf)[:end])
            yield from _split(buf, end, offset, max_line)
            offset += end
            buf = buf[end:]
        if len(buf) > max_line:
            feed(buf)
            skipping, buf = len(buf), b""
    if skipping:
        yield Line(offset, None, False, skipping)
    elif buf:
        yield Line(offset, buf, False, len(buf))


def _split(buf: bytes, end: int, offset: int, max_line: int) -> Iterator[Block | Line]:
    """The lines of ``buf[:end]`` (which ends with a newline), ``buf`` starting at content ``offset``.

    Found with ``bytes.find`` (memchr): ``bytes.split`` compares byte by byte, ten times the
    instructions on lines of a kilobyte."""
    offsets: list[int] = []
    lines: list[bytes] = []
    find = buf.find
    pos = 0
    while pos < end:
        nl = find(b"\n", pos, end)
        if nl - pos > max_line:
            if lines:
                yield Block(offsets, lines)
                offsets, lines = [], []
            yield Line(offset + pos, None, True, nl - pos)
        else:
            offsets.append(offset + pos)
            lines.append(buf[pos:nl])
        pos = nl + 1
    if lines:
        yield Block(offsets, lines)
