"""Blocks of a byte stream cut after a newline, for the text-table reader.

The mechanism only (no parsing, no Arrow): one reused buffer per stream,
each block ending after its last newline with the rest carried into the
next, and lines longer than a bound refused with their file offset. The
sizes are the caller's (:mod:`gpukit.io.text_table` owns them).
"""
from __future__ import annotations

import io
from typing import Callable, Iterator

from gpukit.errors import ECHO_CHARS, LineTooLong

#: Bytes read per step when newlines are counted for an error message.
_COUNT_READ = 64 << 20


def count_newlines(opener: Callable[[], io.BufferedIOBase], end: int) -> int:
    """Newlines in the first ``end`` bytes of a file (slow path for error messages)."""
    count = 0
    with opener() as fh:
        while end > 0:
            data = fh.read(min(end, _COUNT_READ))
            if not data:
                break
            count += data.count(b"\n")
            end -= len(data)
    return count


def skip_to(fh: io.BufferedIOBase, offset: int) -> None:
    if fh.seekable():
        fh.seek(offset)
    else:  # pragma: no cover - gzip streams are seekable, kept for safety
        fh.read(offset)


def long_line(buf, start: int, end: int, limit: int) -> int:
    """Start of the first line in ``buf[start:end]`` longer than ``limit``
    bytes (newline excluded), or -1. A line longer than ``limit`` covers a
    whole window of ``limit // 2`` bytes without a newline, so one memchr per
    window suffices; only such a window is measured exactly."""
    step = max(limit // 2, 1)
    pos = start
    while pos + step <= end:
        if buf.find(b"\n", pos, pos + step) >= 0:
            pos += step
            continue
        line_start = max(start, buf.rfind(b"\n", start, pos) + 1)
        nl = buf.find(b"\n", pos + step, min(end, line_start + limit + 1))
        line_end = nl if nl >= 0 else min(end, line_start + limit + 1)
        if line_end - line_start > limit:
            return line_start
        pos = line_end + 1
    return -1


def fill(fh: io.BufferedIOBase, view: memoryview) -> int:
    """Read into ``view`` until it is full or the stream ends; bytes read."""
    got = 0
    while got < len(view):
        n = fh.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def read_blocks(fh: io.BufferedIOBase, block_bytes: int, max_line_bytes: int, size_hint: int | None = None) -> Iterator[tuple[int, bytearray, int]]:
    """``(file offset, buffer, length)`` of each block of a stream: the block
    is ``buffer[:length]``, cut after its last newline (the rest carried into
    the next block). One buffer serves every block (no fresh pages per block):
    a block is valid until the next is read; ``size_hint`` (the text's size,
    if known) bounds the buffer. Raises :class:`LineTooLong`."""
    buf = bytearray(min(block_bytes, size_hint + 1 if size_hint is not None else block_bytes) + max_line_bytes + 1)
    view = memoryview(buf)
    offset, held = 0, 0  # held: carried bytes at the buffer's start
    try:
        while True:
            got = fill(fh, view[held : held + len(buf) - max_line_bytes - 1])
            end = held + got
            if got == 0:
                if held:
                    if held > max_line_bytes and long_line(buf, 0, held, max_line_bytes) >= 0:
                        raise LineTooLong(offset, bytes(buf[: 4 * ECHO_CHARS]))
                    yield offset, buf, held
                return
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:  # no newline yet: one line longer than a block, or a line too long
                if end > max_line_bytes:
                    raise LineTooLong(offset, bytes(buf[: 4 * ECHO_CHARS]))
                held = end
                continue
            long = long_line(buf, 0, cut, max_line_bytes)
            if long >= 0:
                raise LineTooLong(offset + long, bytes(buf[long : long + 4 * ECHO_CHARS]))
            if end - cut > max_line_bytes:  # the unfinished last line is already too long
                raise LineTooLong(offset + cut, bytes(buf[cut : cut + 4 * ECHO_CHARS]))
            yield offset, buf, cut
            view[: end - cut] = bytes(view[cut:end])  # at most one line
            held, offset = end - cut, offset + cut
    finally:
        view.release()
