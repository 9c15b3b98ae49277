"""Capturing a command's output with a fixed memory bound, and finding protocol markers in it.

A command may print a gigabyte; the host keeps at most ``limit`` bytes of it (the first and the
last halves) and counts the rest. Markers (the sandbox's start token, a shell's end-of-command
sentinel) are found in the stream even when a read splits them.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from enum import Enum

CHUNK = 1 << 16


def cut_marker(cut: int) -> str:
    """What replaces the cut middle of an output."""
    return f"\n[... {cut} bytes cut ...]\n"


class OutputCap:
    """Keeps the first ``limit // 2`` bytes and the last ``limit - limit // 2`` bytes written."""

    def __init__(self, limit: int) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) >= self._tail_limit:
            self._tail = bytearray(data[len(data) - self._tail_limit :])
        else:
            self._tail += data
            excess = len(self._tail) - self._tail_limit
            if excess > 0:
                del self._tail[:excess]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + len(self._tail)

    def text(self) -> str:
        """Head + cut marker + tail, decoded as UTF-8 (undecodable bytes replaced)."""
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if not self.truncated:
            return head + tail
        return head + cut_marker(self.total - len(self._head) - len(self._tail)) + tail


class Read(Enum):
    FOUND = "found"
    EOF = "eof"
    TIMEOUT = "timeout"


class Stream:
    """One pipe read against deadlines; bytes read past a marker are kept for the next read.

    After a read that timed out, the stream is to be abandoned (its process killed).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._pending = b""
        self._eof = False

    def read_until(self, marker: bytes | None, sink: Callable[[bytes], None], deadline: float) -> Read:
        """Feed ``sink`` every byte before ``marker`` (or until end of stream when ``marker`` is None)."""
        keep = len(marker) - 1 if marker else 0
        buf, self._pending = self._pending, b""
        while True:
            if marker:
                found = buf.find(marker)
                if found >= 0:
                    sink(buf[:found])
                    self._pending = buf[found + len(marker) :]
                    return Read.FOUND
            if len(buf) > keep:
                sink(buf[: len(buf) - keep])
                buf = buf[len(buf) - keep :]
            if self._eof:
                sink(buf)
                return Read.EOF
            chunk = self._read(deadline)
            if chunk is None:  # the reader gives up on this stream: deliver what was held back
                sink(buf)
                return Read.TIMEOUT
            if not chunk:
                self._eof = True
            buf += chunk

    def _read(self, deadline: float) -> bytes | None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not self._poll.poll(remaining * 1000):
            return None
        return os.read(self._fd, CHUNK)
