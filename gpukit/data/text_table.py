"""Fast, memory-lean reading of whitespace-separated text tables (TREC files).

The happy path is pyarrow's multi-threaded CSV parser over 64 MiB blocks of
the file, read into one reused buffer, with id columns as plain Arrow strings
so that a 100M-line run never becomes 100M Python strings. A block is parsed
as it is first; only a block with tabs, CRs or ``#``, or whose parse shows an
empty field (a stray space), is whitespace-normalised and parsed again. Every
failure is re-checked by a slow line-by-line scan of the offending block so
that the error names the file, the line and the problem; line numbers are
counted only then. A tiny input (below ``TINY_INPUT_BYTES``) that is
clean (ASCII, no comment, the right number of fields) is parsed without
Arrow's parser by :mod:`gpukit.data.tiny_table`; any other goes the Arrow
way, which words every error.

What is accepted (and the error scan checks exactly the same rules):

* Fields are separated by runs of space, tab, CR, FF or VT; any other ASCII
  control character (U+0000-U+0008, U+000E-U+001F, which ``str.split``
  would treat as whitespace or keep) is an error.
* A UTF-8 byte order mark is skipped as the file's first three bytes; anywhere
  else it is an error (it is invisible, and would change an id).
* Scores (``float`` columns): the whole field is ASCII ``[+-]digits[.digits]``
  or ``[+-].digits``, optionally with an exponent ``e[+-]digits``, or
  ``inf``/``infinity``/``nan`` in any case (NaN is rejected by the run
  reader): strtod's decimal forms. Hexadecimal floats, digit separators
  (``1_000``), non-ASCII digits and trailing text (which ``atof`` would
  ignore) are errors. Magnitudes beyond float64 read as +-inf, as strtod does.
* Integers (``int`` columns, qrels grades): ASCII digits with an optional
  leading ``-`` and within int64; ``+1``, ``0x1``, ``1e3`` and ``1_000`` are
  errors (``atoi`` would silently read some of them as another number).
* A line may hold at most ``MAX_LINE_BYTES`` (1 MiB) before its newline.
* A path that is not a regular file (a pipe, FIFO, ``/dev/stdin``, or ``-``
  for standard input) is read exactly once, into a temporary file that lives
  as long as the parsed table (so that errors can still name lines).

Id columns come back as Arrow strings; :mod:`gpukit.data.string_coding`
turns them into integer codes.
"""
from __future__ import annotations

import functools
import gzip
import io
import mmap
import os
import re
import stat
import sys
import tempfile
import threading
import weakref
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from gpukit.data.arrow_numpy import parse_pool, plain_int64, release_arrow_memory, value_offsets
from gpukit.data.tiny_table import parse_tiny
from gpukit.errors import ECHO_CHARS, GpukitError, InputFormatError, ReadStopped, echo


BLOCK_BYTES = 64 << 20
#: Inputs smaller than this (bytes of text; a gzip file counts 8x its size) are
#: parsed on the calling thread with Arrow's threads off: below it, handing
#: blocks to threads costs more than it overlaps (crossover measured in
#: docs/benchmarks.md, "Reader strategy by input size").
SMALL_INPUT_BYTES = 16 << 20
#: Inputs smaller than this (bytes of text; a gzip file counts 8x its size, and
#: its text must fit too) that fit one block are first tried by
#: :func:`gpukit.data.tiny_table.parse_tiny`, without Arrow's parser: below it,
#: setting up Arrow's reader costs more than parsing (crossover measured in
#: docs/benchmarks.md, "Fourth pass: tiny inputs"). Anything that path does not accept as
#: clean is read by the Arrow reader, which also words every error.
TINY_INPUT_BYTES = 128 << 10
#: The longest line (bytes before its newline) a reader accepts: bounds the
#: memory a file without newlines (``/dev/zero``) can take.
MAX_LINE_BYTES = 1 << 20

#: The score spellings accepted (the fast parser's; see the module docstring).
FLOAT_TEXT = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?))"
)
#: The integer spelling accepted (qrels grades).
INT_TEXT = re.compile(r"-?[0-9]+")
_FIELD_SEP = re.compile(rb"[ \t\r\f\v]+")
_BAD_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1f]")
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_SPOOL_CHUNK = 1 << 20

_WS_RUN = re.compile(rb"[ \t\r\f\v]+")
_EDGE_SPACE = re.compile(rb"^ | $", re.MULTILINE)
_COMMENT_LINE = re.compile(rb"^[ \t\r\f\v]*#[^\n]*", re.MULTILINE)


