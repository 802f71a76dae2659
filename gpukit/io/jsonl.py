"""JSON-lines tables (runs and qrels) read into Arrow columns (no torch).

One JSON object per line; blank lines are skipped; plain or gzip (told by
the magic bytes). The schema is a set of named fields, each of a kind:

* ``"id"`` -- a JSON string, or an integer (read as its decimal text, as
  :meth:`gpukit.Run.from_dict` reads ``str(id)``);
* ``"float"`` -- a JSON number (not a boolean; ``NaN`` and ``Infinity`` are
  not JSON and are refused);
* ``"int"`` -- a JSON integer, or a number with an integral value (``2.0``).

Other fields of an object are ignored. Runs use ``{"query_id", "doc_id",
"score"}``, qrels ``{"query_id", "doc_id", "relevance"}`` (ir_measures'
column names).

Fast path: pyarrow's JSON reader, its column types checked against the
kinds. When it refuses the text or a column is not of the kind wanted (a
null, a missing field, ids that are strings on some lines and integers on
others), the file is scanned line by line with the ``json`` module, which
either names the first bad line (file and line number) or, the text being
valid after all, gives the columns itself.
"""
from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import pyarrow as pa

from gpukit.errors import InputFormatError, UsageError, echo
from gpukit.io.arrow_numpy import arrow_indices, pc
from gpukit.io.compressed import gzip_errors, is_gzip, open_gzip
from gpukit.io.spooled_input import file_mode

#: Bytes pyarrow's JSON reader parses per block (a longer line sends the file to the scan).
JSON_BLOCK_BYTES = 16 << 20


@dataclass
class JsonlTable:
    """Columns of a JSON-lines file, one row per object, with row -> line."""

    source: str
    columns: dict[str, pa.Array]
    line_of: Callable[[int], int | None]


def _open(source: str) -> io.BufferedIOBase:
    file_mode(source)
    return open_gzip(source) if is_gzip(source) else open(source, "rb")


def read_jsonl(path: str | os.PathLike, fields: Mapping[str, str], what: str) -> JsonlTable:
    """The ``fields`` (name -> kind, see the module docstring) of every
    object of a JSON-lines file; ``what`` names the format in errors."""
    source = os.fspath(path)
    columns = _arrow_columns(source, fields)
    if columns is None:
        columns = _scanned_columns(source, fields, what)
    return JsonlTable(source, columns, _line_finder(source))


def _arrow_columns(source: str, fields: Mapping[str, str]) -> dict[str, pa.Array] | None:
    """The columns by pyarrow's reader, or None when the scan must decide."""
    import pyarrow.json as pj

    with _open(source) as fh:
        try:
            table = pj.read_json(fh, read_options=pj.ReadOptions(block_size=JSON_BLOCK_BYTES),
                                 parse_options=pj.ParseOptions(newlines_in_values=False))
        except (pa.ArrowException, *gzip_errors()):
            return None
    out = {}
    for name, kind in fields.items():
        if name not in table.column_names:
            return None
        column = table.column(name).combine_chunks()
        if column.null_count:
            return None
        column = _of_kind(column, kind)
        if column is None:
            return None
        out[name] = column
    return out


def _of_kind(column: pa.Array, kind: str) -> pa.Array | None:
    """``column`` converted to the kind's Arrow type, or None if its JSON type is not the kind's."""
    t = column.type
    if kind == "id":
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return column
        return pc.cast(column, pa.string()) if pa.types.is_integer(t) else None
    if kind == "float":
        # Unchecked: an integer beyond 2**53 rounds to the nearest float64, as Python's float() does.
        return pc.cast(column, pa.float64(), safe=False) if pa.types.is_floating(t) or pa.types.is_integer(t) else None
    if pa.types.is_integer(t):
        return pc.cast(column, pa.int64())
    if pa.types.is_floating(t):
        values = column.to_numpy(zero_copy_only=False)
        if np.all(np.isfinite(values) & (values == np.round(values)) & (np.abs(values) < 2**63)):
            return arrow_indices(values.astype(np.int64))  # an int64 array over the NumPy buffer
    return None


def _refuse_constant(name: str):
    raise UsageError(f"{name} is not JSON")  # a ValueError: reported as the line's error below


def _scanned_columns(source: str, fields: Mapping[str, str], what: str) -> dict[str, pa.Array]:
    """The columns by a line-by-line ``json`` scan; the first bad line is an error."""
    values: dict[str, list] = {name: [] for name in fields}
    with _open(source) as fh:
        try:
            for line_no, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw, parse_constant=_refuse_constant)
                except (ValueError, RecursionError) as exc:
                    raise InputFormatError(source, line_no, f"not a JSON object ({exc}): {echo(raw.strip())}") from None
                if not isinstance(obj, dict):
                    raise InputFormatError(source, line_no, f"expected a JSON object with {_names(fields)} in a {what} file, got {echo(raw.strip())}")
                for name, kind in fields.items():
                    if name not in obj:
                        raise InputFormatError(source, line_no, f"no {name!r} field (a {what} line has {_names(fields)})")
                    values[name].append(_value(obj[name], kind, name, source, line_no))
        except gzip_errors() as exc:
            raise InputFormatError(source, None, f"damaged gzip data: {exc}") from None
    types = {"id": pa.string(), "float": pa.float64(), "int": pa.int64()}
    return {name: pa.array(values[name], types[kind]) for name, kind in fields.items()}


def _names(fields: Mapping[str, str]) -> str:
    return ", ".join(repr(n) for n in fields)


def _value(value, kind: str, name: str, source: str, line_no: int):
    """One field's value of the kind, or an error naming the line."""
    if kind == "id":
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise InputFormatError(source, line_no, f"{name!r} must be a string or an integer, got {echo(json.dumps(value))}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputFormatError(source, line_no, f"{name!r} must be a number, got {echo(json.dumps(value))}")
    if kind == "float":
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise InputFormatError(source, line_no, f"{name!r} must be an integer, got {value!r}")
    if not -(2**63) <= int(value) < 2**63:
        raise InputFormatError(source, line_no, f"{name!r} {int(value)} is out of range")
    return int(value)


def _line_finder(source: str) -> Callable[[int], int | None]:
    """row -> 1-based line of a JSON-lines file (blank lines hold no row);
    the file is read again, and only when asked (error messages)."""
    def line_of(row: int) -> int | None:
        with _open(source) as fh:
            for line_no, raw in enumerate(fh, start=1):
                if raw.strip():
                    if row == 0:
                        return line_no
                    row -= 1
        return None

    return line_of
