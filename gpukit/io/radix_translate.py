"""Radix keys of one alphabet re-expressed in another, without the strings.

A radix key (:func:`~gpukit.io.byte_keys.radix_keys`) is a
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

from gpukit.io.byte_keys import KeyPlan

_NO_SYMBOLS = np.zeros(1, dtype=np.uint8)  # past an alphabet's width every id is zero padded


def translate_radix_keys(source: KeyPlan, target: KeyPlan, keys: np.ndarray) -> np.ndarray:
    """int64 keys under ``target`` of the ids keyed by ``keys`` under
    ``source`` (both single-segment plans; ``keys`` non-negative, each the
    key of a real id); -1 for an id ``target`` cannot express (longer than
    its width, or a byte it has not seen at some position).

    The same values as ``plan_keys_of(target, plan_ids_of(source, keys))``
    (tests/io/test_radix_translate.py compares them on random alphabets).
    """
    keys = np.asarray(keys, dtype=np.int64).view(np.uint64)
    width = max(source.width, target.width)
    # Every (position, byte value) that source ids hold, position by position;
    # past the source's width only the zero padding.
    symbols = [source.symbols[pos] if pos < source.width else _NO_SYMBOLS for pos in range(width)]
    radix = [len(s) for s in symbols]
    first = np.cumsum([0] + radix[:-1])
    position = np.repeat(np.arange(width), radix)
    byte = np.concatenate(symbols)
    # Whether the target holds each of them (past its width: only the
    # padding), and what it adds to a target key: all positions' tables in
    # one pass, not a few small passes per position.
    held = np.zeros((width, 256), dtype=bool)
    held[: target.width] = target.present
    held[target.width :, 0] = True
    fits = held[position, byte]
    rank = np.zeros((width, 256), dtype=np.uint64)
    rank[: target.width] = target.lut
    weight = np.zeros(width, dtype=np.uint64)
    for pos, w in target.segments[0]:
        weight[pos] = w
    contribution = rank[position, byte] * weight[position]
    all_fit = np.logical_and.reduceat(fits, first).tolist()
    rest = keys.copy()  # the source digits not yet read: the caller's keys stay as they are
    out = np.zeros(len(keys), dtype=np.uint64)
    ok: np.ndarray | None = None  # None: every id expressible so far
    constant = 0  # target contribution of the positions where every source id has one byte
    source_weights = dict(source.segments[0])
    for pos in range(width):
        lo, hi = int(first[pos]), int(first[pos]) + radix[pos]
        if pos not in source_weights:  # one byte value here in every source id
            if not all_fit[pos]:
                return np.full(len(keys), -1, dtype=np.int64)
            constant += int(contribution[lo])
            continue
        w = np.uint64(source_weights[pos])
        digit = rest // w
        rest -= digit * w
        out += contribution[lo:hi][digit]
        if not all_fit[pos]:
            fit = fits[lo:hi][digit]
            ok = fit if ok is None else ok & fit
    out += np.uint64(constant)
    result = out.view(np.int64)
    if ok is not None:
        result[~ok] = -1
    return result
