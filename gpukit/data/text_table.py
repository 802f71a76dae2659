"""Fast, memory-lean reading of whitespace-separated text tables (TREC files).

The happy path is pyarrow's multi-threaded CSV parser over blocks of the file,
with string columns dictionary-encoded so that a 100M-line run never becomes
100M Python strings. Whitespace is normalised per block (TREC files mix tabs
and runs of spaces) only when the block needs it. Every failure is re-checked
by a slow line-by-line scan of the offending block so that the error names
the file, the line and the problem.
"""
from __future__ import annotations

import gzip
import io
import math
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from gpukit.errors import InputFormatError

BLOCK_BYTES = 64 << 20

_WS_RUN = re.compile(rb"[ \t\r\f\v]+")
_EDGE_SPACE = re.compile(rb"^ | $", re.MULTILINE)
_COMMENT_LINE = re.compile(rb"^[ \t]*#[^\n]*", re.MULTILINE)

STRING_DICT = pa.dictionary(pa.int32(), pa.string())


@dataclass(frozen=True)
class Column:
    """A column of a whitespace table: its name, and the kind it parses to."""

    name: str
    kind: str  # "id" (dictionary-encoded string), "float", "int" or "skip"


@dataclass
class ParsedTable:
    """Parsed columns plus what is needed to map a row back to its line."""

    source: str
    columns: dict[str, pa.ChunkedArray]
    num_rows: int
    _blocks: list[tuple[int, int, int, int]] = field(default_factory=list)  # (byte offset, byte length, first line, rows)
    _opener: Callable[[], io.BufferedIOBase] | None = None

    def line_of(self, row: int) -> int | None:
        """1-based line number of data row ``row`` (slow; for error messages)."""
        for offset, length, first_line, rows in self._blocks:
            if row < rows:
                assert self._opener is not None
                with self._opener() as fh:
                    _skip(fh, offset)
                    block = fh.read(length)
                for i, line in enumerate(block.split(b"\n")):
                    if _is_data_line(line):
                        if row == 0:
                            return first_line + i
                        row -= 1
                return None
            row -= rows
        return None


def _skip(fh: io.BufferedIOBase, offset: int) -> None:
    if fh.seekable():
        fh.seek(offset)
    else:  # pragma: no cover - gzip streams are seekable, kept for safety
        fh.read(offset)


def _is_data_line(line: bytes) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(b"#")


def _opener_for(path: str) -> Callable[[], io.BufferedIOBase]:
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return lambda: gzip.open(path, "rb")  # type: ignore[return-value]
    return lambda: open(path, "rb")


def _normalise(block: bytes) -> bytes:
    """Make a block single-space separated without moving any newline."""
    if b"#" in block:
        block = _COMMENT_LINE.sub(b"", block)
    if b"\t" in block or b"  " in block or b"\r" in block or block[:1] == b" " or b"\n " in block or b" \n" in block:
        block = _WS_RUN.sub(b" ", block)
        block = _EDGE_SPACE.sub(b"", block)
    return block


def _arrow_type(kind: str) -> pa.DataType:
    return {"id": STRING_DICT, "float": pa.float64(), "int": pa.int64(), "skip": pa.string()}[kind]


def _diagnose(
    source: str, block: bytes, first_line: int, columns: Sequence[Column], what: str, extra_ok: bool = False
) -> InputFormatError:
    """Find the first bad line in a block by a plain scan and describe it."""
    for i, raw in enumerate(block.split(b"\n")):
        line_no = first_line + i
        if not _is_data_line(raw):
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return InputFormatError(source, line_no, f"not valid UTF-8 ({exc.reason} at byte {exc.start})")
        fields = text.split()
        if len(fields) < len(columns) or (len(fields) > len(columns) and not extra_ok):
            names = " ".join(c.name for c in columns)
            expected = f"at least {len(columns)}" if extra_ok else str(len(columns))
            return InputFormatError(
                source, line_no, f"expected {expected} columns ({names}) in a {what} file, got {len(fields)}: {text.strip()!r}"
            )
        for col, value in zip(columns, fields):
            if col.kind == "float":
                try:
                    float(value)
                except ValueError:
                    return InputFormatError(source, line_no, f"{col.name} {value!r} is not a number")
            elif col.kind == "int":
                try:
                    int(value)
                except ValueError:
                    return InputFormatError(source, line_no, f"{col.name} {value!r} is not an integer")
    return InputFormatError(source, None, f"could not parse the {what} file (no single bad line found in lines {first_line}+)")


