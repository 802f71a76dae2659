"""Fast, memory-lean reading of whitespace-separated text tables (TREC files).

The happy path is pyarrow's multi-threaded CSV parser over 64 MiB blocks of
the file, read into one reused buffer, with id columns as plain Arrow strings
so that a 100M-line run never becomes 100M Python strings. A block is parsed
as it is first; only a block with tabs, CRs or ``#``, or whose parse shows an
empty field (a stray space), is whitespace-normalised and parsed again. Every
failure is re-checked by a slow line-by-line scan of the offending block so
that the error names the file, the line and the problem; line numbers are
counted only then.

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

Ids become integer codes into byte-wise sorted vocabularies by sorting, not
hashing (see :func:`string_codes`): on large vocabularies hash tables are
dominated by cache misses, and unifying per-block Arrow dictionaries was the
single largest cost of the previous reader.
"""
from __future__ import annotations

import gc
import gzip
import importlib
import io
import mmap
import os
import re
import stat
import sys
import tempfile
import weakref
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from gpukit.errors import ECHO_CHARS, GpukitError, InputFormatError, UsageError, UsageTypeError, echo


class LazyModule:
    """A module imported on its first attribute access, then reached through
    ``sys.modules`` (a dict look-up) on every later one.

    Why: ``pyarrow.compute`` builds a Python wrapper for each of Arrow's
    several hundred kernels when imported; in a process that has imported
    torch, the garbage collections those allocations trigger walk torch's
    objects too, which made it ~0.1-0.2 s of ``gpukit eval``'s start-up.
    Modules that only sometimes call a kernel name it through this instead.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        module = sys.modules.get(self._name)
        if module is None:
            # The collections the import's allocations trigger would walk every
            # object of the process (torch's included) and free nothing of
            # the import's own: collection is paused for its duration, and
            # restored as it was.
            was_enabled = gc.isenabled()
            gc.disable()
            try:
                module = importlib.import_module(self._name)
            finally:
                if was_enabled:
                    gc.enable()
        return getattr(module, attr)


#: ``pyarrow.compute``, imported when first used (see LazyModule).
pc = LazyModule("pyarrow.compute")

BLOCK_BYTES = 64 << 20
#: Inputs smaller than this (bytes of text; a gzip file counts 8x its size) are
#: parsed on the calling thread with Arrow's threads off: below it, handing
#: blocks to threads costs more than it overlaps (crossover measured in
#: docs/benchmarks.md, "Reader strategy by input size").
SMALL_INPUT_BYTES = 16 << 20
#: The longest line (bytes before its newline) a reader accepts: bounds the
#: memory a file without newlines (``/dev/zero``) can take.
MAX_LINE_BYTES = 1 << 20

#: The score spellings accepted (the fast parser's; see the module docstring).
FLOAT_TEXT = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?))"
)
#: The integer spelling accepted (qrels grades).
INT_TEXT = re.compile(r"-?[0-9]+")
_INT_TEXT_ARROW = "^-?[0-9]+$"
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


def _is_gzip(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def _opener_for(path: str) -> Callable[[], io.BufferedIOBase]:
    if _is_gzip(path):
        return lambda: gzip.open(path, "rb")  # type: ignore[return-value]
    return lambda: open(path, "rb")


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
    not a plain decimal integer within int64 (Arrow's own integer parser
    would accept ``0x1``)."""
    for name in names:
        column = table.column(name)
        if len(column) and not pc.all(pc.match_substring_regex(column, _INT_TEXT_ARROW)).as_py():
            return None
        try:
            converted = pc.cast(column, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
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
            if len(chunk) and int(np.diff(_offsets(chunk)).min()) == 0:
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


def _mapped_blocks(mapped: mmap.mmap):
    """Blocks of a mapped file: ``(view, offset, length, needs normalising)``, zero-copy."""
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
    path: str | os.PathLike, columns: Sequence[Column], what: str, rest_of_line_ignored: bool = False
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
        table = _read_file(source, spooled or source, columns, what, rest_of_line_ignored)
    except BaseException:
        if spooled:
            _remove(spooled)
        raise
    if spooled:
        weakref.finalize(table, _remove, spooled)  # line numbers of later errors still read it
    return table


def _read_file(source: str, file: str, columns: Sequence[Column], what: str, rest_of_line_ignored: bool) -> ParsedTable:
    """:func:`read_table` of the regular file ``file``; ``source`` names it in errors."""
    try:
        opener = _opener_for(file)
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
    gzipped = _is_gzip(file)
    size_hint = os.path.getsize(file) * (8 if gzipped else 1)
    small = size_hint < SMALL_INPUT_BYTES
    read = pacsv.ReadOptions(column_names=[c.name for c in columns], use_threads=not small, block_size=4 << 20)

    arrow_pool = _parse_pool()

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
        reader = _mapped_blocks(mapped) if mapped is not None else _buffered_blocks(fh, size_hint + 1)
        while True:
            try:
                item = next(reader, None)
            except (OSError, EOFError, zlib.error, _LineTooLong) as exc:  # zlib.error: a damaged deflate stream
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


# --------------------------------------------------------------------------
# Coding string columns without big hash tables.
#
# Hashing millions of distinct ids (Arrow's dictionary_encode / index_in, or
# NumPy's unique) is dominated by cache and TLB misses, and unifying the
# per-block dictionaries of a CSV read is quadratic in practice. The codes are
# instead computed by sorting: every string is turned into an integer key
# whose order is the strings' byte order (a mixed-radix number over the byte
# values seen at each position, so "D1234567" takes ~24 bits, not 64), the
# row number is packed into the low bits of the same uint64, and one direct
# (cache-friendly) sort gives both the sorted vocabulary and each row's code.
# Grouped columns (a run's query ids) are run-length coded first. Keys that do
# not fit fall back to a sort over several passes, and as a last resort to
# Arrow's hash table.
# --------------------------------------------------------------------------

_SLICE_ROWS = 1 << 18  # rows per slice when building byte matrices
_CACHE_BYTES = 256 << 20  # byte matrices kept between the two passes up to this size
# _LOW_MASKS[k] keeps the first k bytes (in memory order) of a little-endian uint64.
_LOW_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype="<u8")
_SCAN_ROWS = 1 << 18  # rows per slice when scanning sorted keys (small: temporaries stay in cache)
_MAX_KEY_BYTES = 64  # longer ids go straight to the hash fallback
_MAX_SORT_PASSES = 4


