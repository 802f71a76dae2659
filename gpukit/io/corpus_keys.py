"""Doc keys of a corpus in index order, built once and kept per device.

``Run.from_topk`` maps search positions (indices into the corpus as it was
added to an index) to doc keys (:mod:`gpukit.io.doc_space`) with one
gather. Building that key table packs or sorts every corpus id, and copying
it to the device moves 8 bytes per corpus document; a :class:`CorpusKeys`
does both once per corpus (and once per device), however many runs are
wrapped. A ``pa.Array`` corpus (immutable) gets its :class:`CorpusKeys`
cached automatically while the array lives; a Python list (mutable) is
re-read on every call unless the caller keeps a :class:`CorpusKeys`.
"""
from __future__ import annotations

import weakref
from typing import Sequence

import numpy as np
import pyarrow as pa
import torch

from gpukit.io.doc_space import DocSpace, PackedIds, Vocabulary, pack_ids, sorted_distinct
from gpukit.io.arrow_numpy import arrow_indices, numpy_values, pc
from gpukit.errors import InputFormatError


class CorpusKeys:
    """The doc space and the key of each corpus position of ``doc_ids``.

    Attributes:
        space: :class:`~gpukit.io.doc_space.PackedIds` or a
            :class:`~gpukit.io.doc_space.Vocabulary` of the corpus ids.
        keys: (N,) int64 NumPy key of each position.
    """

    def __init__(self, doc_ids: Sequence[str] | pa.Array, name: str = "corpus") -> None:
        corpus = doc_ids if isinstance(doc_ids, pa.Array) else pa.array(list(doc_ids), pa.string())
        self.space, self.keys = _corpus_keys(corpus, name)
        self._on_device: dict[str, torch.Tensor] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def table(self, device: torch.device) -> torch.Tensor:
        """(N + 1,) int64 keys on ``device``, copied there on the first call;
        entry N (also reachable as index -1) is the padding key -1, so that a
        missing result (-1) and any clamped index gather without a bounds fault."""
        key = str(device)
        if key not in self._on_device:
            padded = np.append(self.keys, np.int64(-1))
            self._on_device[key] = torch.from_numpy(padded).to(device)
        return self._on_device[key]


# CorpusKeys of live pa.Array corpora, by id(array); an entry leaves with its array.
_CACHE: dict[int, CorpusKeys] = {}


def corpus_keys(doc_ids: Sequence[str] | pa.Array | CorpusKeys, name: str) -> CorpusKeys:
    """``doc_ids`` as :class:`CorpusKeys`: itself, the cached one of a live
    ``pa.Array``, or built now."""
    if isinstance(doc_ids, CorpusKeys):
        return doc_ids
    if not isinstance(doc_ids, pa.Array):
        return CorpusKeys(doc_ids, name)
    found = _CACHE.get(id(doc_ids))
    if found is None:
        found = CorpusKeys(doc_ids, name)
        _CACHE[id(doc_ids)] = found
        weakref.finalize(doc_ids, _CACHE.pop, id(doc_ids), None)
    return found


def _corpus_keys(corpus: pa.Array, name: str) -> tuple[DocSpace, np.ndarray]:
    """Doc space and the key of each corpus position (duplicate ids are an error)."""
    packed = pack_ids(corpus)
    if packed is not None:
        if len(sorted_distinct(packed)) != len(packed):
            raise InputFormatError(name, None, "doc_ids contains duplicates")
        return PackedIds(), packed
    order = numpy_values(pc.sort_indices(corpus))
    vocab = corpus.take(arrow_indices(order))
    if len(vocab) > 1 and pc.any(pc.equal(vocab[1:], vocab[:-1])).as_py():
        raise InputFormatError(name, None, "doc_ids contains duplicates")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return Vocabulary(vocab), rank