def _cut_extra_fields(block: bytes, n_fields: int) -> bytes:
    """Drop everything after the ``n_fields``-th field of each (normalised) line."""
    pattern = re.compile(rb"^((?:[^ \n]+ ){%d}[^ \n]+) [^\n]*" % (n_fields - 1), re.MULTILINE)
    return pattern.sub(rb"\1", block)


def read_table(
    path: str | os.PathLike, columns: Sequence[Column], what: str, rest_of_line_ignored: bool = False
) -> ParsedTable:
    """Read a whitespace-separated table; ``what`` names the format in errors.

    With ``rest_of_line_ignored`` a line may carry more fields than columns and
    the extra ones are ignored (trec_eval reads the run tag and skips the rest
    of the line); too few fields is always an error.
    """
    source = os.fspath(path)
    if not os.path.exists(source):
        raise InputFormatError(source, None, "no such file")
    opener = _opener_for(source)
    wanted = [c.name for c in columns if c.kind != "skip"]
    convert = pacsv.ConvertOptions(
        column_types={c.name: _arrow_type(c.kind) for c in columns},
        include_columns=wanted,
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
    )
    parse = pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False, ignore_empty_lines=True)
    read = pacsv.ReadOptions(column_names=[c.name for c in columns], use_threads=True, block_size=16 << 20)

    chunks: dict[str, list[pa.Array]] = {name: [] for name in wanted}
    blocks: list[tuple[int, int, int, int]] = []
    offset, line_no, tail = 0, 1, b""
    try:
        fh = opener()
    except OSError as exc:
        raise InputFormatError(source, None, f"cannot open: {exc}") from None
    with fh:
        while True:
            try:
                data = fh.read(BLOCK_BYTES)
            except (OSError, EOFError) as exc:
                raise InputFormatError(source, None, f"cannot read (corrupt gzip?): {exc}") from None
            at_end = len(data) < BLOCK_BYTES
            data = tail + data
            cut = len(data) if at_end else data.rfind(b"\n") + 1
            if cut == 0:  # one line longer than a block: keep reading
                tail = data
                continue
            block, tail = data[:cut], data[cut:]
            rows = 0
            normalised = _normalise(block)
            if normalised.strip():
                try:
                    table = pacsv.read_csv(pa.py_buffer(normalised), read_options=read, parse_options=parse, convert_options=convert)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    table = None
                    if rest_of_line_ignored:
                        try:
                            table = pacsv.read_csv(
                                pa.py_buffer(_cut_extra_fields(normalised, len(columns))),
                                read_options=read, parse_options=parse, convert_options=convert,
                            )
                        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                            table = None
                    if table is None:
                        raise _diagnose(source, block, line_no, columns, what, rest_of_line_ignored) from None
                for name in wanted:
                    chunks[name].extend(table.column(name).chunks)
                rows = table.num_rows
            blocks.append((offset, len(block), line_no, rows))
            offset += len(block)
            line_no += block.count(b"\n")
            if at_end:
                break
    num_rows = sum(b[3] for b in blocks)
    if num_rows == 0:
        raise InputFormatError(source, None, f"empty {what} file: no data lines")
    arrays = {
        name: pa.chunked_array(parts, type=_arrow_type(next(c.kind for c in columns if c.name == name)))
        for name, parts in chunks.items()
    }
    return ParsedTable(source, arrays, num_rows, blocks, opener)


def dictionary_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Codes into a sorted vocabulary for a dictionary-encoded string column.

    Returns ``(codes, vocab)``: ``vocab`` holds the distinct strings in
    byte-wise order (pyarrow's binary string order, which equals code point
    order for UTF-8) and ``codes[i]`` indexes it. Sorted codes turn "ties
    broken by docno" into a comparison of integers.
    """
    unified = column.unify_dictionaries()
    if unified.num_chunks == 0:
        return np.zeros(0, np.int64), pa.array([], pa.string())
    dictionary = unified.chunk(0).dictionary
    indices = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in unified.chunks])
    # A unified dictionary can hold entries no chunk references; keep only used ones.
    used = np.zeros(len(dictionary), dtype=bool)
    used[indices] = True
    order = pc.sort_indices(dictionary).to_numpy()
    order = order[used[order]]
    rank = np.full(len(dictionary), -1, dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return rank[indices], dictionary.take(pa.array(order))


def first_nonfinite(values: np.ndarray) -> int | None:
    """Index of the first NaN or infinite value, if any."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    return int(np.argmax(bad))


def describe_float(value: float) -> str:
    return "NaN" if math.isnan(value) else repr(value)
