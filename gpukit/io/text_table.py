"""Whitespace-separated text tables (TREC files) read into Arrow columns (no torch).

One path for every input. The text is read in blocks of ``BLOCK_BYTES``
(cut after a newline) from one stream: the file itself, or its gzip text
(:mod:`gpukit.io.compressed`); a path that is not a regular file is first
copied once into a temporary file. A block separated by single tabs or by
single spaces throughout (what systems write) is parsed as it is; any other
block is first made single-space separated without moving a newline (tabs,
CR, FF and VT become spaces in one C-level pass; doubled, leading and
trailing spaces are collapsed by a few ``bytes.replace`` passes; comment
lines are emptied). Both are parsed by pyarrow's CSV reader with id columns as plain Arrow strings, so that a 100M-line run
never becomes 100M Python strings. A block that does not parse is scanned
line by line so that the error names the file, the line and the problem;
line numbers are counted only then.

What is accepted (and the error scan checks exactly the same rules):

* Fields are separated by runs of space, tab, CR, FF or VT; any other ASCII
  control character (U+0000-U+0008, U+000E-U+001F, which ``str.split``
  would treat as whitespace or keep) is an error. A line whose first field
  starts with ``#`` is a comment; empty lines are skipped.
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
* ``-`` is standard input; a pipe or FIFO is read exactly once, into a
  temporary file that lives as long as the parsed table (so that errors can
  still name lines).
"""
from __future__ import annotations

import io
import os
import re
import stat
import sys
import weakref
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from gpukit.errors import InputFormatError, LineTooLong
from gpukit.io.arrow_numpy import plain_int64, value_offsets
from gpukit.io.blocks import count_newlines, read_blocks, skip_to
from gpukit.io.compressed import gzip_errors, is_gzip, open_gzip
from gpukit.io.line_errors import BOM, _diagnose, _is_data_line, line_too_long
from gpukit.io.spooled_input import _remove, _spool, file_mode

BLOCK_BYTES = 64 << 20
#: Texts below this many bytes are parsed by Arrow on the calling thread:
#: handing a small text to Arrow's thread pool costs more than it overlaps.
#: The one size rule of the readers; it changes speed only, never a value.
SMALL_INPUT_BYTES = 16 << 20
#: The longest line (bytes before its newline) a reader accepts: bounds the
#: memory a file without newlines (``/dev/zero``) can take.
MAX_LINE_BYTES = 1 << 20

_COMMENT_LINE = re.compile(rb"^[ \t\r\f\v]*#[^\n]*", re.MULTILINE)
#: Tab, CR, FF and VT become spaces (one C-level pass over a block).
_TO_SPACE = bytes.maketrans(b"\t\r\f\v", b"    ")
#: Every byte but the control bytes a normalised block must not hold (all below 0x20 but the newline).
_NOT_CONTROL = bytes(b for b in range(256) if b >= 0x20 or b == 0x0A)

_PARSE_POOL: list[pa.MemoryPool] = []


def parse_pool() -> pa.MemoryPool:
    """The Arrow memory pool the parsed columns are allocated from (per call,
    never made the process default): jemalloc where pyarrow has it, else
    the system allocator.

    Why not the default pool (mimalloc in pyarrow's wheels): its fresh
    memory comes as transparent huge pages, which fault in slowly where the
    host backs them lazily: on the 2-core benchmark VM, reading a 380 MB run
    spent about 1.5 s in the kernel with it against 0.6 s with either of
    these (same columns; 2026-12-07). jemalloc also returns the pages of
    freed columns (the skipped ones, parsed to be checked) after its decay time."""
    if not _PARSE_POOL:
        try:
            pool = pa.jemalloc_memory_pool()
        except (NotImplementedError, AttributeError, pa.ArrowException):  # a build without jemalloc
            pool = pa.system_memory_pool()
        _PARSE_POOL.append(pool)
    return _PARSE_POOL[0]


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
            first_line = 1 + count_newlines(self._opener, offset)
            self._blocks[index] = (offset, length, first_line, rows)
        return first_line

    def line_of(self, row: int) -> int | None:
        """1-based line number of data row ``row`` (slow; for error messages)."""
        for index, (offset, length, _, rows) in enumerate(self._blocks):
            if row < rows:
                assert self._opener is not None
                first_line = self._first_line(index)
                with self._opener() as fh:
                    skip_to(fh, offset)
                    block = fh.read(length)
                if offset == 0 and block.startswith(BOM):  # skipped by the parse too
                    block = block[len(BOM):]
                for i, line in enumerate(block.split(b"\n")):
                    if _is_data_line(line):
                        if row == 0:
                            return first_line + i
                        row -= 1
                return None
            row -= rows
        return None


