"""Radix keys of one alphabet re-expressed in another, without the strings.

A radix key (:func:`~gpukit.data.string_coding.radix_keys`) is a
mixed-radix number: at each byte position of a single-segment plan, the rank
of the byte among the byte values seen there. Two runs' (or a run's and the
qrels') alphabets differ, so joining them needs the judged keys in the run's
space. Decoding every key to its id and keying the ids again
(``ids_of`` + ``keys_of``) builds a string array and a byte matrix; here the
digits are read off the source key position by position and each is mapped,
by a table of at most 256 entries per position, to its contribution to the
target key (or to "cannot be expressed"). A few array passes per varying
byte position, and none per constant one: on a CACM-sized qrels about a
tenth of the string round trip, and linear (no sort) on a large one.
"""
from __future__ import annotations

import numpy as np

from gpukit.data.string_coding import KeyPlan

_NO_SYMBOLS = np.zeros(1, dtype=np.uint8)  # past an alphabet's width every id is zero padded


def translate_radix_keys(source: KeyPlan, target: KeyPlan, keys: np.ndarray) -> np.ndarray:
    """int64 keys under ``target`` of the ids keyed by ``keys`` under
    ``source`` (both single-segment plans; ``keys`` non-negative, each the
    key of a real id); -1 for an id ``target`` cannot express (longer than
    its width, or a byte it has not seen at some position).

    The same values as ``plan_keys_of(target, plan_ids_of(source, keys))``
    (tests/test_radix_translate.py compares them on random alphabets).
    """
    keys = np.asarray(keys, dtype=np.int64).view(np.uint64)
    rest = keys.copy()  # the source digits not yet read: the caller's keys stay as they are
    out = np.zeros(len(keys), dtype=np.uint64)
    ok: np.ndarray | None = None  # None: every id expressible so far
    constant = 0  # target contribution of the positions where every source id has one byte
    source_weights = dict(source.segments[0])
    target_weights = dict(target.segments[0])
    for pos in range(max(source.width, target.width)):
        symbols = source.symbols[pos] if pos < source.width else _NO_SYMBOLS
        if pos < target.width:
            present = np.zeros(256, dtype=bool)
            present[target.symbols[pos]] = True
            fits = present[symbols]
            contribution = target.lut[pos][symbols] * np.uint64(target_weights.get(pos, 0))
        else:  # past the target's width only zero padding is expressible
            fits = symbols == 0
            contribution = np.zeros(len(symbols), dtype=np.uint64)
        if pos not in source_weights:  # one byte value here in every source id
            if not bool(fits[0]):
                return np.full(len(keys), -1, dtype=np.int64)
            constant += int(contribution[0])
            continue
        weight = np.uint64(source_weights[pos])
        digit = rest // weight
        rest -= digit * weight
        out += contribution[digit]
        if not bool(fits.all()):
            ok = fits[digit] if ok is None else ok & fits[digit]
    out += np.uint64(constant)
    result = out.view(np.int64)
    if ok is not None:
        result[~ok] = -1
    return result
