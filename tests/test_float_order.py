"""gpukit.float_order: the int32 map under both ranking keys (host rows in
NumPy, top-k merges in torch) orders float32 values as Python compares them."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import torch

from gpukit.float_order import signed_order_bits, signed_order_bits64


def _values(seed: int) -> list[float]:
    rng = random.Random(seed)
    special = [0.0, -0.0, float("inf"), float("-inf"), 1e-45, -1e-45, 3.4e38, -3.4e38, 1.0, -1.0]
    drawn = [rng.choice([-1, 1]) * rng.uniform(0, 10) ** rng.uniform(-40, 38) for _ in range(200)]
    with np.errstate(over="ignore"):  # a draw past float32's range is meant to become infinity
        return [float(np.float32(v)) for v in special + drawn]


@pytest.mark.parametrize("seed", range(3))
def test_signed_order_is_float_order_in_numpy_and_torch(seed):
    values = _values(seed)
    host = signed_order_bits(np.array(values, dtype=np.float32).view(np.int32))
    device = signed_order_bits(torch.tensor(values, dtype=torch.float32).view(torch.int32))
    assert host.tolist() == device.tolist()
    keys = host.tolist()
    by_key = sorted(range(len(values)), key=lambda i: keys[i])
    for i, j in zip(by_key, by_key[1:]):
        assert values[i] <= values[j]  # key order never inverts two floats
        if values[i] < values[j]:
            assert keys[i] < keys[j]
        else:  # equal floats: the same pattern, or the two zeros (callers fold -0.0 into +0.0 first)
            assert keys[i] == keys[j] or {keys[i], keys[j]} == {-1, 0}


@pytest.mark.parametrize("seed", range(3))
def test_signed_order_bits64_is_float64_order(seed):
    rng = random.Random(seed)
    special = [0.0, -0.0, float("inf"), float("-inf"), 5e-324, -5e-324, 1.7e308, -1.7e308, 1.0, -1.0]
    values = special + [rng.choice([-1, 1]) * float(f"{rng.uniform(1, 10)}e{rng.randint(-320, 307)}") for _ in range(300)]
    keys = signed_order_bits64(torch.tensor(values, dtype=torch.float64).view(torch.int64)).tolist()
    by_key = sorted(range(len(values)), key=lambda i: keys[i])
    for i, j in itertools.pairwise(by_key):
        assert values[i] <= values[j]
        if values[i] < values[j]:
            assert keys[i] < keys[j]
        else:
            assert keys[i] == keys[j] or {keys[i], keys[j]} == {-1, 0}
