"""Integer keys for document ids whose order is the ids' byte order.

A run stores its documents as int64 keys, never as strings. Every consumer
needs only three things from a key: equality with another key of the same id,
byte-wise order (trec_eval breaks score ties by docno, descending), and a way
back to the string. Three key spaces provide them:

* :class:`PackedIds` -- the key *is* the id: its bytes, zero padded to 8, read
  as a big-endian integer. Zero padding sorts a prefix first ("D1" < "D10"),
  exactly as byte-wise string order does, provided no id holds a NUL byte.
  Computing a key is a few vectorised passes over the id bytes; no sort and
  no vocabulary, which is what makes reading a 10M-line run cheap. Used when
  every id is at most 8 bytes, has no NUL byte and starts below 0x80 (so the
  key is a non-negative int64).
* :class:`RadixIds` -- the key is the id read as a mixed-radix number over
  the byte values seen at each position (``LA010189-0001`` has ten digit
  positions of radix ~10 and a few constant bytes: ~35 bits). Also no sort:
  a byte histogram and one pass over the bytes. Used for runs whose longer
  ids fit 62 bits that way; a TREC track's docnos do.
* :class:`Vocabulary` -- the key is the position in a byte-wise sorted list of
  distinct ids (built by sorting, see :func:`~gpukit.io.string_coding.string_codes`):
  any ids, at the cost of that sort. Qrels use it for ids of more than 8 bytes.

Key -1 is reserved for "no document" (padding) in every space.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from gpukit.io.arrow_numpy import (
    arrow_indices,
    parallel_map,
    string_chunks,
    value_offsets,
)
from gpukit.io.byte_keys import (
    ByteRows,
    KeyPlan,
    has_nul,
    key_width,
    plan_ids_of,
    plan_keys_of,
    radix_keys,
    strings_from_matrix,
)
from gpukit.io.radix_translate import translate_radix_keys
from gpukit.io.string_coding import lookup_codes, string_codes

#: An int64 above every packed key: it would be the id 0x7F followed by seven
#: 0xFF bytes, and 0xFF never occurs in UTF-8 text. Serves as a "past every
#: key" pad that matches no document.
_PACKED_BOUND = 2**63 - 1


@dataclass(frozen=True)
class Vocabulary:
    """Keys are positions in ``ids``, distinct strings in byte-wise order."""

    ids: pa.Array

    @property
    def bound(self) -> int:
        """An integer greater than every key (a padding value that matches nothing)."""
        return max(len(self.ids), 1)

    def keys_of(self, ids: pa.Array) -> np.ndarray:
        """int64 key of each of ``ids``; -1 for an id not in the vocabulary."""
        return lookup_codes(ids, self.ids)

    def ids_of(self, keys: np.ndarray) -> pa.Array:
        """The ids of (non-negative) ``keys``."""
        return self.ids.take(arrow_indices(keys))

    def distinct_ids(self, keys: np.ndarray) -> pa.Array:
        """The vocabulary (every id the keys were coded against)."""
        return self.ids


@dataclass(frozen=True)
class PackedIds:
    """Keys are the ids' own bytes (at most 8), as big-endian integers."""

    @property
    def bound(self) -> int:
        return _PACKED_BOUND

    def keys_of(self, ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """int64 key of each id; -1 for an id that cannot be packed (so is in no packed run)."""
        chunks = string_chunks(ids)
        if not chunks:
            return np.zeros(0, dtype=np.int64)
        keys = ByteRows(chunks, 8).all_words()[:, 0].byteswap()
        lengths = np.concatenate([np.diff(value_offsets(c)) for c in chunks])
        bad = (lengths > 8) | (keys >= np.uint64(2**63)) | has_nul(chunks)
        out = keys.view(np.int64)
        out[bad] = -1
        return out

    def ids_of(self, keys: np.ndarray) -> pa.Array:
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        matrix = keys.astype(">u8").view(np.uint8).reshape(len(keys), 8)
        out = strings_from_matrix(matrix)
        assert out is not None  # 8 bytes per id cannot overflow 32-bit offsets below 2**28 ids
        return out

    def distinct_ids(self, keys: np.ndarray) -> pa.Array:
        """The distinct ids among ``keys`` (padding ignored), byte-wise sorted."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        return self.ids_of(sorted_distinct(keys[keys >= 0]))


@dataclass(frozen=True, eq=False)
class RadixIds:
    """Keys are the ids read as mixed-radix numbers over the byte values seen
    at each position (see :func:`~gpukit.io.byte_keys.radix_keys`):
    ids of any length up to 64 bytes whose variety fits 62 bits, typically
    TREC docnos like ``LA010189-0001``. Computing the keys needs no sort and
    no vocabulary; the space is its alphabet (``plan``), and two spaces with
    the same alphabet are equal."""

    plan: KeyPlan
    token: bytes  # the alphabet: width and the byte values present at each position

    @classmethod
    def of(cls, plan: KeyPlan) -> "RadixIds":
        return cls(plan, plan.width.to_bytes(2, "little") + np.packbits(plan.present).tobytes())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RadixIds) and other.token == self.token

    def __repr__(self) -> str:
        return f"RadixIds(width={self.plan.width}, bits={self.plan.bits[0]})"

    def __hash__(self) -> int:
        return hash(self.token)

    @property
    def bound(self) -> int:
        return _PACKED_BOUND

    def keys_of(self, ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """int64 key of each id; -1 for an id outside the alphabet (so in no run of this space)."""
        return plan_keys_of(self.plan, ids)

    def ids_of(self, keys: np.ndarray) -> pa.Array:
        return plan_ids_of(self.plan, keys)

    def distinct_ids(self, keys: np.ndarray) -> pa.Array:
        """The distinct ids among ``keys`` (padding ignored), byte-wise sorted."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        return self.ids_of(sorted_distinct(keys[keys >= 0]))


DocSpace = Vocabulary | PackedIds | RadixIds


def pack_ids(column: pa.Array | pa.ChunkedArray, empty: Callable[[int, type], np.ndarray] = np.empty) -> np.ndarray | None:
    """int64 packed keys of a string column, or None when some id cannot be packed.
    ``empty(n, dtype)`` allocates the keys (a caller may hand its own host allocator)."""
    chunks = string_chunks(column)
    if not chunks:
        return None
    width = key_width(chunks)  # None: an id holds a NUL byte or is very long
    if width is None or width > 8:
        return None
    rows = ByteRows(chunks, 8)
    out = empty(sum(len(c) for c in chunks), np.uint64)

    def fill(i: int) -> bool:
        words = rows.slice_words(i)[:, 0]
        first = rows.slices[i][3]
        target = out[first : first + len(words)]
        np.copyto(target, words)
        target.byteswap(inplace=True)
        return bool(len(target)) and int(target.max()) >= 2**63

    if any(parallel_map(fill, range(len(rows.slices)))):
        return None  # an id starting with a byte >= 0x80: the key would be negative
    return out.view(np.int64)


def doc_keys(column: pa.Array | pa.ChunkedArray, radix: bool = False,
             empty: Callable[[int, type], np.ndarray] = np.empty) -> tuple[np.ndarray, DocSpace]:
    """Doc keys of a string column: packed ids when every id allows it, else
    (with ``radix``) radix keys when they fit, else codes into a sorted vocabulary.

    Runs ask for radix keys (no sort of their ids); qrels keep a vocabulary,
    whose dense codes their tables are built on. ``empty`` allocates packed keys.
    """
    packed = pack_ids(column, empty)
    if packed is not None:
        return packed, PackedIds()
    if radix:
        found = radix_keys(column)
        if found is not None:
            return found[1], RadixIds.of(found[0])
    codes, vocab = string_codes(column)
    return codes, Vocabulary(vocab)


def translate_keys(keys: np.ndarray, source: DocSpace, target: DocSpace) -> np.ndarray:
    """``keys`` of ``source`` re-expressed in ``target``; -1 for an id ``target``
    cannot hold. Order-preserving maps, so sorted keys stay sorted (minus the -1s)."""
    keys = np.asarray(keys, dtype=np.int64)
    if source == target:
        return keys
    if isinstance(source, Vocabulary):
        return target.keys_of(source.ids)[keys]
    if isinstance(source, RadixIds) and isinstance(target, RadixIds):
        # Digit by digit, no strings (two collections' alphabets: the usual join of long docnos).
        return translate_radix_keys(source.plan, target.plan, keys)
    # Packed or radix source: look up each distinct id once.
    order = np.argsort(keys)
    in_order = keys[order]
    new = np.ones(len(keys), dtype=bool)
    new[1:] = in_order[1:] != in_order[:-1]
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return target.keys_of(source.ids_of(in_order[new]))[inverse]


def sorted_distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct values of an integer array, ascending, by one sort
    (NumPy's ``unique`` hashes integers, much slower on millions of keys)."""
    out = np.sort(keys)
    if len(out) < 2:
        return out
    keep = np.ones(len(out), dtype=bool)
    keep[1:] = out[1:] != out[:-1]
    return out[keep]
