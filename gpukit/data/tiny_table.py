"""Tiny whitespace tables (a CACM-sized run or qrels) parsed in one pass of
NumPy over the whole text, with no Arrow parser.

Why: below ~150 KB of text, setting up pyarrow's CSV reader costs more than
the parse itself (crossover in docs/benchmarks.md, "Fourth pass: tiny
inputs"), and a small evaluation reads two such files. :func:`parse_tiny` is a fast path for *clean* inputs only: it accepts a
text only when it is sure that the Arrow reader of
:mod:`gpukit.data.text_table` would accept it and give the same values, and
otherwise returns ``None``, so that the caller hands the file to the Arrow
reader, which parses it or raises its error naming file, line and problem.
No error is worded here: both paths give the same errors because only one
path raises them.

What is accepted here (a subset of the module docstring of text_table):

* ASCII only; fields separated by runs of space, tab, CR, FF or VT; blank
  lines skipped. Any other control byte, any ``#`` (a comment, or a ``#`` in
  an id) and any byte >= 0x80 (UTF-8, a byte order mark past the start) send
  the text to the Arrow reader.
* Every non-blank line has exactly ``len(columns)`` fields (at least that many
  with ``extra_ok``: the extra ones are ignored, as the Arrow reader does).
* Scores and integers are turned into numbers by Arrow's cast from
  strings, the same parser as its CSV reader's (integers after the same
  :func:`plain_int64` check); a field it rejects sends the text to the Arrow
  reader. On fields without whitespace (all fields here) the cast and the CSV
  reader accept the same spellings and give the same bits
  (tests/test_tiny_table.py checks it).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from gpukit.data.arrow_numpy import pc, plain_int64

_NEWLINE = 0x0A
_SPACE = 0x20
#: Control bytes that separate fields (tab, newline, VT, FF, CR); the others are errors.
_SEPARATORS = (0x09, 0x0D)


def parse_tiny(text: bytes, columns: Sequence, extra_ok: bool, max_line: int) -> tuple[dict[str, pa.Array], int] | None:
    """The wanted columns (kind != "skip") of a clean table, and its row count;
    None if the text is not clean (see the module docstring) or has no data line.

    ``text`` has no byte order mark and ends with a newline (or is empty);
    ``columns`` are ``text_table.Column``; a line longer than ``max_line``
    bytes is not clean.
    """
    data = np.frombuffer(text, dtype=np.uint8)
    if len(data) == 0 or b"#" in text or int(data.max()) >= 0x80:
        return None
    newlines = np.flatnonzero(data == _NEWLINE)
    if len(data) > max_line and int(np.diff(newlines, prepend=-1).max()) > max_line + 1:
        return None
    if int(np.count_nonzero(data < _SPACE)) != len(newlines):  # tabs, CRs or worse
        low = data[data < _SPACE]
        if not bool(((low >= _SEPARATORS[0]) & (low <= _SEPARATORS[1])).all()):
            return None
    # A field is a maximal run of bytes above the space. Its edges are where
    # that flag changes: a start, then its end, alternately (the text ends
    # with a newline, so every field ends).
    field = data > _SPACE
    change = np.empty(len(data), dtype=bool)
    change[0] = field[0]
    np.not_equal(field[1:], field[:-1], out=change[1:])
    edges = np.flatnonzero(change)  # on a bool array: ~3x faster than on int8 here
    starts, ends = edges[0::2], edges[1::2]
    # Fields before each newline, so fields per line (blank lines have none).
    before = np.searchsorted(starts, newlines)
    per_line = np.diff(before, prepend=0)
    n_cols = len(columns)
    if len(starts) == 0:
        return None
    if len(starts) % n_cols == 0 and bool(((per_line == 0) | (per_line == n_cols)).all()):
        rows, first = len(starts) // n_cols, None
    else:
        data_lines = per_line > 0
        if not extra_ok or not bool((per_line[data_lines] >= n_cols).all()):
            return None
        first = (before - per_line)[data_lines]  # the first field of each row
        rows = len(first)
    out: dict[str, pa.Array] = {}
    for index, column in enumerate(columns):
        if column.kind == "skip":
            continue
        fields = slice(index, None, n_cols) if first is None else first + index
        array = _string_array(data, starts[fields], ends[fields])
        if column.kind == "float":
            try:
                array = pc.cast(array, pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
        elif column.kind == "int":
            array = plain_int64(array)
            if array is None:
                return None
        out[column.name] = array
    return out, rows


def _string_array(data: np.ndarray, begin: np.ndarray, end: np.ndarray) -> pa.Array:
    """``data[begin[i] : end[i]]`` for every i as an Arrow string array (ASCII: valid UTF-8)."""
    lengths = end - begin
    offsets = np.zeros(len(begin) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    index = np.repeat(begin - offsets[:-1], lengths)
    index += np.arange(int(offsets[-1]), dtype=index.dtype)
    values = data[index]
    return pa.Array.from_buffers(pa.string(), len(begin), [None, pa.py_buffer(offsets), pa.py_buffer(values)])
