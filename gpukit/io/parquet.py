"""Parquet tables (runs and qrels) read into Arrow columns (no torch).

A run has columns ``query_id``, ``doc_id``, ``score``; qrels ``query_id``,
``doc_id``, ``relevance`` (ir_measures' names; other names can be given).
Other columns are not read. Kinds, as for JSON lines
(:mod:`gpukit.io.jsonl`):

* ``"id"`` -- string, large string, binary (UTF-8) or dictionary of those,
  or integers (read as their decimal text);
* ``"float"`` -- any floating, integer or decimal column, as float64;
* ``"int"`` -- integers, booleans, or floats with integral values.

A null, or a column of another type, is an error naming the file, the
column and (for a null or a non-integral grade) the 0-based row: Parquet has
no lines. ``pyarrow.parquet`` is imported when a file is read.
"""
from __future__ import annotations

import os
from typing import Mapping

import numpy as np
import pyarrow as pa

from gpukit.errors import InputFormatError, UsageError
from gpukit.io.arrow_numpy import pc


def read_parquet(path: str | os.PathLike, fields: Mapping[str, tuple[str, str]], what: str) -> dict[str, pa.Array]:
    """``{role: column}`` for ``fields`` (role -> (column name, kind)) of a Parquet file."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow builds without Parquet
        raise UsageError("reading Parquet needs pyarrow built with Parquet support (pip install pyarrow)") from None
    source = os.fspath(path)
    if not os.path.exists(source):
        raise InputFormatError(source, None, "no such file")
    if os.path.isdir(source):
        raise InputFormatError(source, None, "is a directory, not a file")
    try:
        schema = pq.read_schema(source)
    except (pa.ArrowException, OSError) as exc:
        raise InputFormatError(source, None, f"not a readable Parquet file ({exc})") from None
    names = [name for name, _ in fields.values()]
    missing = [n for n in names if n not in schema.names]
    if missing:
        raise InputFormatError(source, None, f"no column {missing[0]!r} in this {what} file (its columns: {', '.join(schema.names)})")
    try:
        table = pq.read_table(source, columns=list(dict.fromkeys(names)))
    except (pa.ArrowException, OSError) as exc:
        raise InputFormatError(source, None, f"cannot read the Parquet data ({exc})") from None
    return {role: _column(table.column(name).combine_chunks(), name, kind, source) for role, (name, kind) in fields.items()}


def _column(column: pa.Array, name: str, kind: str, source: str) -> pa.Array:
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputFormatError(source, None, f"row {row}: column {name!r} is null")
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    t = column.type
    if kind == "id":
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return column
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            try:
                return column.cast(pa.string() if pa.types.is_binary(t) else pa.large_string())
            except pa.ArrowInvalid:
                raise InputFormatError(source, None, f"column {name!r} holds bytes that are not UTF-8") from None
        if pa.types.is_integer(t):
            return pc.cast(column, pa.string())
    elif kind == "float":
        if pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_decimal(t):
            return pc.cast(column, pa.float64(), safe=False)
    else:
        if pa.types.is_integer(t) or pa.types.is_boolean(t):
            return pc.cast(column, pa.int64())
        if pa.types.is_floating(t):
            values = column.to_numpy(zero_copy_only=False)
            bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) >= 2**63))
            if len(bad):
                raise InputFormatError(source, None, f"row {int(bad[0])}: column {name!r} value {values[bad[0]]!r} is not an integer")
            return pc.cast(column, pa.int64())
    wanted = {"id": "strings or integers", "float": "numbers", "int": "integers"}[kind]
    raise InputFormatError(source, None, f"column {name!r} must hold {wanted}, got {t}")