def _normalise(block: bytes) -> bytes:
    """``block`` single-space separated, no space at a line's edges, comment
    lines emptied; no newline moves, so line numbers stay those of the file.
    Real runs are tab- or single-space separated: then this is one
    ``translate`` and four ``in`` scans."""
    if b"#" in block:
        block = _COMMENT_LINE.sub(b"", block)
    block = block.translate(_TO_SPACE)
    while b"  " in block:  # aligned columns: each pass halves every run of spaces
        block = block.replace(b"  ", b" ")
    if b"\n " in block:
        block = block.replace(b"\n ", b"\n")
    if b" \n" in block:
        block = block.replace(b" \n", b"\n")
    if block[:1] == b" ":
        block = block[1:]
    if block[-1:] == b" ":
        block = block[:-1]
    return block


def _has_control_byte(block: bytes) -> bool:
    """Whether ``block`` holds a byte below 0x20 other than the newline."""
    return bool(block.translate(None, _NOT_CONTROL))


def _arrow_type(kind: str) -> pa.DataType:
    return {"id": pa.string(), "float": pa.float64(), "int": pa.int64(), "skip": pa.string()}[kind]


def _parse_type(kind: str) -> pa.DataType:
    """The type a column is parsed as: integers as text, checked and converted by ``_parse_ints``."""
    return pa.string() if kind == "int" else _arrow_type(kind)


def _parse_ints(table: pa.Table, names: Sequence[str]) -> pa.Table | None:
    """Integer columns parsed as text turned into int64; None if one field is
    not a plain decimal integer within int64 (see :func:`plain_int64`)."""
    for name in names:
        converted = plain_int64(table.column(name))
        if converted is None:
            return None
        table = table.set_column(table.schema.get_field_index(name), name, converted)
    return table


def _cut_extra_fields(block: bytes, n_fields: int) -> bytes:
    """Drop everything after the ``n_fields``-th field of each (normalised) line."""
    pattern = re.compile(rb"^((?:[^ \n]+ ){%d}[^ \n]+) [^\n]*" % (n_fields - 1), re.MULTILINE)
    return pattern.sub(rb"\1", block)


#: Bytes counted per step by :func:`_control_bytes` (one small reused scratch mask).
_COUNT_STEP = 1 << 20


def _control_bytes(buf: bytearray, start: int, end: int) -> int:
    """Bytes below 0x20 in ``buf[start:end]``, counted a MiB at a time into
    one scratch mask: a mask of the whole block would be tens of MiB of
    fresh pages for every block."""
    data = np.frombuffer(buf, dtype=np.uint8, count=end - start, offset=start)
    scratch = np.empty(min(_COUNT_STEP, len(data)), dtype=bool)
    count = 0
    for at in range(0, len(data), _COUNT_STEP):
        piece = data[at : at + _COUNT_STEP]
        mask = scratch[: len(piece)]
        np.less(piece, 0x20, out=mask)
        count += int(np.count_nonzero(mask))
    return count


def _has_empty_field(table: pa.Table) -> bool:
    """Whether some string field of a parsed block is empty (a stray separator):
    two equal neighbouring value offsets, read in place (no length array)."""
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_binary(column.type):
            for chunk in column.chunks:
                off = value_offsets(chunk)
                if len(chunk) and bool((off[1:] == off[:-1]).any()):
                    return True
    return False


def _has_bom(buf: bytearray, start: int, end: int) -> bool:
    """Whether ``buf[start:end]`` holds a UTF-8 byte order mark (memchr for its first byte)."""
    at = buf.find(b"\xef", start, end)
    while at >= 0:
        if buf.startswith(BOM, at):
            return True
        at = buf.find(b"\xef", at + 1, end)
    return False


