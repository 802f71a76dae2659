"""Kernels with short-cuts, against their definitions in plain Python.

``safe_divide`` takes a shorter path for count denominators (no clamp, no
cast), and ``reciprocal_rank`` reads its cutoffs off one argmax (with no
comparison when no cutoff stops short of the truncated ranking), the
argmax ``first_relevant_rank`` shares: every case of the three is checked
here value by value, on random inputs.
"""
from __future__ import annotations

import random

import pytest
import torch

from gpukit.metrics.binary import first_relevant_rank, reciprocal_rank
from gpukit.metrics.cutoffs import safe_divide


def _plain_rr(row: list[bool], k: int | None) -> float:
    """RR@k: 1 / rank of the first relevant document if it is within k, else 0."""
    for i, relevant in enumerate(row, start=1):
        if relevant:
            return 1.0 / i if k is None or i <= k else 0.0
    return 0.0


@pytest.mark.parametrize("seed", range(30))
def test_reciprocal_rank_is_its_definition(seed):
    rng = random.Random(seed)
    q, width = rng.randint(1, 6), rng.choice([0, 1, 2, 5, 12])
    rows = [[rng.random() < rng.choice([0.0, 0.1, 0.5]) for _ in range(width)] for _ in range(q)]
    rel = torch.tensor(rows, dtype=torch.bool).reshape(q, width)
    # Cutoffs below, at and beyond the width, None, several at once.
    cutoffs = rng.sample([None, 1, 2, 3, 5, 12, 20, 1000], rng.randint(1, 4))
    got = reciprocal_rank(rel, cutoffs)
    assert got.dtype == torch.float64 and tuple(got.shape) == (q, len(cutoffs))
    want = [[_plain_rr(row, k) for k in cutoffs] for row in rows]
    assert got.tolist() == want


@pytest.mark.parametrize("seed", range(10))
def test_first_relevant_rank_is_its_definition(seed):
    rng = random.Random(seed)
    q, width = rng.randint(1, 6), rng.choice([0, 1, 2, 5, 12])
    rows = [[rng.random() < rng.choice([0.0, 0.1, 0.5]) for _ in range(width)] for _ in range(q)]
    got = first_relevant_rank(torch.tensor(rows, dtype=torch.bool).reshape(q, width))
    # 1-based rank of the first relevant document; K + 1 when there is none.
    assert got.tolist() == [next((i for i, relevant in enumerate(row, 1) if relevant), width + 1) for row in rows]


def test_reciprocal_rank_past_the_width_with_several_cutoffs():
    """No cutoff stops short of the ranking: one column per cutoff all the same."""
    rel = torch.tensor([[False, True, False], [False, False, False]])
    got = reciprocal_rank(rel, [None, 3, 50])
    assert got.tolist() == [[0.5, 0.5, 0.5], [0.0, 0.0, 0.0]]


@pytest.mark.parametrize("numerator_dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("denominator_dtype", [torch.int64, torch.int32, torch.float64, torch.float32])
def test_safe_divide_is_zero_where_the_denominator_is_zero(numerator_dtype, denominator_dtype):
    rng = random.Random(7)
    num = [rng.choice([0.0, 1.0, 3.0, 0.1, 7.25, 1e300]) for _ in range(40)]
    den = [rng.choice([0, 0, 1, 2, 3, 7, 1000]) for _ in range(40)]
    n = torch.tensor(num, dtype=numerator_dtype)
    d = torch.tensor(den, dtype=denominator_dtype)
    got = safe_divide(n, d)
    assert got.dtype == numerator_dtype
    # The quotient in the numerator's precision, as the dividing op computes it.
    want = [float((a / torch.tensor(b, dtype=numerator_dtype)).item()) if b > 0 else 0.0 for a, b in zip(n, den)]
    assert got.tolist() == want
