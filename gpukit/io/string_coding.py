"""Codes for string columns by sorting, not hashing.

Ids become integer codes into byte-wise sorted vocabularies
(:func:`string_codes`), and strings are looked up in such a vocabulary
(:func:`lookup_codes`), without big hash tables: on large vocabularies hash
tables are dominated by cache misses, and unifying per-block Arrow
dictionaries was the single largest cost of an earlier reader.

Hashing millions of distinct ids (Arrow's dictionary_encode / index_in, or
NumPy's unique) is dominated by cache and TLB misses, and unifying the
per-block dictionaries of a CSV read is quadratic in practice. The codes are
instead computed by sorting: every string is turned into an integer key
whose order is the strings' byte order (a mixed-radix number over the byte
values seen at each position, so "D1234567" takes ~24 bits, not 64), the
row number is packed into the low bits of the same uint64, and one direct
(cache-friendly) sort gives both the sorted vocabulary and each row's code.
Grouped columns (a run's query ids) are run-length coded first. Keys that do
not fit fall back to a sort over several passes, and as a last resort to
Arrow's hash table.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from gpukit.io.arrow_numpy import (
    arrow_indices,
    numpy_values,
    pc,
    string_chunks,
    value_offsets,
)
from gpukit.io.byte_keys import (
    byte_order_keys,
    decode_keys,
    key_width,
    pass_capacities,
    plan_keys,
    segment_keys,
    sorted_ranks,
    strings_from_matrix,
)


def _packed_codes(chunks: list[pa.Array], n: int) -> tuple[np.ndarray, pa.Array] | None:
    """(codes, sorted vocabulary) via order-preserving keys, or None."""
    rowbits = max(1, (n - 1).bit_length())
    capacities = pass_capacities(rowbits)
    if min(capacities) < 8:
        return None
    plan = plan_keys([chunks], capacities)
    if plan is None:
        return None
    ranks: np.ndarray | None = None
    firsts: np.ndarray | None = None
    first_keys: np.ndarray | None = None
    last = len(plan.segments) - 1
    for i in range(len(plan.segments)):
        keys = segment_keys(plan, 0, i)
        if ranks is not None:
            # Previous ranks (< 2**rowbits) become the high digits of this pass.
            keys |= ranks.astype(np.uint64) << np.uint64(plan.bits[i])
        ranks, firsts, first_keys = sorted_ranks(keys, rowbits, i == last)
        del keys
    assert ranks is not None and firsts is not None and first_keys is not None
    # The vocabulary's bytes: the cached byte rows of each code's first row, or
    # (one pass) decoded from the keys themselves; the strings are rebuilt from them.
    matrix = plan.sources[0].rows(firsts)
    if matrix is None and len(plan.segments) == 1:
        matrix = decode_keys(plan, first_keys)
    if matrix is not None:
        vocab = strings_from_matrix(matrix)
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


def _take_rows(chunks: list[pa.Array], rows: np.ndarray) -> pa.Array:
    """Strings at global row numbers ``rows`` (any order) as one pa.string() array.

    Ascending rows (run heads, first rows of codes: every caller's case) are
    taken chunk by chunk: Arrow's take on a chunked array concatenates all
    of its chunks first (0.54 s for the query ids of a 10M-line run, against
    6 ms chunk by chunk).
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(chunks) > 1 and len(rows) and bool((rows[1:] >= rows[:-1]).all()):
        bounds = np.cumsum([0] + [len(c) for c in chunks])
        cut = np.searchsorted(rows, bounds)
        parts = [
            chunks[i].take(arrow_indices(rows[cut[i] : cut[i + 1]] - bounds[i]))
            for i in range(len(chunks)) if cut[i + 1] > cut[i]
        ]
        out = pa.concat_arrays([p.cast(pa.large_string()) for p in parts]) if len(parts) > 1 else parts[0]
    else:
        out = pa.chunked_array(chunks).take(arrow_indices(rows))
        out = out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out
    return out.cast(pa.string()) if out.type != pa.string() else out


def _hash_codes(chunks: list[pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """Fallback: Arrow's hash table over the whole column, then a sorted vocabulary."""
    total = sum(int(value_offsets(c)[-1] - value_offsets(c)[0]) for c in chunks)
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


@dataclass(frozen=True)
class CodeRuns:
    """A column as runs of equal consecutive strings: run ``i`` covers rows
    ``starts[i]`` up to the next start (or ``num_rows``), all holding
    ``vocab[codes[i]]``. Two runs may hold the same string (a query whose
    lines are not contiguous)."""

    starts: np.ndarray  # (G,) int64 first row of each run, ascending, starts[0] == 0
    codes: np.ndarray  # (G,) codes into ``vocab`` (int32, or int64 past 2**31 rows)
    vocab: pa.Array  # distinct strings, byte-wise sorted
    num_rows: int

    def lengths(self) -> np.ndarray:
        """(G,) int64 rows per run."""
        return np.diff(np.append(self.starts, self.num_rows))

    def each_code_once(self) -> bool:
        """Whether no string has two runs (each query's lines are contiguous)."""
        return len(self.codes) == len(self.vocab)

    def per_row(self) -> np.ndarray:
        """The code of every row (what :func:`string_codes` returns)."""
        return np.repeat(self.codes, self.lengths())


def string_code_runs(column: pa.Array | pa.ChunkedArray | list[pa.Array]) -> CodeRuns | None:
    """:class:`CodeRuns` of a grouped string column (at most a quarter as many
    runs as rows, as a run's query ids), without a code per row; None for
    a column that is not grouped, empty or too short to be worth the check.

    Only the runs' heads are coded (by :func:`string_codes`), so the codes
    and vocabulary are those :func:`string_codes` gives the whole column.
    """
    chunks = column if isinstance(column, list) else string_chunks(column)
    n = sum(len(c) for c in chunks)
    if n <= _SMALL_GROUPED:
        return None
    sample = chunks[0].slice(0, 1 << 16)
    sample_starts = _run_starts([sample])
    if len(sample_starts) * 4 > len(sample):
        return None
    starts = _run_starts(chunks) if n > len(sample) else sample_starts
    if len(starts) * 4 > n:
        return None
    head_codes, vocab = string_codes(_take_rows(chunks, starts))
    return CodeRuns(starts.astype(np.int64, copy=False), head_codes, vocab, n)


def string_codes(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Codes into a byte-wise sorted vocabulary for a string column.

    Returns ``(codes, vocab)``: ``vocab`` holds
    the distinct strings in byte-wise order and ``codes[i]`` (int32, or int64
    past 2**31 rows) indexes it. Accepts plain, large or dictionary-encoded
    string arrays (chunked or not); nulls are an error for the caller to
    report. No hash table over the whole column is built unless the ids are
    too long or too varied for sort keys.
    """
    codes, vocab = string_codes_or_runs(column)
    return (codes.per_row() if isinstance(codes, CodeRuns) else codes), vocab


def string_codes_or_runs(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray | CodeRuns, pa.Array]:
    """:func:`string_codes`, except that a grouped column (see
    :func:`string_code_runs`) is given as its :class:`CodeRuns`, without a
    code per row; the runs are looked for once."""
    chunks = string_chunks(column)
    n = sum(len(c) for c in chunks)
    if n == 0:
        return np.zeros(0, np.int32), pa.array([], pa.string())
    runs = string_code_runs(chunks)
    if runs is not None:
        return runs, runs.vocab
    packed = _packed_codes(chunks, n)
    if packed is None:
        return _hash_codes(chunks)
    return packed


#: Columns longer than this are first checked for runs of equal ids (two
#: vectorised passes): a small run's ~2,000 query ids are ~60 runs, whose
#: heads Python codes in a tenth of the time of every id.
_SMALL_GROUPED = 64


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
    v_chunks, h_chunks = string_chunks(values), string_chunks(vocab)
    width = key_width(v_chunks + h_chunks)
    if width is None:
        found = numpy_values(pc.index_in(values, value_set=vocab).fill_null(-1))
        return found.astype(np.int64)
    v_keys, h_keys = byte_order_keys(values, width), byte_order_keys(vocab, width)
    pos = np.searchsorted(h_keys, v_keys)
    np.minimum(pos, len(h_keys) - 1, out=pos)
    hit = h_keys[pos] == v_keys
    out[hit] = pos[hit]
    return out


