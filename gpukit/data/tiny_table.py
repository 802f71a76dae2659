"""Tiny whitespace tables (a CACM-sized run or qrels) parsed in one pass of
NumPy over the whole text, with no Arrow parser.

Why: below a few hundred kilobytes, setting up pyarrow's CSV reader (~1 ms a
call) costs more than the parse itself, and a small evaluation reads two such
files. :func:`parse_tiny` is a fast path for *clean* inputs only: it accepts a
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
* Scores are read by Python's ``float``, which accepts exactly the spellings
  of ``text_table.FLOAT_TEXT`` but ``nan(...)``, plus ``_`` digit separators
  (a field with ``_`` goes to the Arrow reader). Both ``float`` and Arrow's
  parser round correctly, so the values are the same bits
  (tests/test_tiny_table.py checks both claims against Arrow).
* Integers match ``-?[0-9]+`` (:func:`plain_integers`, the Arrow reader's own
  check) in at most 18 bytes (within int64 by construction).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from gpukit.data.arrow_numpy import plain_integers

_NEWLINE = 0x0A
_SPACE = 0x20
#: Control bytes that separate fields (tab, newline, VT, FF, CR); the others are errors.
_SEPARATORS = (0x09, 0x0D)
_MAX_INT_BYTES = 18


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
    # A field is a maximal run of bytes above the space; its edges are where
    # that flag changes.
    edges = np.diff((data > _SPACE).view(np.int8), prepend=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)  # the text ends with a newline: every field ends
    if len(starts) == 0:
        return None
    per_line = np.bincount(np.searchsorted(newlines, starts))
    per_row = per_line[per_line > 0]
    n_cols = len(columns)
    if not bool((per_row >= n_cols).all() if extra_ok else (per_row == n_cols).all()):
        return None
    rows = len(per_row)
    first = None if len(starts) == rows * n_cols else np.cumsum(per_row) - per_row
    out: dict[str, pa.Array] = {}
    for index, column in enumerate(columns):
        if column.kind == "skip":
            continue
        fields = np.arange(index, rows * n_cols, n_cols) if first is None else first + index
        begin, end = starts[fields], ends[fields]
        if column.kind == "id":
            out[column.name] = _string_array(data, begin, end)
        elif column.kind == "float":
            values = _python_numbers(data, begin, end, float, np.float64)
            if values is None:
                return None
            out[column.name] = _numeric_array(values, pa.float64())
        else:  # "int"
            if int((end - begin).max()) > _MAX_INT_BYTES or not plain_integers(_string_array(data, begin, end)):
                return None
            values = _python_numbers(data, begin, end, int, np.int64)
            assert values is not None  # plain integers always convert
            out[column.name] = _numeric_array(values, pa.int64())
    return out, rows


def _gather(data: np.ndarray, begin: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``data[begin[i] : begin[i] + lengths[i]]`` for every i, concatenated, and their offsets."""
    offsets = np.zeros(len(begin) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    index = np.repeat(begin - offsets[:-1], lengths)
    index += np.arange(int(offsets[-1]), dtype=index.dtype)
    return data[index], offsets


def _string_array(data: np.ndarray, begin: np.ndarray, end: np.ndarray) -> pa.Array:
    """The fields as an Arrow string array (ASCII: valid UTF-8)."""
    values, offsets = _gather(data, begin, end - begin)
    return pa.Array.from_buffers(pa.string(), len(begin), [None, pa.py_buffer(offsets), pa.py_buffer(values)])


def _python_numbers(data: np.ndarray, begin: np.ndarray, end: np.ndarray, parse, dtype) -> np.ndarray | None:
    """The fields read by ``parse`` (``float`` or ``int``); None if one does not
    read, or holds ``_`` (which Python reads as a digit separator).

    Each field is gathered with the separator byte after it, so that one
    ``bytes.split`` gives them all as ``bytes``.
    """
    text = _gather(data, begin, end - begin + 1)[0].tobytes()
    if b"_" in text:
        return None
    try:
        return np.fromiter(map(parse, text.split()), dtype=dtype, count=len(begin))
    except ValueError:
        return None


def _numeric_array(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])
