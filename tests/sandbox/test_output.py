"""The output cap (head + tail + marker) and marker scanning over a pipe, without a sandbox."""

from __future__ import annotations

import os
import time

from logmine.sandbox.output import OutputCap, Read, Stream, cut_marker


def test_output_under_the_cap_is_kept_whole():
    cap = OutputCap(10)
    cap.write(b"abc")
    cap.write(b"defghij")
    assert cap.text() == "abcdefghij" and not cap.truncated


def test_output_over_the_cap_keeps_head_and_tail_and_says_what_was_cut():
    cap = OutputCap(10)
    for chunk in (b"01234", b"56789", b"abcde", b"fghij"):
        cap.write(chunk)
    assert cap.truncated and cap.total == 20
    assert cap.text() == "01234" + cut_marker(10) + "fghij"
    assert cut_marker(10) == "\n[... 10 bytes cut ...]\n"


def test_one_huge_write_keeps_only_its_ends():
    cap = OutputCap(6)
    cap.write(b"x" * 10_000 + b"END")
    assert cap.text() == "xxx" + cut_marker(10_000 - 3) + "END"


def test_undecodable_bytes_are_replaced_not_fatal():
    cap = OutputCap(100)
    cap.write(b"ok \xff\xfe")
    assert cap.text() == "ok \ufffd\ufffd"


def _pipe_with(*chunks: bytes) -> Stream:
    read, write = os.pipe()
    for chunk in chunks:
        os.write(write, chunk)
    os.close(write)
    return Stream(read)


def test_a_marker_split_across_reads_is_found_and_what_follows_is_kept():
    stream = _pipe_with(b"out", b"put__MA", b"RK__rest")
    got = bytearray()
    assert stream.read_until(b"__MARK__", got.extend, time.monotonic() + 5) is Read.FOUND
    assert bytes(got) == b"output"
    rest = bytearray()
    assert stream.read_until(None, rest.extend, time.monotonic() + 5) is Read.EOF
    assert bytes(rest) == b"rest"


def test_a_missing_marker_ends_at_eof_with_everything_delivered():
    stream = _pipe_with(b"no marker here")
    got = bytearray()
    assert stream.read_until(b"__MARK__", got.extend, time.monotonic() + 5) is Read.EOF
    assert bytes(got) == b"no marker here"


def test_a_pipe_that_goes_silent_times_out_at_the_deadline():
    read, write = os.pipe()
    try:
        started = time.monotonic()
        os.write(write, b"partial")
        got = bytearray()
        assert Stream(read).read_until(b"MARKER", got.extend, started + 0.2) is Read.TIMEOUT
        assert bytes(got) == b"partial"  # held back while looking for the marker, delivered at the end
        assert 0.15 < time.monotonic() - started < 1
    finally:
        os.close(read)
        os.close(write)
