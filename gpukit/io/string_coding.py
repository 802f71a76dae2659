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
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from gpukit.io.arrow_numpy import (
    arrow_indices,
    numpy_values,
    parallel_map,
    pc,
    string_chunks,
    value_bytes,
    value_offsets,
)

_SLICE_ROWS = 1 << 18  # rows per slice when building byte matrices
_CACHE_BYTES = 256 << 20  # byte matrices kept between the two passes up to this size
# _LOW_MASKS[k] keeps the first k bytes (in memory order) of a little-endian uint64.
_LOW_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype="<u8")
_SCAN_ROWS = 1 << 18  # rows per slice when scanning sorted keys (small: temporaries stay in cache)
_MAX_KEY_BYTES = 64  # longer ids go straight to the hash fallback
_MAX_SORT_PASSES = 4


class ByteRows:
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

    def slice_words(self, i: int) -> np.ndarray:
        """(rows, words) little-endian uint64 words of slice ``i``."""
        if self._cache is not None and self._cache[i] is not None:
            return self._cache[i]  # type: ignore[return-value]
        index, lo, hi, _ = self.slices[i]
        c = self.chunks[index]
        off, data = value_offsets(c), value_bytes(c)
        words = self.words_per_row
        first, last = int(off[lo]), int(off[hi])
        padded = np.zeros(last - first + 8 * words + 8, dtype=np.uint8)
        padded[: last - first] = data[first:last]
        view = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
        starts = off[lo:hi].astype(np.int64) - first
        lengths = off[lo + 1 : hi + 1].astype(np.int64) - off[lo:hi]
        out = np.empty((hi - lo, words), dtype="<u8")
        shortest = int(lengths.min()) if len(lengths) else 0
        for w in range(words):
            word = view[starts + 8 * w]
            if shortest < 8 * (w + 1):  # some id ends inside this word: mask its bytes past the end
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
        return parallel_map(lambda i: fn(self.slices[i][3], self._bytes(self.slice_words(i))), range(len(self.slices)))

    def map_words(self, fn: Callable[[np.ndarray], object]) -> list:
        """``fn(words)`` of every slice's (rows, words) little-endian words
        (bytes past ``width`` are zero), in parallel, in order."""
        return parallel_map(lambda i: fn(self.slice_words(i)), range(len(self.slices)))

    def all_words(self) -> np.ndarray:
        """(rows, words) little-endian words of every row (built in parallel)."""
        parts = parallel_map(self.slice_words, range(len(self.slices)))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def rows(self, index: np.ndarray) -> np.ndarray | None:
        """(len(index), width) byte rows of the given rows, from the cache (None if not cached)."""
        if self._cache is None or any(w is None for w in self._cache) or not self._cache:
            return None
        words = np.concatenate(self._cache) if len(self._cache) > 1 else self._cache[0]  # type: ignore[arg-type]
        return self._bytes(words[index])


@dataclass
class KeyPlan:
    """Mixed-radix key layout: per segment, the byte positions and their weights."""

    width: int  # bytes examined per string
    lut: np.ndarray  # (width, 256) uint64: rank of each byte value at each position
    segments: list[list[tuple[int, int]]]  # [(position, weight)] per segment
    bits: list[int]  # bits needed by each segment's values
    sources: list[ByteRows]  # byte matrices of each chunk list given to _plan_keys
    symbols: list[np.ndarray]  # byte values present at each position, ascending (0 = padding)
    present: np.ndarray  # (width, 256) bool: the byte values present at each position


def key_width(chunks: list[pa.Array]) -> int | None:
    """Longest id in bytes (at least 1), or None if one is longer than
    ``_MAX_KEY_BYTES`` or holds a NUL byte (zero padding would be ambiguous)."""
    width = 0
    for c in chunks:
        off = value_offsets(c)
        width = max(width, int(np.diff(off).max()))
        data = value_bytes(c)[int(off[0]) : int(off[-1])]
        if len(data) and np.count_nonzero(data) != len(data):
            return None
    return max(width, 1) if width <= _MAX_KEY_BYTES else None


#: Rows from which :func:`byte_histogram` counts two byte positions per
#: ``bincount`` (docs/benchmarks.md, "Ninth pass").
_PAIR_HISTOGRAM_ROWS = 1 << 16