@dataclass(frozen=True)
class Column:
    """A column of a whitespace table: its name, and the kind it parses to."""

    name: str
    kind: str  # "id" (string, coded by ``string_codes``), "float", "int" or "skip"


@dataclass
class ParsedTable:
    """Parsed columns plus what is needed to map a row back to its line."""

    source: str
    columns: dict[str, pa.ChunkedArray]
    num_rows: int
    # (byte offset, byte length, first line or None until needed, rows); blocks are contiguous from byte 0.
    _blocks: list[tuple[int, int, int | None, int]] = field(default_factory=list)
    _opener: Callable[[], io.BufferedIOBase] | None = None

    def _first_line(self, index: int) -> int:
        """1-based line number of block ``index``'s first line (counted lazily: errors only)."""
        offset, length, first_line, rows = self._blocks[index]
        if first_line is None:
            assert self._opener is not None
            first_line = 1 + _count_newlines(self._opener, offset)
            self._blocks[index] = (offset, length, first_line, rows)
        return first_line

    def line_of(self, row: int) -> int | None:
        """1-based line number of data row ``row`` (slow; for error messages)."""
        for index, (offset, length, _, rows) in enumerate(self._blocks):
            if row < rows:
                assert self._opener is not None
                first_line = self._first_line(index)
                with self._opener() as fh:
                    _skip(fh, offset)
                    block = fh.read(length)
                if offset == 0 and block.startswith(_BOM):  # skipped by the parse too
                    block = block[len(_BOM):]
                for i, line in enumerate(block.split(b"\n")):
                    if _is_data_line(line):
                        if row == 0:
                            return first_line + i
                        row -= 1
                return None
            row -= rows
        return None


def _count_newlines(opener: Callable[[], io.BufferedIOBase], end: int) -> int:
    """Newlines in the first ``end`` bytes of a file (slow path for error messages)."""
    count = 0
    with opener() as fh:
        while end > 0:
            data = fh.read(min(end, BLOCK_BYTES))
            if not data:
                break
            count += data.count(b"\n")
            end -= len(data)
    return count


def _skip(fh: io.BufferedIOBase, offset: int) -> None:
    if fh.seekable():
        fh.seek(offset)
    else:  # pragma: no cover - gzip streams are seekable, kept for safety
        fh.read(offset)


def _is_data_line(line: bytes) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(b"#")


