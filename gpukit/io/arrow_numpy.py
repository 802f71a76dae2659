"""Arrow and NumPy helpers shared by the readers and the id coders.

Zero-copy views of Arrow buffers as NumPy (:func:`numpy_values`,
:func:`value_offsets`, :func:`value_bytes`), Arrow index arrays over NumPy
buffers (:func:`arrow_indices`), string columns normalised to plain string
chunks (:func:`string_chunks`, :func:`string_array`), pandas columns as Arrow
(:func:`pandas_columns`), a small thread map, and
``pc``, ``pyarrow.compute`` imported on first use.

Why not ``to_numpy`` / ``pa.array`` everywhere: in pyarrow both import pandas
on first use, a fixed ~0.2-0.3 s that a small evaluation from the command
line would otherwise pay.
"""
from __future__ import annotations

import importlib
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from gpukit.errors import InputFormatError, UsageError, UsageTypeError


class LazyModule:
    """A module imported on its first attribute access, then reached through
    ``sys.modules`` (a dict look-up) on every later one.

    Why: ``pyarrow.compute`` builds a Python wrapper for each of Arrow's
    several hundred kernels when imported, a fixed cost that a small
    evaluation from the command line would otherwise pay at start-up.
    Modules that only sometimes call a kernel name it through this instead.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        module = sys.modules.get(self._name)
        # A module still being imported (by another thread) is in sys.modules
        # half built: import_module then waits for that import to finish.
        if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
            module = importlib.import_module(self._name)
        return getattr(module, attr)


#: ``pyarrow.compute``, imported when first used (see LazyModule).
pc = LazyModule("pyarrow.compute")


def value_offsets(chunk: pa.Array) -> np.ndarray:
    """The value offsets of a (large_)string/binary array, offset-aware."""
    large = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
    dtype = np.int64 if large else np.int32
    width = 8 if large else 4
    return np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk) + 1, offset=chunk.offset * width)


def value_bytes(chunk: pa.Array) -> np.ndarray:
    """The data buffer of a string/binary array as uint8 (index it with
    :func:`value_offsets`; one zero byte when the buffer is empty)."""
    data = chunk.buffers()[2]
    return np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)


# Fixed-width Arrow types whose data buffer NumPy can view as is.
_NUMPY_DTYPE = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
    pa.float32(): np.float32, pa.float64(): np.float64,
}


def plain_integers(chunk: pa.Array) -> bool:
    """Whether every string of ``chunk`` matches ``-?[0-9]+`` (``text_table.INT_TEXT``),
    checked on the bytes in a few vectorised passes rather than by a regex per value."""
    if len(chunk) == 0:
        return True
    off = value_offsets(chunk).astype(np.int64)
    lengths = np.diff(off)
    if int(lengths.min()) == 0:
        return False
    data = value_bytes(chunk)[off[0] : off[-1]]
    minus = data == 0x2D
    if not bool((((data >= 0x30) & (data <= 0x39)) | minus).all()):
        return False
    starts = off[:-1] - off[0]
    leading = minus[starts]
    # A '-' only as a first byte, and followed by a digit.
    return int(np.count_nonzero(minus)) == int(np.count_nonzero(leading)) and bool((lengths[leading] >= 2).all())


def plain_int64(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray | None:
    """A string column as int64, or None if one value is not a plain decimal
    integer (:func:`plain_integers`) within int64. Why the check first:
    Arrow's own integer parser would accept ``0x1``."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if not all(plain_integers(chunk) for chunk in chunks):
        return None
    try:
        return pc.cast(column, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


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


def string_chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """The non-empty chunks of a string column as (large_)string arrays:
    dictionaries decoded, binary cast to string; nulls are an error."""
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


def parallel_map(fn: Callable, items: Sequence) -> list:
    """``[fn(x) for x in items]`` on a few threads (NumPy and Arrow release the
    GIL in these loops): at most 8, and no more than the processors this
    process may use; the count depends on the machine, never on its load,
    and no value depends on it. A pool per call: nothing lingers to break a fork."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = min(len(items), cores, 8)
    if workers <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gpukit-codes") as pool:
        return list(pool.map(fn, items))

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