def byte_histogram(words: np.ndarray, width: int) -> np.ndarray:
    """(width, 256) int64: how many rows hold each byte value at each of the
    first ``width`` byte positions of (rows, words) little-endian words
    (:meth:`ByteRows.slice_words`).

    From ``_PAIR_HISTOGRAM_ROWS`` rows, positions 2k and 2k + 1 are counted
    together: one ``bincount`` of the uint16 pair ``b[2k] + 256 b[2k+1]``
    into 65,536 bins, whose column and row sums are the two positions'
    histograms. That halves the passes over the rows and the casts of byte
    columns to ``intp`` that dominate one ``bincount`` per position (100k ids
    of 16 bytes: 2.84 -> 1.58 ms); on fewer rows, zeroing and summing 65,536
    bins costs more than it saves, and each position is counted alone.
    """
    rows = len(words)
    if rows < _PAIR_HISTOGRAM_ROWS or width < 2:
        as_bytes = words.view(np.uint8).reshape(rows, -1)
        return np.stack([np.bincount(as_bytes[:, j], minlength=256) for j in range(width)])
    pairs = words.view("<u2").reshape(rows, -1)  # column k: bytes 2k (low) and 2k + 1 (high)
    out = np.empty((width + 1, 256), dtype=np.int64)
    for k in range((width + 1) // 2):
        joint = np.bincount(pairs[:, k], minlength=1 << 16).reshape(256, 256)  # [high byte, low byte]
        out[2 * k] = joint.sum(axis=0)
        out[2 * k + 1] = joint.sum(axis=1)
    return out[:width]


def _plan_keys(chunk_lists: Sequence[list[pa.Array]], capacities: Sequence[int]) -> KeyPlan | None:
    """Lay out order-preserving integer keys for the strings of ``chunk_lists``.

    ``capacities[i]`` is the number of bits segment ``i`` may use (the last
    capacity repeats). Returns None when an id holds a NUL byte (padding
    would be ambiguous), is longer than ``_MAX_KEY_BYTES``, or the keys would
    need more segments than ``len(capacities)`` allows.
    """
    width = key_width([c for chunk_list in chunk_lists for c in chunk_list])
    if width is None:
        return None
    counts = np.zeros((width, 256), dtype=np.int64)
    sources = [ByteRows(chunk_list, width) for chunk_list in chunk_lists]
    for source in sources:
        for part in source.map_words(lambda words: byte_histogram(words, width)):
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
    # Byte values present at each position: one scan of the whole table, cut at the radix bounds.
    values = (np.flatnonzero(present) & 0xFF).astype(np.uint8)
    ends = np.cumsum(radix).tolist()
    symbols = [values[end - r : end] for end, r in zip(ends, radix.tolist())]
    return KeyPlan(width, lut, segments, bits, sources, symbols, present)


def _segment_keys(plan: KeyPlan, which: int, segment: int) -> np.ndarray:
    """uint64 key of segment ``segment`` for every row of chunk list ``which``."""
    source = plan.sources[which]
    layout = plan.segments[segment]
    n = sum(len(c) for c in source.chunks)
    keys = np.zeros(n, dtype=np.uint64)
    if not layout:
        return keys
    # key = sum over positions of rank(byte) * weight: each position's rank
    # table is multiplied by its weight once (256 entries), so a row costs one
    # gather and one add per position. Ranks < radix make the sum the
    # mixed-radix number itself, below the segment's bound: no overflow.
    steps = [(pos, plan.lut[pos] * np.uint64(weight)) for pos, weight in layout]

    def horner(lo: int, m: np.ndarray) -> None:
        key = keys[lo : lo + len(m)]
        for pos, weighted in steps:
            key += weighted.take(m[:, pos])

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
    news = parallel_map(flags, bounds)
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

    parts = parallel_map(assign, range(len(bounds)))
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


def decode_keys(plan: KeyPlan, keys: np.ndarray) -> np.ndarray:
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


def strings_from_matrix(matrix: np.ndarray) -> pa.Array | None:
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
    if n <= _SMALL_CODES:
        return _small_codes(chunks)
    packed = _packed_codes(chunks, n)
    if packed is None:
        return _hash_codes(chunks)
    return packed


#: Columns up to this many strings are coded with Python's sort: below it the
#: fixed cost of the vectorised passes exceeds sorting the strings themselves
#: (a run's query ids: ~100 distinct heads).
_SMALL_CODES = 2048
#: Columns longer than this are first checked for runs of equal ids (two
#: vectorised passes): a small run's ~2,000 query ids are ~60 runs, whose
#: heads Python codes in a tenth of the time of every id.
_SMALL_GROUPED = 64


def _small_codes(chunks: list[pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """:func:`string_codes` of a few strings by Python's sort. Code point
    order of ``str`` is the byte order of their UTF-8 encodings."""
    strings = [s for c in chunks for s in c.to_pylist()]
    vocab = sorted(set(strings))
    index = {s: i for i, s in enumerate(vocab)}
    codes = np.fromiter((index[s] for s in strings), dtype=np.int32, count=len(strings))
    encoded = [s.encode("utf-8") for s in vocab]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    data = b"".join(encoded)
    if offsets[-1] >= 2**31 - 1:  # pragma: no cover - a few strings of over 1 MiB each
        return _hash_codes(chunks)
    # Built from buffers: pa.array() on a Python list imports pandas when it is installed.
    array = pa.StringArray.from_buffers(len(encoded), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data))
    return codes, array


#: Lookups of up to this many strings (values and vocabulary together) go
#: through a Python dict (a run's ~100 query ids against the qrels').
_SMALL_LOOKUP = 1024


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
    if (len(values) + len(vocab) <= _SMALL_LOOKUP and pa.types.is_string(values.type) and pa.types.is_string(vocab.type)
            and not values.null_count and not vocab.null_count):
        # A dict of a few strings beats the key building's dozens of array passes.
        index = dict(zip(reversed(vocab.to_pylist()), range(len(vocab) - 1, -1, -1)))  # the first of equal ids
        return np.fromiter((index.get(s, -1) for s in values.to_pylist()), dtype=np.int64, count=len(values))
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


def byte_order_keys(column: pa.Array | pa.ChunkedArray, width: int) -> np.ndarray:
    """Fixed-width keys of ids of at most ``width`` bytes (no NUL byte) whose
    order and equality are the ids' byte order and equality: a big-endian
    uint64 up to 8 bytes, else NumPy ``S<width>`` strings (zero padded)."""
    chunks = string_chunks(column)
    if not chunks:
        return np.zeros(0, dtype=np.uint64 if width <= 8 else f"S{width}")
    words = ByteRows(chunks, width).all_words()
    if width <= 8:
        return words[:, 0].view(">u8").astype(np.uint64)
    matrix = np.ascontiguousarray(words.view(np.uint8).reshape(len(words), -1)[:, :width])
    return matrix.view(f"S{width}").ravel()


#: Bits a single order-preserving key may use: keys stay below 2**62, so
#: that int64 2**63 - 1 remains a padding value above every key.
RADIX_KEY_BITS = 62


def radix_keys(column: pa.Array | pa.ChunkedArray) -> tuple[KeyPlan, np.ndarray] | None:
    """(plan, int64 keys) when every id of ``column`` fits one order-preserving key.

    The key of an id is a mixed-radix number over its bytes: at each byte
    position, the rank of the byte among the byte values seen there (zero
    padding, rank 0, sorts a prefix first), weighted by the product of the
    radices of the later positions. So key order is byte order, equal keys are
    equal ids, and no sort is needed. None when an id holds a NUL byte, is
    longer than ``_MAX_KEY_BYTES``, or the product of the radices exceeds
    ``2**RADIX_KEY_BITS``. The plan keeps no reference to the column.
    """
    chunks = string_chunks(column)
    if not chunks:
        return None
    plan = _plan_keys([chunks], [RADIX_KEY_BITS])
    if plan is None or len(plan.segments) != 1:
        return None
    keys = _segment_keys(plan, 0, 0).view(np.int64)
    plan.sources = []
    return plan, keys


def plan_keys_of(plan: KeyPlan, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """int64 keys of any ids under a single-segment ``plan`` (:func:`radix_keys`);
    -1 for an id the plan cannot express (longer than its width, or a byte not
    seen at some position), which therefore equals no id keyed by the plan."""
    chunks = string_chunks(column)
    n = sum(len(c) for c in chunks)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lengths = np.concatenate([np.diff(value_offsets(c)) for c in chunks]).astype(np.int64)
    ok = lengths <= plan.width
    ok &= ~has_nul(chunks)
    rows = ByteRows(chunks, plan.width)
    matrix = rows.all_words().view(np.uint8).reshape(n, -1)[:, : plan.width]
    keys = np.zeros(n, dtype=np.uint64)
    weights = dict(plan.segments[0])
    for pos in range(plan.width):
        column_bytes = matrix[:, pos]
        ok &= plan.present[pos][column_bytes]
        if pos in weights:
            keys += plan.lut[pos].take(column_bytes) * np.uint64(weights[pos])
    out = keys.view(np.int64)
    out[~ok] = -1
    return out


def has_nul(chunks: list[pa.Array]) -> np.ndarray:
    """Per id, whether it holds a NUL byte (such an id cannot be zero padded unambiguously)."""
    parts = []
    for c in chunks:
        off = value_offsets(c).astype(np.int64)
        out = np.zeros(len(c), dtype=bool)
        nul = np.flatnonzero(value_bytes(c)[off[0] : off[-1]] == 0)
        if len(nul):
            out[np.searchsorted(off[1:] - off[0], nul, side="right")] = True
        parts.append(out)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def plan_ids_of(plan: KeyPlan, keys: np.ndarray) -> pa.Array:
    """The ids of non-negative keys of a single-segment ``plan`` (:func:`radix_keys`), decoded."""
    keys = np.ascontiguousarray(keys, dtype=np.int64).view(np.uint64)
    step = max(1, (1 << 30) // max(plan.width, 1))  # pieces whose bytes fit 32-bit offsets
    pieces = []
    for lo in range(0, max(len(keys), 1), step):
        out = strings_from_matrix(decode_keys(plan, keys[lo : lo + step]))
        assert out is not None  # at most 2**30 bytes per piece
        pieces.append(out)
    return pieces[0] if len(pieces) == 1 else pa.concat_arrays([p.cast(pa.large_string()) for p in pieces]).cast(pa.string())