def is_gzip(path: str) -> bool:
    """Whether ``path`` holds gzip data: told by its first two bytes (the
    magic number), as every reader here decides, whatever the file's name."""
    with open(path, "rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


#: A gzip file's text is taken to be this many times its size when choosing how to read it.
GZIP_TEXT_FACTOR = 8


def _text_bytes(path: str, gzipped: bool) -> int:
    """The bytes of text the readers take a regular file to hold."""
    return os.path.getsize(path) * (GZIP_TEXT_FACTOR if gzipped else 1)


#: Deflate's largest expansion (258-byte matches coded in about 2 bits).
DEFLATE_MAX_RATIO = 1032


def gzip_buffer_hint(path: str) -> int:
    """The text size to size a gzip file's read buffer by: the one its
    trailer states (ISIZE, the last member's length mod 2^32) when deflate
    could have produced it from the file's size, else ``GZIP_TEXT_FACTOR``
    times the size. Only a buffer's size depends on it: a short hint (several
    members, a damaged trailer) regrows the buffer, a long one zero-fills
    memory the text never uses (an 8x buffer for a 4.5x run file cost a
    third of its read, docs/benchmarks.md, "Seventh pass")."""
    size = os.path.getsize(path)
    if size >= 18:  # a gzip header (10 bytes) and trailer (8)
        with open(path, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            stated = int.from_bytes(fh.read(4), "little")
        if size // 2 <= stated <= DEFLATE_MAX_RATIO * size:
            return stated
    return size * GZIP_TEXT_FACTOR


def text_size_hint(path: str | os.PathLike) -> int | None:
    """:func:`_text_bytes` of a regular file (a gzip file counts
    ``GZIP_TEXT_FACTOR`` times its size); None for standard input (``"-"``),
    a pipe, or a path that cannot be read (its reader then words the error)."""
    source = os.fspath(path)
    if source == "-":
        return None
    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None
        return _text_bytes(source, is_gzip(source))
    except OSError:
        return None


def _opener_for(path: str, gzipped: bool) -> Callable[[], io.BufferedIOBase]:
    """Opens ``path``'s text again (to count lines for an error): through
    :func:`open_gzip` if it is gzip data (:func:`is_gzip`), else as it is."""
    if gzipped:
        return lambda: open_gzip(path)
    return lambda: open(path, "rb")


def open_gzip(path: str) -> io.BufferedIOBase:
    """A gzip file's text as a stream: python-isal's ``igzip`` where installed
    (ISA-L; about twice the gzip module's speed: docs/benchmarks.md, "Eleventh
    pass"), else the gzip module. Both read several members and zero padding
    after the last one, check each member's CRC-32 and length, and give the
    same text before any error. Two differences: a header whose optional
    CRC-16 (FHCRC) is wrong is refused by igzip and let through by the gzip
    module, and the words of some errors differ (bytes after the last member:
    "Compressed file ended before the end-of-stream marker was reached"
    against "Not a gzipped file")."""
    return _gzip_library().open(path, "rb")


def _gzip_library():
    """python-isal's ``igzip`` where installed (it then inflates one-call
    reads too: :func:`member_inflater`), else the gzip module; the two share
    ``open`` and ``GzipFile``."""
    if member_inflater() is zlib:
        return gzip
    from isal import igzip

    return igzip


def gzip_errors() -> tuple[type[BaseException], ...]:
    """What reading a damaged gzip file may raise, whichever module inflates
    (ISA-L's inflate error is not a ``zlib.error``)."""
    return (OSError, EOFError, zlib.error, member_inflater().error)


def _normalise(block: bytes) -> bytes:
    """Make a block single-space separated without moving any newline."""
    if b"#" in block:
        block = _COMMENT_LINE.sub(b"", block)
    if (b"\t" in block or b"  " in block or b"\r" in block or b"\f" in block or b"\v" in block
            or block[:1] == b" " or block[-1:] == b" " or b"\n " in block or b" \n" in block):
        block = _WS_RUN.sub(b" ", block)
        block = _EDGE_SPACE.sub(b"", block)
    return block


def _arrow_type(kind: str) -> pa.DataType:
    return {"id": pa.string(), "float": pa.float64(), "int": pa.int64(), "skip": pa.string()}[kind]


def _parse_type(kind: str) -> pa.DataType:
    """The type a column is parsed as: integers as text, checked and converted by ``_parse_ints``."""
    return pa.string() if kind == "int" else _arrow_type(kind)


def _diagnose(
    source: str, block: bytes, first_line: int, columns: Sequence[Column], what: str, extra_ok: bool = False
) -> InputFormatError:
    """Find the first bad line in a block by a plain scan and describe it.

    The rules are the parser's (see the module docstring): fields split on
    space, tab, CR, FF and VT only, and only id, score and grade fields are
    decoded, so that a line the parser accepts is never reported.
    """
    for i, raw in enumerate(block.split(b"\n")):
        line_no = first_line + i
        if line_no == 1 and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return InputFormatError(source, line_no, "not UTF-8: the file starts with a UTF-16 byte order mark (convert it to UTF-8)")
        if not _is_data_line(raw):
            continue
        bad = _BAD_CONTROL.search(raw)
        if bad:
            return InputFormatError(
                source, line_no,
                f"control character U+{ord(bad.group()):04X} at byte {bad.start() + 1} of the line "
                f"(fields are separated by spaces, tabs, CR, FF or VT only): {echo(raw)}",
            )
        if _BOM in raw:
            return InputFormatError(
                source, line_no, "byte order mark (U+FEFF) inside the file; it is only skipped as the file's first bytes (concatenated files?)"
            )
        fields = _FIELD_SEP.split(raw.strip(b" \t\r\f\v"))
        if len(fields) < len(columns) or (len(fields) > len(columns) and not extra_ok):
            names = " ".join(c.name for c in columns)
            expected = f"at least {len(columns)}" if extra_ok else str(len(columns))
            return InputFormatError(
                source, line_no, f"expected {expected} columns ({names}) in a {what} file, got {len(fields)}: {echo(raw.strip())}"
            )
        for col, field_bytes in zip(columns, fields):
            if col.kind == "skip":
                continue
            try:
                value = field_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                start = raw.find(field_bytes) + exc.start
                return InputFormatError(source, line_no, f"not valid UTF-8 ({exc.reason} at byte {start})")
            if col.kind == "float" and not FLOAT_TEXT.fullmatch(value):
                return InputFormatError(
                    source, line_no, f"{col.name} {echo(value)} is not a number (decimal digits with optional sign, point and exponent, or inf)"
                )
            if col.kind == "int":
                if not INT_TEXT.fullmatch(value):
                    return InputFormatError(
                        source, line_no, f"{col.name} {echo(value)} is not an integer (ASCII digits with an optional leading '-')"
                    )
                if not -(2**63) <= int(value) < 2**63:
                    return InputFormatError(source, line_no, f"{col.name} {echo(value)} out of range (beyond 64 bits)")
    return InputFormatError(source, None, f"could not parse the {what} file (no single bad line found in lines {first_line}+)")


def _parse_ints(table: pa.Table, names: Sequence[str]) -> pa.Table | None:
    """Integer columns parsed as text turned into int64; None if one field is
    not a plain decimal integer within int64 (see :func:`plain_int64`)."""
    for name in names:
        converted = plain_int64(table.column(name))
        if converted is None:
            return None
        table = table.set_column(table.schema.get_field_index(name), name, converted)
    return table


def _has_bom(buf, start: int, end: int, at_file_start: bool) -> bool:
    """Whether a UTF-8 byte order mark lies in ``buf[start:end]`` (the file's
    first three bytes excepted). 0xEF is rare in TREC files: found by memchr
    first, a three-byte search only where it is common."""
    if at_file_start and buf[start : start + len(_BOM)] == _BOM:
        start += len(_BOM)
    pos, tries = buf.find(b"\xef", start, end), 0
    while pos >= 0:
        if buf[pos : pos + len(_BOM)] == _BOM:
            return True
        tries += 1
        if tries > 64:
            return buf.find(_BOM, pos, end) >= 0
        pos = buf.find(b"\xef", pos + 1, end)
    return False


class _LineTooLong(Exception):
    """Raised by the block readers: the line at file offset ``offset`` is too long."""

    def __init__(self, offset: int, head: bytes) -> None:
        super().__init__(offset)
        self.offset = offset
        self.head = head


def _long_line(buf, start: int, end: int, limit: int) -> int:
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


def _too_long(source: str, line: int, head: bytes) -> InputFormatError:
    return InputFormatError(
        source, line, f"line longer than {MAX_LINE_BYTES} bytes (the longest line a reader accepts): {echo(head)}"
    )


def _spool(stream, source: str) -> str:
    """Copy an input that cannot be read twice (pipe, FIFO, stdin, device)
    into a temporary file, reading it once, whole; returns the file's path.
    An uncompressed input stops at the first line longer than
    ``MAX_LINE_BYTES`` (so ``/dev/zero`` fails at once)."""
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
                if head[:2] == _GZIP_MAGIC:
                    continue  # lines are checked once decompressed
                count = chunk.count(b"\n")
                if count:
                    newlines += count
                    tail = chunk[chunk.rfind(b"\n") + 1 :]
                    line_len, line_head = len(tail), tail[:cap]
                else:
                    line_len += len(chunk)
                    line_head += chunk[: cap - len(line_head)]
                if line_len > MAX_LINE_BYTES:
                    raise _too_long(source, newlines + 1, line_head)
    except BaseException:
        os.unlink(path)
        raise
    return path


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # pragma: no cover - already gone
        pass


def check_stdin_once(paths: Sequence[str]) -> None:
    """Standard input (``-``) can be read once: an error if it is named twice."""
    if sum(os.fspath(p) == "-" for p in paths) > 1:
        raise GpukitError("standard input ('-') can be read only once: give it for the qrels or for one run, not both")


def _cut_extra_fields(block: bytes, n_fields: int) -> bytes:
    """Drop everything after the ``n_fields``-th field of each (normalised) line."""
    pattern = re.compile(rb"^((?:[^ \n]+ ){%d}[^ \n]+) [^\n]*" % (n_fields - 1), re.MULTILINE)
    return pattern.sub(rb"\1", block)


_SCAN_BYTES = 1 << 20  # cache-sized pieces for the control-byte scan


def _has_slow_whitespace(buf, start: int, end: int) -> bool:
    """Whether a block may need ``_normalise`` beyond what Arrow's parse reveals.

    Tabs, CR, FF and VT (any control byte but the newline) are found in one
    vectorised scan, comment marks by memchr. Leading, trailing and doubled
    spaces are found after the fast parse instead, as empty fields (see
    ``_has_empty_field``).
    """
    return _has_control_byte(buf, start, end) or buf.find(b"#", start, end) >= 0


def _has_control_byte(buf, start: int, end: int) -> bool:
    """Whether ``buf[start:end]`` holds a byte below 0x20 other than the newline."""
    data = np.frombuffer(memoryview(buf)[start:end], dtype=np.uint8)
    scratch = np.empty(min(_SCAN_BYTES, len(data)), dtype=np.uint8)
    for lo in range(0, len(data), _SCAN_BYTES):
        part = data[lo : lo + _SCAN_BYTES]
        s = scratch[: len(part)]
        # x ^ 0x0A maps the newline to 0 and the other bytes below 0x20 to
        # 1..31; minus 1 (wrapping) puts exactly those at 0..30, and every
        # other byte (the newline included) at 31 or more.
        np.bitwise_xor(part, 0x0A, out=s)
        np.subtract(s, 1, out=s)
        if int(s.min()) < 31:
            return True
    return False


def _has_empty_field(table: pa.Table) -> bool:
    """Whether any string field of a parsed block is empty (a stray space)."""
    for column in table.columns:
        if not (pa.types.is_string(column.type) or pa.types.is_binary(column.type)):
            continue
        for chunk in column.chunks:
            if len(chunk) and int(np.diff(value_offsets(chunk)).min()) == 0:
                return True
    return False


def _mapped(fh) -> mmap.mmap | None:
    """A read-only map of a plain file (None when it cannot be mapped, e.g. empty)."""
    try:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (ValueError, OSError, AttributeError, io.UnsupportedOperation):
        return None
    if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
        mapped.madvise(mmap.MADV_SEQUENTIAL)
    return mapped


def _drop_pages(mapped: mmap.mmap, start: int, length: int) -> None:
    """Unmap parsed pages of a mapped file, so they stop counting in RSS."""
    if not (hasattr(mapped, "madvise") and hasattr(mmap, "MADV_DONTNEED")):
        return
    lo = start - start % mmap.PAGESIZE
    hi = start + length
    hi -= hi % mmap.PAGESIZE
    if hi > lo:
        mapped.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def _mapped_blocks(mapped: mmap.mmap | bytes):
    """Blocks of a mapped file (or of a gzip file's whole text, :func:`_inflated_whole`):
    ``(view, offset, length, needs normalising)``, zero-copy."""
    size = len(mapped)
    whole = memoryview(mapped)
    offset = 0
    while offset < size:
        end = min(offset + BLOCK_BYTES, size)
        cut = size if end == size else mapped.rfind(b"\n", offset, end) + 1
        if cut == 0:  # no newline in a whole block: the block runs to the next one (if not too far)
            nl = mapped.find(b"\n", end, offset + MAX_LINE_BYTES + 1)
            cut = nl + 1 if nl >= 0 else min(size, max(end, offset + MAX_LINE_BYTES + 1))
        long = _long_line(mapped, offset, cut, MAX_LINE_BYTES)
        if long >= 0:
            raise _LineTooLong(long, mapped[long : long + 4 * ECHO_CHARS])
        slow = _has_slow_whitespace(mapped, offset, cut) or _has_bom(mapped, offset, cut, offset == 0)
        yield whole[offset:cut], offset, cut - offset, slow
        offset = cut


@functools.cache
def member_inflater():
    """The module whose ``decompressobj`` inflates a whole gzip member in
    :func:`_inflated_whole`: ISA-L's (python-isal's ``isal_zlib``, a
    dependency on the platforms it has wheels for), which inflates a TREC
    run two to three times as fast as zlib (docs/benchmarks.md, "Eleventh
    pass"); zlib where it is not installed. Both take zlib's API and check the
    member's CRC-32 and length; any error of either sends the file to the
    stream (:func:`open_gzip`, by the same library), so what is accepted, and
    every error, are the stream's."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib
    return isal_zlib


def _inflated_whole(path: str, text_hint: int) -> bytes | None:
    """The text of a gzip file of one member that fits one block, inflated
    by one call (:func:`member_inflater`); None for any other file, which is
    then streamed (:func:`open_gzip`: several members, zero padding or other
    bytes after the member, a damaged or truncated stream, more than
    ``BLOCK_BYTES`` of text; its errors, and what it accepts, stay the
    stream's). The inflater checks the member's header, CRC-32 and length as
    the stream does.

    Why: the gzip module inflates 8 KiB of input per call, taking Python's
    GIL back between calls, so on a worker thread (:mod:`gpukit.data.run_texts`)
    it and the calling thread's work stall each other; one call releases
    the GIL once (docs/benchmarks.md, "Seventh pass"). ``text_hint``: the
    file's :func:`gzip_buffer_hint`."""
    if text_hint >= BLOCK_BYTES:
        return None
    with open(path, "rb") as fh:
        packed = fh.read()
    inflate = member_inflater()
    inflater = inflate.decompressobj(inflate.MAX_WBITS | 16)  # gzip wrapper
    try:
        text = inflater.decompress(packed, BLOCK_BYTES)
    except inflate.error:
        return None
    if not inflater.eof or inflater.unused_data or inflater.unconsumed_tail:
        return None
    return text


def _buffered_blocks(fh: io.BufferedIOBase, size_hint: int):
    """Blocks of a stream (gzip) read into two alternating buffers:
    ``(view, offset, length, needs normalising)``. A buffer is refilled only
    after the block before last was consumed, which the caller guarantees by
    collecting each block's parse before asking for the next one."""
    # Sized to the data when it is small (a fresh 64 MiB buffer costs more than parsing a small file).
    buffers: list[bytearray] = [bytearray(min(BLOCK_BYTES, max(1 << 16, size_hint)))]
    current = 0
    offset = 0
    carry = b""  # an unfinished line, moved to the start of the next block
    while True:
        if current == len(buffers):
            buffers.append(bytearray(len(buffers[0])))
        buf = buffers[current]
        if len(carry) >= len(buf):  # a line longer than this buffer (a new one: a parse may still see the old)
            buf = buffers[current] = bytearray(max(2 * len(buf), 2 * len(carry)))
        elif offset and len(buf) < BLOCK_BYTES:  # more data than the size hint said
            buf = buffers[current] = bytearray(min(BLOCK_BYTES, 4 * len(buf)))
        buf[: len(carry)] = carry  # same length: never resizes a buffer a parse may still see
        view = memoryview(buf)
        total = len(carry) + _read_into(fh, view[len(carry):])
        at_end = total < len(buf)
        cut = total if at_end else buf.rfind(b"\n", 0, total) + 1
        if cut == 0 and not at_end:  # one line longer than a block: keep reading
            if total > MAX_LINE_BYTES:
                raise _LineTooLong(offset, bytes(buf[: 4 * ECHO_CHARS]))
            carry = bytes(buf[:total])
            continue
        long = _long_line(buf, 0, cut, MAX_LINE_BYTES)
        if long >= 0:
            raise _LineTooLong(offset + long, bytes(buf[long : long + 4 * ECHO_CHARS]))
        carry = bytes(buf[cut:total])
        yield view[:cut], offset, cut, _has_slow_whitespace(buf, 0, cut) or _has_bom(buf, 0, cut, offset == 0)
        offset += cut
        current = (current + 1) % 2
        if at_end:
            return


def _read_into(fh: io.BufferedIOBase, view: memoryview) -> int:
    """Fill ``view`` from ``fh`` as far as the file allows; bytes read."""
    filled = 0
    while filled < len(view):
        n = fh.readinto(view[filled:])
        if not n:
            break
        filled += n
    return filled


class _InlineExecutor:
    """``submit`` runs the call at once on the calling thread (small inputs: no thread hand-off)."""

    def __enter__(self) -> "_InlineExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable, *args: object) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # re-raised by result(), in block order, as from a thread
            future.set_exception(exc)
        return future


def read_table(
    path: str | os.PathLike,
    columns: Sequence[Column],
    what: str,
    rest_of_line_ignored: bool = False,
    *,
    stop: threading.Event | None = None,
) -> ParsedTable:
    """Read a whitespace-separated table; ``what`` names the format in errors.

    With ``rest_of_line_ignored`` a line may carry more fields than columns and
    the extra ones are ignored (trec_eval reads the run tag and skips the rest
    of the line); too few fields is always an error.

    Id columns come back as plain ``pa.string()`` chunks (see
    :func:`string_codes`). The file is read block by block into one reused
    buffer. A block is first parsed as it is (single-space separated, the usual
    case), with the skipped columns kept as raw bytes only to check that no
    field is empty: an empty field means a leading, trailing or doubled
    space, and such a block (or one with tabs, CRs or ``#``) is parsed again
    after ``_normalise``, exactly as before. Line numbers are counted only
    when an error message needs them.

    ``path`` ``"-"`` is standard input (named ``<stdin>`` in errors). A path
    that is not a regular file is read once into a temporary file first (see
    :func:`_spool`); a directory, a missing or unreadable path is an error
    naming it.

    ``stop``: once set, the read ends before its next block with
    :class:`~gpukit.errors.ReadStopped` (a read on another thread whose
    table is no longer wanted; at most the block being parsed is finished).
    """
    source = os.fspath(path)
    spooled: str | None = None
    if source == "-":
        source = "<stdin>"
        spooled = _spool(sys.stdin.buffer, source)
    else:
        try:
            mode = os.stat(source).st_mode
        except FileNotFoundError:
            raise InputFormatError(source, None, "no such file") from None
        except OSError as exc:
            raise InputFormatError(source, None, f"cannot open: {exc.strerror or exc}") from None
        if stat.S_ISDIR(mode):
            raise InputFormatError(source, None, "is a directory, not a file")
        if not stat.S_ISREG(mode):
            try:
                stream = open(source, "rb")
            except OSError as exc:
                raise InputFormatError(source, None, f"cannot open: {exc.strerror or exc}") from None
            with stream:
                spooled = _spool(stream, source)
    try:
        table = _read_file(source, spooled or source, columns, what, rest_of_line_ignored, stop)
    except BaseException:
        if spooled:
            _remove(spooled)
        raise
    if spooled:
        weakref.finalize(table, _remove, spooled)  # line numbers of later errors still read it
    return table


def _read_tiny(source: str, file: str, columns: Sequence[Column], rest_of_line_ignored: bool) -> ParsedTable | None:
    """:func:`_read_file` by :func:`parse_tiny` for a small, clean input; None
    for any other (too big, not clean, unreadable: the Arrow reader decides)."""
    cap = min(TINY_INPUT_BYTES, BLOCK_BYTES)
    try:
        with open(file, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > cap:
                return None
            text = fh.read(cap + 1)
            gzipped = text[:2] == _GZIP_MAGIC
            if gzipped:
                if GZIP_TEXT_FACTOR * size >= cap:
                    return None
                with _gzip_library().GzipFile(fileobj=io.BytesIO(text), mode="rb") as stream:
                    text = stream.read(cap + 1)
    except gzip_errors():
        return None
    if len(text) > cap:
        return None
    size = len(text)  # line numbers of later errors are counted in these bytes
    max_line = MAX_LINE_BYTES
    if text.startswith(_BOM):
        text = text[len(_BOM) :]
        max_line -= len(_BOM)  # the Arrow reader counts it in the first line (stricter for all: never looser)
    if text and not text.endswith(b"\n"):
        text += b"\n"
    parsed = parse_tiny(text, columns, rest_of_line_ignored, max_line)
    if parsed is None:
        return None
    arrays, rows = parsed
    opener = _opener_for(file, gzipped)
    columns_out = {name: pa.chunked_array([array]) for name, array in arrays.items()}
    return ParsedTable(source, columns_out, rows, [(0, size, 1, rows)], opener)


def _read_file(
    source: str, file: str, columns: Sequence[Column], what: str, rest_of_line_ignored: bool, stop: threading.Event | None = None
) -> ParsedTable:
    """:func:`read_table` of the regular file ``file``; ``source`` names it in errors."""
    tiny = _read_tiny(source, file, columns, rest_of_line_ignored)
    if tiny is not None:
        return tiny
    try:
        gzipped = is_gzip(file)
    except OSError as exc:
        raise InputFormatError(source, None, f"cannot open: {exc.strerror or exc}") from None
    wanted = [c.name for c in columns if c.kind != "skip"]
    ints = [c.name for c in columns if c.kind == "int"]
    convert = pacsv.ConvertOptions(
        column_types={c.name: _parse_type(c.kind) for c in columns},
        include_columns=wanted,
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
    )
    # Fast path: every column materialised (skipped ones as unvalidated bytes) so empty fields show.
    convert_checked = pacsv.ConvertOptions(
        column_types={c.name: pa.binary() if c.kind == "skip" else _parse_type(c.kind) for c in columns},
        include_columns=[c.name for c in columns],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
    )
    parse = pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False, ignore_empty_lines=True)
    opener = _opener_for(file, gzipped)
    size_hint = _text_bytes(file, gzipped)
    small = size_hint < SMALL_INPUT_BYTES
    read = pacsv.ReadOptions(column_names=[c.name for c in columns], use_threads=not small, block_size=4 << 20)

    arrow_pool = parse_pool()

    def parse_block(block: memoryview, slow: bool, block_offset: int) -> pa.Table | None:
        """One block to a table of the wanted columns (None: no data lines)."""
        if block_offset == 0 and bytes(block[: len(_BOM)]) == _BOM:
            block = block[len(_BOM) :]  # skipped at the start of the file only (Arrow would skip it at any block's start)

        def bad_line() -> InputFormatError:
            line_no = 1 + _count_newlines(opener, block_offset)
            return _diagnose(source, bytes(block), line_no, columns, what, rest_of_line_ignored)

        table = None
        if not slow:
            arrow_block = pa.py_buffer(block)
            try:
                checked = pacsv.read_csv(arrow_block, read_options=read, parse_options=parse, convert_options=convert_checked, memory_pool=arrow_pool)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                checked = None
            del arrow_block
            if checked is not None and not _has_empty_field(checked):
                table = checked.select(wanted)
            del checked
        if table is None:
            raw = bytes(block)
            normalised = _normalise(raw)
            # Normalised, a block holds no tab, CR, FF or VT: any control byte left
            # but the newline is an error, and so is a BOM (a block with either is
            # flagged slow by the block readers).
            if slow and (_has_control_byte(normalised, 0, len(normalised)) or _has_bom(normalised, 0, len(normalised), False)):
                raise bad_line()
            if not normalised.strip():
                return None
            try:
                table = pacsv.read_csv(pa.py_buffer(normalised), read_options=read, parse_options=parse, convert_options=convert, memory_pool=arrow_pool)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                table = None
                if rest_of_line_ignored:
                    try:
                        table = pacsv.read_csv(
                            pa.py_buffer(_cut_extra_fields(normalised, len(columns))),
                            read_options=read, parse_options=parse, convert_options=convert, memory_pool=arrow_pool,
                        )
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                        table = None
                if table is None:
                    raise bad_line() from None
        if ints:
            table = _parse_ints(table, ints)
            if table is None:
                raise bad_line()
        return table

    chunks: dict[str, list[pa.Array]] = {name: [] for name in wanted}
    blocks: list[tuple[int, int, int | None, int]] = []

    def collect(job: tuple[Future, int, int]) -> None:
        future, block_offset, length = job
        table = future.result()
        rows = 0
        if table is not None:
            for name in wanted:
                chunks[name].extend(c for c in table.column(name).chunks if len(c))
            rows = table.num_rows
        blocks.append((block_offset, length, None, rows))

    # The next block is read (and scanned) while Arrow parses the previous one
    # on another thread; blocks are collected in order, so the first bad block
    # is the one reported.
    try:
        fh = opener()
    except OSError as exc:
        raise InputFormatError(source, None, f"cannot open: {exc}") from None
    pending: tuple[Future, int, int] | None = None
    executor = _InlineExecutor() if small else ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpukit-parse")
    with fh, executor as pool:
        mapped = _mapped(fh) if not gzipped else None
        buffer_hint = gzip_buffer_hint(file) if gzipped else size_hint
        inflated = _inflated_whole(file, buffer_hint) if gzipped else None
        if mapped is not None or inflated is not None:
            reader = _mapped_blocks(mapped if mapped is not None else inflated)  # type: ignore[arg-type]
        else:
            reader = _buffered_blocks(fh, buffer_hint + 1)
        del inflated  # the reader holds the text while it yields views of it
        while True:
            if stop is not None and stop.is_set():
                raise ReadStopped(source)
            try:
                item = next(reader, None)
            except (*gzip_errors(), _LineTooLong) as exc:  # zlib's or ISA-L's error: a damaged deflate stream
                if pending is not None:
                    collect(pending)  # an error in an earlier block comes first
                if isinstance(exc, _LineTooLong):
                    raise _too_long(source, 1 + _count_newlines(opener, exc.offset), exc.head) from None
                raise InputFormatError(source, None, f"cannot read (corrupt gzip?): {exc}") from None
            if pending is not None:
                collect(pending)
                if mapped is not None:
                    _drop_pages(mapped, pending[1], pending[2])
                pending = None
                release_arrow_memory()  # the block's skipped columns, parsed only to be checked
            if item is None:
                break
            view, block_offset, cut, slow = item
            if cut:
                pending = (pool.submit(parse_block, view, slow, block_offset), block_offset, cut)
            else:
                blocks.append((block_offset, 0, None, 0))
            del view, item
    num_rows = sum(b[3] for b in blocks)
    if num_rows == 0:
        raise InputFormatError(source, None, f"empty {what} file: no data lines")
    arrays = {
        name: pa.chunked_array(parts, type=_arrow_type(next(c.kind for c in columns if c.name == name)))
        for name, parts in chunks.items()
    }
    return ParsedTable(source, arrays, num_rows, blocks, opener)

