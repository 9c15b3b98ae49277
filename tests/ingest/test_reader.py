"""The chunked line reader returns what splitting the whole content at its newlines returns: every
line with its offset, oversize lines without their bytes, the last line marked when it has no
newline, and the hash fed exactly the bytes of the lines it calls read."""

from __future__ import annotations

import io
import random

import pytest
import xxhash

from logmine.ingest.reader import Block, Line, iter_blocks, iter_lines


def _reference(content: bytes, start: int, max_line: int) -> tuple[list[Line], bytes]:
    """Lines of ``content[start:]`` split all at once, and the bytes the hash must have seen."""
    lines, offset, hashed = [], start, b""
    pieces = content[start:].split(b"\n")
    for i, piece in enumerate(pieces):
        terminated = i < len(pieces) - 1
        if not terminated and not piece:
            break
        lines.append(Line(offset, None if len(piece) > max_line else piece, terminated, len(piece)))
        if terminated or len(piece) > max_line:
            hashed += piece + (b"\n" if terminated else b"")
        offset += len(piece) + 1
    return lines, hashed


def _content(rng: random.Random) -> bytes:
    lines = [rng.choice([b"", b" ", b"{}", b'{"a":1}', b"x" * rng.randrange(1, 40)]) for _ in range(rng.randrange(0, 30))]
    return b"\n".join(lines) + rng.choice([b"", b"\n", b"tail", b"y" * 50])


@pytest.mark.parametrize("seed", range(200))
def test_chunked_lines_are_the_lines_of_the_whole_content(seed):
    rng = random.Random(seed)
    content = _content(rng)
    start = rng.randrange(0, len(content) + 1) if content and rng.random() < 0.3 else 0
    max_line, chunk = rng.choice([3, 8, 20, 1000]), rng.choice([1, 2, 5, 16, 64, 1 << 20])
    hasher = xxhash.xxh3_128()
    items = list(iter_blocks(io.BytesIO(content), start, max_line, hasher, chunk_size=chunk))
    flat = []
    for item in items:
        if isinstance(item, Block):
            assert item.lines and all(len(line) <= max_line for line in item.lines)
            flat += [Line(o, d, True, len(d)) for o, d in zip(item.offsets, item.lines)]
        else:
            flat.append(item)
    expected, hashed = _reference(content, start, max_line)
    assert flat == expected
    assert hasher.hexdigest() == xxhash.xxh3_128_hexdigest(hashed)
    assert list(iter_lines(io.BytesIO(content), start, max_line)) == expected


def test_a_block_ends_after_its_last_newline():
    block = next(iter_blocks(io.BytesIO(b"ab\ncde\nf"), 0, 100))
    assert (block.offsets, block.lines, block.end) == ([0, 3], [b"ab", b"cde"], 7)