def _offsets(chunk: pa.Array) -> np.ndarray:
    """The value offsets of a (large_)string/binary array, offset-aware."""
    large = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
    dtype = np.int64 if large else np.int32
    width = 8 if large else 4
    return np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk) + 1, offset=chunk.offset * width)


def _values(chunk: pa.Array) -> np.ndarray:
    data = chunk.buffers()[2]
    return np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)


# Fixed-width Arrow types whose data buffer NumPy can view as is.
_NUMPY_DTYPE = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
    pa.float32(): np.float32, pa.float64(): np.float64,
}


def arrow_indices(positions: np.ndarray | Sequence[int]) -> pa.Array:
    """Row positions as an Arrow int64 array over the NumPy buffer, for ``take``.

    Same result as ``pa.array(positions, pa.int64())``, which imports pandas
    on first use (see :func:`numpy_values`).
    """
    data = np.ascontiguousarray(positions, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def numpy_values(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a numeric Arrow array (or chunked array) as NumPy.

    A null-free fixed-width array is read straight from its data buffer (a
    read-only view); a chunked array always gives a new, writable array, as
    ``ChunkedArray.to_numpy`` does. Anything else goes through ``to_numpy``.
    Why not always ``to_numpy``: in pyarrow it imports pandas on first use, a
    fixed ~0.2-0.3 s that a small evaluation from the command line would
    otherwise pay.
    """
    if isinstance(array, pa.ChunkedArray):
        chunks = [numpy_values(c) for c in array.chunks]
        if not chunks:
            return np.empty(0, dtype=_NUMPY_DTYPE.get(array.type, np.float64))
        return chunks[0].copy() if len(chunks) == 1 else np.concatenate(chunks)
    dtype = _NUMPY_DTYPE.get(array.type)
    if dtype is None or array.null_count:
        return array.to_numpy(zero_copy_only=False)
    if len(array) == 0:
        return np.empty(0, dtype=dtype)
    itemsize = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * itemsize)


def _string_chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out = []
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_decode()
        if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)
                or pa.types.is_binary(chunk.type) or pa.types.is_large_binary(chunk.type)):
            raise UsageTypeError(f"expected a string column, got {chunk.type}")
        if chunk.null_count:
            raise UsageError("string column contains nulls")
        if pa.types.is_binary(chunk.type) or pa.types.is_large_binary(chunk.type):
            chunk = chunk.cast(pa.string() if pa.types.is_binary(chunk.type) else pa.large_string())
        if len(chunk):
            out.append(chunk)
    return out


def _parallel_map(fn: Callable, items: Sequence) -> list:
    """``[fn(x) for x in items]`` on a few threads (NumPy and Arrow release the
    GIL in these loops). A pool per call: nothing lingers to break a fork."""
    workers = min(len(items), os.cpu_count() or 1, 8)
    if workers <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gpukit-codes") as pool:
        return list(pool.map(fn, items))


class _ByteRows:
    """The first ``width`` bytes of every string of ``chunks``, zero padded,
    as (rows, width) uint8 matrices over slices of rows.

    Each string is read as whole 8-byte words by one gather per word (an
    unaligned uint64 view of the slice's bytes) and masked to its length, so
    the cost is a few passes per row, not one per byte. Slices are processed
    in parallel (:meth:`map`), and their words are kept for a second pass
    when they are small.
    """

    def __init__(self, chunks: list[pa.Array], width: int):
        self.chunks = chunks
        self.width = width
        self.words_per_row = (width + 7) // 8
        self.slices: list[tuple[int, int, int, int]] = []  # (chunk, lo, hi, first global row)
        at = 0
        for index, c in enumerate(chunks):
            for lo in range(0, len(c), _SLICE_ROWS):
                self.slices.append((index, lo, min(lo + _SLICE_ROWS, len(c)), at + lo))
            at += len(c)
        cacheable = at * 8 * self.words_per_row <= _CACHE_BYTES
        self._cache: list[np.ndarray | None] | None = [None] * len(self.slices) if cacheable else None

    def _words(self, i: int) -> np.ndarray:
        """(rows, words) little-endian uint64 words of slice ``i``."""
        if self._cache is not None and self._cache[i] is not None:
            return self._cache[i]  # type: ignore[return-value]
        index, lo, hi, _ = self.slices[i]
        c = self.chunks[index]
        off, data = _offsets(c), _values(c)
        words = self.words_per_row
        first, last = int(off[lo]), int(off[hi])
        padded = np.zeros(last - first + 8 * words + 8, dtype=np.uint8)
        padded[: last - first] = data[first:last]
        view = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
        starts = off[lo:hi].astype(np.int64) - first
        lengths = off[lo + 1 : hi + 1].astype(np.int64) - off[lo:hi]
        out = np.empty((hi - lo, words), dtype="<u8")
        for w in range(words):
            word = view[starts + 8 * w]
            word &= _LOW_MASKS[np.clip(lengths - 8 * w, 0, 8)]
            out[:, w] = word
        if self._cache is not None:
            self._cache[i] = out
        return out

    def _bytes(self, out: np.ndarray) -> np.ndarray:
        """The (rows, width) uint8 view of (rows, words) little-endian words."""
        return out.view(np.uint8).reshape(len(out), 8 * out.shape[1])[:, : self.width]

    def map(self, fn: Callable[[int, np.ndarray], object]) -> list:
        """``fn(first global row, byte matrix)`` for every slice, in parallel, in order."""
        return _parallel_map(lambda i: fn(self.slices[i][3], self._bytes(self._words(i))), range(len(self.slices)))

    def all_words(self) -> np.ndarray:
        """(rows, words) little-endian words of every row (built in parallel)."""
        parts = _parallel_map(self._words, range(len(self.slices)))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def rows(self, index: np.ndarray) -> np.ndarray | None:
        """(len(index), width) byte rows of the given rows, from the cache (None if not cached)."""
        if self._cache is None or any(w is None for w in self._cache) or not self._cache:
            return None
        words = np.concatenate(self._cache) if len(self._cache) > 1 else self._cache[0]  # type: ignore[arg-type]
        return self._bytes(words[index])


@dataclass
class _KeyPlan:
    """Mixed-radix key layout: per segment, the byte positions and their weights."""

    width: int  # bytes examined per string
    lut: np.ndarray  # (width, 256) uint64: rank of each byte value at each position
    segments: list[list[tuple[int, int]]]  # [(position, weight)] per segment
    bits: list[int]  # bits needed by each segment's values
    sources: list[_ByteRows]  # byte matrices of each chunk list given to _plan_keys
    symbols: list[np.ndarray]  # byte values present at each position, ascending (0 = padding)


def _key_width(chunks: list[pa.Array]) -> int | None:
    """Longest id in bytes (at least 1), or None if one is longer than
    ``_MAX_KEY_BYTES`` or holds a NUL byte (zero padding would be ambiguous)."""
    width = 0
    for c in chunks:
        off = _offsets(c)
        width = max(width, int(np.diff(off).max()))
        data = _values(c)[int(off[0]) : int(off[-1])]
        if len(data) and np.count_nonzero(data) != len(data):
            return None
    return max(width, 1) if width <= _MAX_KEY_BYTES else None


def _plan_keys(chunk_lists: Sequence[list[pa.Array]], capacities: Sequence[int]) -> _KeyPlan | None:
    """Lay out order-preserving integer keys for the strings of ``chunk_lists``.

    ``capacities[i]`` is the number of bits segment ``i`` may use (the last
    capacity repeats). Returns None when an id holds a NUL byte (padding
    would be ambiguous), is longer than ``_MAX_KEY_BYTES``, or the keys would
    need more segments than ``len(capacities)`` allows.
    """
    width = _key_width([c for chunk_list in chunk_lists for c in chunk_list])
    if width is None:
        return None
    counts = np.zeros((width, 256), dtype=np.int64)
    sources = [_ByteRows(chunk_list, width) for chunk_list in chunk_lists]

    def histogram(_: int, m: np.ndarray) -> np.ndarray:
        return np.stack([np.bincount(m[:, j], minlength=256) for j in range(width)])

    for source in sources:
        for part in source.map(histogram):
            counts += part
    present = counts > 0
    lut = (np.cumsum(present, axis=1) - 1).clip(min=0).astype(np.uint64)
    radix = present.sum(axis=1)
    segments: list[list[tuple[int, int]]] = []
    bits: list[int] = []
    current: list[int] = []
    product = 1

    def close() -> None:
        weights, w = [], 1
        for pos in reversed(current):
            weights.append((pos, w))
            w *= int(radix[pos])
        segments.append(list(reversed(weights)))
        bits.append(max(1, (product - 1).bit_length()))

    for pos in range(width):
        r = int(radix[pos])
        if r <= 1:
            continue  # a constant byte carries no order information
        cap = capacities[min(len(segments), len(capacities) - 1)]
        if current and product * r > (1 << cap):
            close()
            current, product = [], 1
            if len(segments) >= len(capacities):
                return None
            cap = capacities[min(len(segments), len(capacities) - 1)]
        if r > (1 << max(cap, 0)):
            return None
        current.append(pos)
        product *= r
    if current or not segments:
        close()
    symbols = [np.flatnonzero(row).astype(np.uint8) for row in present]
    return _KeyPlan(width, lut, segments, bits, sources, symbols)


def _segment_keys(plan: _KeyPlan, which: int, segment: int) -> np.ndarray:
    """uint64 key of segment ``segment`` for every row of chunk list ``which``."""
    source = plan.sources[which]
    layout = plan.segments[segment]
    n = sum(len(c) for c in source.chunks)
    keys = np.zeros(n, dtype=np.uint64)
    if not layout:
        return keys
    # Horner's rule over the positions: key = key * radix + rank(byte).
    steps = []
    for i, (pos, _) in enumerate(layout):
        radix = layout[i - 1][1] // layout[i][1] if i else 0
        steps.append((pos, np.uint64(radix), plan.lut[pos]))
    def horner(lo: int, m: np.ndarray) -> None:
        key = keys[lo : lo + len(m)]
        for pos, radix, lut in steps:
            if radix:
                key *= radix
            key += lut.take(m[:, pos])

    source.map(horner)
    return keys


def _sorted_ranks(
    keys: np.ndarray, rowbits: int, want_firsts: bool
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Dense rank of each row's key (rank order = key order) by one direct sort.

    ``keys`` must be < 2**(64 - rowbits); the array is overwritten. Returns
    (rank of each row, and if ``want_firsts`` the first row and the key of
    each rank).
    """
    n = len(keys)
    packed = keys  # packed in place: the caller's keys are consumed
    packed <<= np.uint64(rowbits)
    for lo in range(0, n, _SCAN_ROWS):
        packed[lo : lo + _SCAN_ROWS] |= np.arange(lo, min(lo + _SCAN_ROWS, n), dtype=np.uint64)
    packed.sort()
    mask = np.uint64((1 << rowbits) - 1)
    rowbits_u = np.uint64(rowbits)
    ranks = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)
    bounds = [(lo, min(lo + _SCAN_ROWS, n)) for lo in range(0, n, _SCAN_ROWS)]

    def flags(b: tuple[int, int]) -> np.ndarray:
        lo, hi = b
        k = packed[lo:hi] >> rowbits_u
        new = np.empty(hi - lo, dtype=bool)
        new[1:] = k[1:] != k[:-1]
        new[0] = lo == 0 or k[0] != (packed[lo - 1] >> rowbits_u)
        return new

    # Two parallel passes over the sorted keys: flag where a key starts, then
    # number the keys (offset by the keys of earlier slices) and scatter.
    news = _parallel_map(flags, bounds)
    before = np.concatenate([[0], np.cumsum([int(np.count_nonzero(x)) for x in news])])

    def assign(i: int):
        lo, hi = bounds[i]
        part = packed[lo:hi]
        rows = (part & mask).astype(np.intp)
        r = np.cumsum(news[i], dtype=ranks.dtype)
        r += ranks.dtype.type(before[i] - 1)
        ranks[rows] = r
        if want_firsts:
            return rows[news[i]], part[news[i]] >> rowbits_u
        return None

    parts = _parallel_map(assign, range(len(bounds)))
    del packed, news
    if not want_firsts:
        return ranks, None, None
    return ranks, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _pass_capacities(rowbits: int) -> list[int]:
    """Key bits per sort pass: the first pass has all bits above the row
    number, later ones also carry the previous pass's rank (< 2**rowbits)."""
    return [64 - rowbits] + [64 - 2 * rowbits] * (_MAX_SORT_PASSES - 1)


def _packed_codes(chunks: list[pa.Array], n: int) -> tuple[np.ndarray, pa.Array] | None:
    """(codes, sorted vocabulary) via order-preserving keys, or None."""
    rowbits = max(1, (n - 1).bit_length())
    capacities = _pass_capacities(rowbits)
    if min(capacities) < 8:
        return None
    plan = _plan_keys([chunks], capacities)
    if plan is None:
        return None
    ranks: np.ndarray | None = None
    firsts: np.ndarray | None = None
    first_keys: np.ndarray | None = None
    last = len(plan.segments) - 1
    for i in range(len(plan.segments)):
        keys = _segment_keys(plan, 0, i)
        if ranks is not None:
            # Previous ranks (< 2**rowbits) become the high digits of this pass.
            keys |= ranks.astype(np.uint64) << np.uint64(plan.bits[i])
        ranks, firsts, first_keys = _sorted_ranks(keys, rowbits, i == last)
        del keys
    assert ranks is not None and firsts is not None and first_keys is not None
    # The vocabulary's bytes: the cached byte rows of each code's first row, or
    # (one pass) decoded from the keys themselves; the strings are rebuilt from them.
    matrix = plan.sources[0].rows(firsts)
    if matrix is None and len(plan.segments) == 1:
        matrix = _decode_keys(plan, first_keys)
    if matrix is not None:
        vocab = _strings_from_matrix(matrix)
        if vocab is not None:
            return ranks, vocab
    # Several passes: the last keys hold ranks, not bytes; fetch the strings in file order.
    by_row = np.argsort(firsts, kind="stable") if len(firsts) < (1 << 16) else None
    if by_row is None:
        packed = firsts.astype(np.uint64)  # (row << rankbits | rank) sorted by row
        rankbits = max(1, (len(firsts) - 1).bit_length())
        packed <<= np.uint64(rankbits)
        packed |= np.arange(len(firsts), dtype=np.uint64)
        packed.sort()
        by_row = (packed & np.uint64((1 << rankbits) - 1)).astype(np.int64)
        del packed
    taken = _take_rows(chunks, firsts[by_row])
    position = np.empty(len(by_row), dtype=np.int64)
    position[by_row] = np.arange(len(by_row), dtype=np.int64)
    return ranks, taken.take(arrow_indices(position))


def _decode_keys(plan: _KeyPlan, keys: np.ndarray) -> np.ndarray:
    """(n, width) byte rows of single-segment ``keys``, rebuilt from their digits."""
    n = len(keys)
    matrix = np.zeros((n, plan.width), dtype=np.uint8)
    for pos in range(plan.width):
        if len(plan.symbols[pos]) == 1:
            matrix[:, pos] = plan.symbols[pos][0]
    rest = keys.copy()
    for pos, weight in plan.segments[0]:
        w = np.uint64(weight)
        digit = rest // w
        rest -= digit * w
        matrix[:, pos] = plan.symbols[pos][digit]
    return matrix


def _strings_from_matrix(matrix: np.ndarray) -> pa.Array | None:
    """A string array from zero-padded byte rows (ids hold no NUL byte)."""
    n = len(matrix)
    nonzero = matrix != 0
    lengths = nonzero.sum(axis=1, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31 - 1:
        return None
    data = matrix[nonzero]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data))


def _take_rows(chunks: list[pa.Array], rows: np.ndarray) -> pa.Array:
    """Strings at global row numbers ``rows`` (any order) as one pa.string() array."""
    column = pa.chunked_array(chunks)
    out = column.take(arrow_indices(rows))
    out = out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out
    return out.cast(pa.string()) if out.type != pa.string() else out


def _hash_codes(chunks: list[pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """Fallback: Arrow's hash table over the whole column, then a sorted vocabulary."""
    total = sum(int(_offsets(c)[-1] - _offsets(c)[0]) for c in chunks)
    target = pa.large_string() if total >= 2**31 - 1 else pa.string()
    whole = pa.concat_arrays([c.cast(target) for c in chunks])
    encoded = whole.dictionary_encode()
    dictionary = encoded.dictionary
    indices = numpy_values(encoded.indices)
    order = numpy_values(pc.sort_indices(dictionary))
    rank = np.empty(len(dictionary), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    vocab = dictionary.take(arrow_indices(order))
    vocab = vocab.cast(pa.string()) if vocab.type != pa.string() else vocab
    return rank[indices], vocab


def _run_starts(chunks: list[pa.Array]) -> np.ndarray:
    """Global row numbers where a run of equal consecutive values starts."""
    parts = []
    at = 0
    previous = None
    for c in chunks:
        change = np.empty(len(c), dtype=bool)
        change[0] = previous is None or c[0] != previous
        if len(c) > 1:
            change[1:] = False
            change[1 + numpy_values(pc.indices_nonzero(pc.not_equal(c[1:], c[:-1]))).astype(np.int64)] = True
        parts.append(np.flatnonzero(change) + at)
        at += len(c)
        previous = c[len(c) - 1]
    return np.concatenate(parts)


def pandas_columns(df, columns: dict[str, str], who: str, source: str, ids: Sequence[str] = ()) -> dict[str, pa.Array]:
    """Columns of a pandas DataFrame as Arrow arrays (no Python row loop).

    ``columns`` maps a role ("query_col", ...) to the column name asked for.
    A missing column, or a missing value in an id column (roles in ``ids``),
    is an :class:`InputFormatError` naming the columns present; NaN in a value
    column is left to the caller (``from_arrays`` reports it like ``from_dict``).
    pandas is imported here only, to keep it an optional dependency.
    """
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas absent
        raise ImportError(f"{who} needs pandas (pip install pandas)") from exc
    if not isinstance(df, pd.DataFrame):
        raise UsageTypeError(f"{who} expects a pandas DataFrame, got {type(df).__name__}")
    present = [str(c) for c in df.columns]
    out: dict[str, pa.Array] = {}
    for role, name in columns.items():
        if name not in df.columns:
            hint = ", ".join(f"{r}=..." for r in columns)
            raise InputFormatError(
                source, None,
                f"{who}: no column {name!r} ({role}); columns present: {present}. "
                f"Name the columns with {hint} (ir_measures uses query_id/doc_id/score/relevance, ranx q_id/doc_id/score)",
            )
        series = df[name]
        missing = series.isna().to_numpy() if role in ids else np.zeros(0, bool)
        if missing.any():
            row = int(np.argmax(missing))
            raise InputFormatError(source, None, f"{who}: column {name!r} has {int(missing.sum())} missing value(s), the first at row {row}")
        array = pa.Array.from_pandas(series)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        out[role] = array
    return out


_PARSE_POOL: list = []


def _parse_pool() -> pa.MemoryPool:
    """Memory pool for parsed blocks: jemalloc when pyarrow has it. The
    skipped columns, parsed only to be checked, are freed block by block
    between the kept ones; jemalloc purges such freed pages after its decay
    time, where the default (mimalloc) pool kept ~40% more resident at 100M
    lines. Its settings are left as they are."""
    if not _PARSE_POOL:
        try:
            pool = pa.jemalloc_memory_pool()
        except (NotImplementedError, AttributeError, pa.ArrowException):  # pragma: no cover - build without jemalloc
            pool = pa.default_memory_pool()
        _PARSE_POOL.append(pool)
    return _PARSE_POOL[0]


def release_arrow_memory() -> None:
    """Hand memory freed by Arrow back to the system (big readers call this
    after dropping their parsed columns, so that peak RSS stays low)."""
    for pool in {id(p): p for p in [pa.default_memory_pool(), *_PARSE_POOL]}.values():
        try:
            pool.release_unused()
        except (AttributeError, NotImplementedError):  # pragma: no cover - older pyarrow
            pass


def string_array(values) -> pa.Array:
    """Ids as one Arrow string array: Arrow arrays are cast (dictionaries decoded),
    anything else goes through ``pa.array`` (NumPy/pandas string data without a
    Python loop)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    if isinstance(values, pa.Array):
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        return values if values.type == pa.string() else values.cast(pa.string())
    return pa.array(values, pa.string())


def string_codes(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Codes into a byte-wise sorted vocabulary for a string column.

    Returns ``(codes, vocab)``: ``vocab`` holds
    the distinct strings in byte-wise order and ``codes[i]`` (int32, or int64
    past 2**31 rows) indexes it. Accepts plain, large or dictionary-encoded
    string arrays (chunked or not); nulls are an error for the caller to
    report. No hash table over the whole column is built unless the ids are
    too long or too varied for sort keys.
    """
    chunks = _string_chunks(column)
    n = sum(len(c) for c in chunks)
    if n == 0:
        return np.zeros(0, np.int32), pa.array([], pa.string())
    sample = chunks[0].slice(0, 1 << 16)
    if len(_run_starts([sample])) * 4 <= len(sample):
        starts = _run_starts(chunks)
        if len(starts) * 4 <= n:
            # Grouped column (a run's query ids): code the run heads, then repeat.
            head_codes, vocab = string_codes(_take_rows(chunks, starts))
            lengths = np.diff(np.append(starts, n))
            return np.repeat(head_codes, lengths), vocab
        del starts
    packed = _packed_codes(chunks, n)
    if packed is None:
        return _hash_codes(chunks)
    return packed


def lookup_codes(values: pa.Array, vocab: pa.Array) -> np.ndarray:
    """Position of each of ``values`` in the sorted unique ``vocab``, -1 if absent (int64).

    Both sides become fixed-width byte keys (a big-endian uint64 for ids of
    up to 8 bytes, else NumPy ``S<width>`` strings, whose order is byte
    order) matched by a binary search, cache-friendly when ``values`` is
    sorted too, as vocabularies are. Arrow's hash lookup is the fallback.
    """
    out = np.full(len(values), -1, dtype=np.int64)
    if len(values) == 0 or len(vocab) == 0:
        return out
    v_chunks, h_chunks = _string_chunks(values), _string_chunks(vocab)
    width = _key_width(v_chunks + h_chunks)
    if width is None:
        found = numpy_values(pc.index_in(values, value_set=vocab).fill_null(-1))
        return found.astype(np.int64)
    keys = []
    for chunks in (v_chunks, h_chunks):
        words = _ByteRows(chunks, width).all_words()
        if width <= 8:
            keys.append(words[:, 0].view(">u8").astype(np.uint64))
        else:
            matrix = np.ascontiguousarray(words.view(np.uint8).reshape(len(words), -1)[:, :width])
            keys.append(matrix.view(f"S{width}").ravel())
    v_keys, h_keys = keys
    pos = np.searchsorted(h_keys, v_keys)
    np.minimum(pos, len(h_keys) - 1, out=pos)
    hit = h_keys[pos] == v_keys
    out[hit] = pos[hit]
    return out
