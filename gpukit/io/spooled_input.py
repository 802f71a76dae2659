"""Inputs that can be read only once (standard input, a pipe or FIFO, a
device) copied into a temporary file first, so that a reader can read them
in blocks and errors can still name lines."""
from __future__ import annotations

import os
import stat
import tempfile
from typing import Sequence

from gpukit.errors import ECHO_CHARS, GpukitError, InputFormatError
from gpukit.io.compressed import GZIP_MAGIC
from gpukit.io.line_errors import line_too_long

_SPOOL_CHUNK = 1 << 20


def _spool(stream, source: str, max_line: int) -> str:
    """Copy an input that cannot be read twice (pipe, FIFO, stdin, device)
    into a temporary file, reading it once, whole; returns the file's path.
    An uncompressed input stops at the first line longer than
    ``max_line`` bytes (so ``/dev/zero`` fails at once)."""
    fd, path = tempfile.mkstemp(prefix="gpukit-input-")
    cap = 4 * ECHO_CHARS
    try:
        with os.fdopen(fd, "wb") as out:
            head, newlines, line_len, line_head = b"", 0, 0, b""
            while True:
                chunk = stream.read(_SPOOL_CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                if len(head) < 2:
                    head += chunk[:2]
                if head[:2] == GZIP_MAGIC:
                    continue  # lines are checked once decompressed
                count = chunk.count(b"\n")
                if count:
                    newlines += count
                    tail = chunk[chunk.rfind(b"\n") + 1 :]
                    line_len, line_head = len(tail), tail[:cap]
                else:
                    line_len += len(chunk)
                    line_head += chunk[: cap - len(line_head)]
                if line_len > max_line:
                    raise line_too_long(source, newlines + 1, line_head, max_line)
    except BaseException:
        os.unlink(path)
        raise
    return path


def file_mode(source: str) -> int:
    """``st_mode`` of an input path; a missing or unreadable path, or a
    directory, is an error naming it."""
    try:
        mode = os.stat(source).st_mode
    except FileNotFoundError:
        raise InputFormatError(source, None, "no such file") from None
    except OSError as exc:
        raise InputFormatError(source, None, f"cannot open: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise InputFormatError(source, None, "is a directory, not a file")
    return mode


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # pragma: no cover - already gone
        pass


def check_stdin_once(paths: Sequence[str]) -> None:
    """Standard input (``-``) can be read once: an error if it is named twice."""
    if sum(os.fspath(p) == "-" for p in paths) > 1:
        raise GpukitError("standard input ('-') can be read only once: give it for the qrels or for one run, not both")
