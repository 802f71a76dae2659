"""Radix keys translated digit by digit (gpukit/data/radix_translate.py)
equal the string round trip they replace: decode under one alphabet, key
the ids under another (-1 where the other cannot express an id)."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from gpukit.io.byte_keys import radix_keys
from gpukit.io.doc_space import RadixIds, translate_keys
from gpukit.io.radix_translate import translate_radix_keys

ALPHABETS = ["0123456789", "ab", "CACM-0123", "xyz.-_", "LA0189-", "é0a"]


def _ids(rng: random.Random, n: int) -> list[str]:
    prefix = rng.choice(["", "CACM-", "LA0", "d", "é"])
    letters = rng.choice(ALPHABETS)
    return [prefix + "".join(rng.choice(letters) for _ in range(rng.randint(0 if prefix else 1, 6))) for _ in range(n)]


def _space(ids: list[str]) -> tuple[RadixIds, np.ndarray]:
    found = radix_keys(pa.array(ids))
    assert found is not None
    return RadixIds.of(found[0]), found[1]


@pytest.mark.parametrize("seed", range(60))
def test_translation_equals_the_string_round_trip(seed):
    rng = random.Random(seed)
    source_ids = _ids(rng, rng.randint(1, 300))
    # The target shares some ids (the join's hits), has others, and sometimes is the same alphabet.
    target_ids = rng.sample(source_ids, rng.randint(0, len(source_ids))) + _ids(rng, rng.randint(1, 300))
    source, keys = _space(source_ids)
    target, _ = _space(target_ids)
    expected = target.keys_of(source.ids_of(keys))
    got = translate_radix_keys(source.plan, target.plan, keys)
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    assert np.array_equal(translate_keys(keys, source, target), expected)
    # A source id the target keyed itself gets that key; any other matches none of the target's ids.
    own = dict(zip(target_ids, target.keys_of(pa.array(target_ids)).tolist()))
    for sid, key in zip(source_ids, got.tolist()):
        assert key == own[sid] if sid in own else key not in own.values()


def test_translation_leaves_the_keys_alone():
    source, keys = _space(["CACM-1", "CACM-22", "CACM-3204"])
    target, _ = _space(["CACM-1", "CACM-222"])
    before = keys.copy()
    translate_radix_keys(source.plan, target.plan, keys)
    assert np.array_equal(keys, before)