def read_table(path: str | os.PathLike, columns: Sequence[Column], what: str, rest_of_line_ignored: bool = False) -> ParsedTable:
    """Read a whitespace-separated table; ``what`` names the format in errors.

    With ``rest_of_line_ignored`` a line may carry more fields than columns and
    the extra ones are ignored (trec_eval reads the run tag and skips the rest
    of the line); too few fields is always an error. Id columns come back as
    plain ``pa.string()`` chunks. ``path`` ``"-"`` is standard input (named
    ``<stdin>`` in errors); a directory, a missing or unreadable path is an
    error naming it.
    """
    source = os.fspath(path)
    spooled: str | None = None
    if source == "-":
        source = "<stdin>"
        spooled = _spool(sys.stdin.buffer, source, MAX_LINE_BYTES)
    else:
        if not stat.S_ISREG(file_mode(source)):
            try:
                stream = open(source, "rb")
            except OSError as exc:
                raise InputFormatError(source, None, f"cannot open: {exc.strerror or exc}") from None
            with stream:
                spooled = _spool(stream, source, MAX_LINE_BYTES)
    try:
        table = _read_file(source, spooled or source, columns, what, rest_of_line_ignored)
    except BaseException:
        if spooled:
            _remove(spooled)
        raise
    if spooled:
        weakref.finalize(table, _remove, spooled)  # line numbers of later errors still read it
    return table


