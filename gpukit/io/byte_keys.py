"""Fixed-width byte keys of strings: ids as rows of bytes, packed into integer
keys whose order is the ids' byte order (one or more sort passes), and back.

The key spaces of :mod:`gpukit.io.doc_space` (packed ids of up to 8 bytes,
radix keys of TREC docnos) and the packed codes of
:mod:`gpukit.io.string_coding` are built from these."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from gpukit.io.arrow_numpy import (
    parallel_map,
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
    sources: list[ByteRows]  # byte matrices of each chunk list given to plan_keys
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


def plan_keys(chunk_lists: Sequence[list[pa.Array]], capacities: Sequence[int]) -> KeyPlan | None:
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


def segment_keys(plan: KeyPlan, which: int, segment: int) -> np.ndarray:
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


def sorted_ranks(
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


def pass_capacities(rowbits: int) -> list[int]:
    """Key bits per sort pass: the first pass has all bits above the row
    number, later ones also carry the previous pass's rank (< 2**rowbits)."""
    return [64 - rowbits] + [64 - 2 * rowbits] * (_MAX_SORT_PASSES - 1)


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
    plan = plan_keys([chunks], [RADIX_KEY_BITS])
    if plan is None or len(plan.segments) != 1:
        return None
    keys = segment_keys(plan, 0, 0).view(np.int64)
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
