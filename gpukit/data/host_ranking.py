"""Run rows put in trec_eval's ranking order on the host, with NumPy's sorts.

The order is :func:`gpukit.data.run.ranking_permutation`'s: score
descending, ties by document key descending (trec_eval breaks ties by docno,
descending), padding (key -1) last. That function takes two stable torch
sorts (by key, then by score); when every score is a float32 value (scores
read as trec_eval's ``float``, e.g. by :mod:`gpukit.compat.pytrec_eval`) one
unstable NumPy argsort by key and one NumPy value sort of
``(score bits << 32) | place in key order`` per row give the same order in
about two thirds of the time (NumPy's vectorised row sorts). Stability is not
needed: keys are distinct within a row, and the padding entries are equal.
"""
from __future__ import annotations

import numpy as np

from gpukit.float_order import signed_order_bits

_LOW = np.uint64(0xFFFFFFFF)


#: Scores checked first: a run read from text (float64 parses of decimals) is
#: rarely float32-exact, and its first scores say so without a pass over all.
_PROBE = 1024


def float32_exact(scores: np.ndarray) -> bool:
    """Whether every score is a float32 value (the packed sort compares float32 bits)."""
    flat = scores.reshape(-1)
    head = flat[:_PROBE]
    # A score past float32's range becomes infinity, which differs from it:
    # the answer is then False, as it should be, and not worth a warning.
    with np.errstate(over="ignore"):
        if not np.array_equal(head.astype(np.float32), head):
            return False
        return bool(np.array_equal(flat.astype(np.float32), flat))


def rank_rows_host(codes: np.ndarray, scores: np.ndarray) -> None:
    """Put each row of ``codes`` / ``scores`` ((R, K) arrays) in ranking order, in place.

    Preconditions (those of :class:`gpukit.data.run.Run`'s padded layouts
    after deduplication): document keys are distinct within a row, every
    padding entry holds (-1, the same score), scores are float32 values
    (:func:`float32_exact`) and none is NaN. Rows whose scores strictly
    decrease along their documents are left as they are.
    """
    k = codes.shape[1]
    if k < 2 or k >= 2**32:
        return
    doc = codes >= 0
    in_order = (scores[:, 1:] < scores[:, :-1]) | ~doc[:, 1:]
    rows = np.flatnonzero(~in_order.all(1))
    if not len(rows):
        return
    c, s = codes[rows], scores[rows]
    # Row-wise gathers as one flat np.take (several times faster than take_along_axis).
    offsets = np.arange(0, len(rows) * k, k, dtype=np.int64)[:, None]
    by_key = np.argsort(c, axis=1)  # ascending, padding first
    by_key += offsets
    packed = _descending_bits(s.reshape(-1).take(by_key)).astype(np.uint64) << np.uint64(32)
    packed[c.reshape(-1).take(by_key) < 0] = _LOW << np.uint64(32)  # padding after every score
    # Low word: k - 1 - place in key order, so that equal scores come out by key descending.
    packed |= np.arange(k - 1, -1, -1, dtype=np.uint64)
    packed.sort(axis=1)
    place = (k - 1) - (packed & _LOW).astype(np.int64)
    place += offsets
    perm = by_key.reshape(-1).take(place)
    codes[rows] = c.reshape(-1).take(perm)
    scores[rows] = s.reshape(-1).take(perm)


def _descending_bits(scores: np.ndarray) -> np.ndarray:
    """uint32 per score whose ascending order is the scores' descending order
    (-0.0 and 0.0 map to the same word, as they compare equal)."""
    neg = scores.astype(np.float32)
    np.negative(neg, out=neg)
    neg += np.float32(0)  # -0.0 + 0.0 is +0.0 (gpukit.float_order)
    return signed_order_bits(neg.view(np.int32)).view(np.uint32) ^ np.uint32(0x80000000)