class _BlockParser:
    """Parses one normalised block into a table of the wanted columns."""

    def __init__(self, source: str, columns: Sequence[Column], what: str, rest_of_line_ignored: bool, opener, threads: bool) -> None:
        self.source, self.columns, self.what, self.rest = source, columns, what, rest_of_line_ignored
        self.opener = opener
        self.wanted = [c.name for c in columns if c.kind != "skip"]
        self.ints = [c.name for c in columns if c.kind == "int"]
        self.read = pacsv.ReadOptions(column_names=[c.name for c in columns], use_threads=threads, block_size=4 << 20)
        self.parse = pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False, ignore_empty_lines=True)
        self.convert = pacsv.ConvertOptions(
            column_types={c.name: _parse_type(c.kind) for c in columns}, include_columns=self.wanted,
            strings_can_be_null=False, quoted_strings_can_be_null=False, null_values=[],
        )
        # A clean block is parsed as it is, every column kept (skipped ones as
        # unchecked bytes), so that a stray space shows as an empty field.
        self.convert_all = pacsv.ConvertOptions(
            column_types={c.name: pa.binary() if c.kind == "skip" else _parse_type(c.kind) for c in columns},
            include_columns=[c.name for c in columns],
            strings_can_be_null=False, quoted_strings_can_be_null=False, null_values=[],
        )
        self.by_delimiter = {
            sep: pacsv.ParseOptions(delimiter=sep, quote_char=False, escape_char=False, ignore_empty_lines=True) for sep in (" ", "\t")
        }

    def _csv(self, text: bytes) -> pa.Table | None:
        try:
            return pacsv.read_csv(pa.py_buffer(text), read_options=self.read, parse_options=self.parse, convert_options=self.convert,
                                  memory_pool=parse_pool())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None

    def _as_it_is(self, buf: bytearray, start: int, end: int) -> pa.Table | None:
        """The table of the block ``buf[start:end]`` if it needs no normalising, else None.

        Real runs and qrels separate fields by one tab or one space
        throughout; such a block (no other control byte, no comment, no byte
        order mark) is handed to Arrow as it is, split on that byte, without
        a copy. A doubled, leading or trailing separator shows as an empty
        field or a wrong field count and sends the block to ``_normalise``
        instead, so both routes accept the same texts and give the same table.
        """
        has_tab, has_space = buf.find(b"\t", start, end) >= 0, buf.find(b" ", start, end) >= 0
        if has_tab == has_space or buf.find(b"#", start, end) >= 0 or _has_bom(buf, start, end):
            return None
        try:
            table = pacsv.read_csv(
                pa.py_buffer(buf).slice(start, end - start), read_options=self.read,
                parse_options=self.by_delimiter["\t" if has_tab else " "], convert_options=self.convert_all,
                memory_pool=parse_pool(),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        # Every row has exactly len(columns) fields, so a clean block holds one
        # newline per row (the last may lack it) plus, tab-separated, one tab
        # between fields; any other byte below 0x20 (or an empty line) means
        # the careful route.
        rows = table.num_rows
        expected = rows * (len(self.columns) if has_tab else 1) - (buf[end - 1] != 0x0A)
        if _control_bytes(buf, start, end) != expected:
            return None
        if _has_empty_field(table):
            return None
        table = table.select(self.wanted)
        return _parse_ints(table, self.ints) if self.ints else table

    def __call__(self, buf: bytearray, length: int, offset: int) -> pa.Table | None:
        """The table of the block ``buf[:length]`` at file offset ``offset``
        (None: no data lines); an error names its first bad line."""
        start = len(BOM) if offset == 0 and buf.startswith(BOM) else 0  # skipped at the start of the file only
        table = self._as_it_is(buf, start, length)
        if table is not None:
            return table
        block = bytes(buf[start:length])

        def bad_line() -> InputFormatError:
            line_no = 1 + count_newlines(self.opener, offset)
            return _diagnose(self.source, block, line_no, self.columns, self.what, self.rest)

        text = _normalise(block)
        if _has_control_byte(text) or BOM in text:
            raise bad_line()
        if not text.strip():
            return None
        table = self._csv(text)
        if table is None and self.rest:
            table = self._csv(_cut_extra_fields(text, len(self.columns)))
        if table is not None and self.ints:
            table = _parse_ints(table, self.ints)
        if table is None:
            raise bad_line()
        return table


def _read_file(source: str, file: str, columns: Sequence[Column], what: str, rest_of_line_ignored: bool) -> ParsedTable:
    """:func:`read_table` of the regular file ``file``; ``source`` names it in errors."""
    try:
        gzipped = is_gzip(file)
        size = os.path.getsize(file)
    except OSError as exc:
        raise InputFormatError(source, None, f"cannot open: {exc.strerror or exc}") from None
    opener: Callable[[], io.BufferedIOBase] = (lambda: open_gzip(file)) if gzipped else (lambda: open(file, "rb"))
    # A gzip file's text is taken to be eight times its size (speed only).
    parse = _BlockParser(source, columns, what, rest_of_line_ignored, opener, threads=size * (8 if gzipped else 1) >= SMALL_INPUT_BYTES)
    chunks: dict[str, list[pa.Array]] = {name: [] for name in parse.wanted}
    blocks: list[tuple[int, int, int | None, int]] = []
    try:
        fh = opener()
    except OSError as exc:
        raise InputFormatError(source, None, f"cannot open: {exc}") from None
    with fh:
        reader = read_blocks(fh, BLOCK_BYTES, MAX_LINE_BYTES, None if gzipped else size)
        while True:
            try:
                item = next(reader, None)
            except LineTooLong as exc:
                raise line_too_long(source, 1 + count_newlines(opener, exc.offset), exc.head, MAX_LINE_BYTES) from None
            except gzip_errors() as exc:  # a damaged deflate stream
                raise InputFormatError(source, None, f"cannot read (corrupt gzip?): {exc}") from None
            if item is None:
                break
            offset, buf, length = item
            table = parse(buf, length, offset)
            rows = 0
            if table is not None:
                for name in parse.wanted:
                    chunks[name].extend(c for c in table.column(name).chunks if len(c))
                rows = table.num_rows
            blocks.append((offset, length, None, rows))
            del buf, item, table
    num_rows = sum(b[3] for b in blocks)
    if num_rows == 0:
        raise InputFormatError(source, None, f"empty {what} file: no data lines")
    kinds = {c.name: c.kind for c in columns}
    arrays = {name: pa.chunked_array(parts, type=_arrow_type(kinds[name])) for name, parts in chunks.items()}
    return ParsedTable(source, arrays, num_rows, blocks, opener)
