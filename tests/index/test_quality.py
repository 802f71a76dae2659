"""recall_at_k and ndcg_at_k_loss against plain-Python set references."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit.index import IndexUsageError, ndcg_at_k_loss, recall_at_k


def python_recall(approx: list[list[int]], exact: list[list[int]], k: int) -> float:
    """Big-ANN recall: mean over queries of |set(approx[:k]) & set(exact[:k])| / k."""
    return sum(len(set(a[:k]) & set(e[:k])) / k for a, e in zip(approx, exact)) / len(approx)


def python_ndcg_loss(approx: list[list[int]], exact: list[list[int]], k: int) -> float:
    """1 - mean nDCG@k with gain 1 for exact top-k members, each doc counted once."""
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, k + 1))
    total = 0.0
    for a, e in zip(approx, exact):
        relevant, seen, dcg = set(e[:k]), set(), 0.0
        for rank, doc in enumerate(a[:k], start=1):
            if doc in relevant and doc not in seen:
                dcg += 1 / math.log2(rank + 1)
            seen.add(doc)
        total += dcg / ideal
    return 1 - total / len(approx)


def random_lists(rng: np.random.Generator, queries: int, width: int, universe: int, padding: bool):
    """Rows of distinct ids (exact-search shape) and approximate rows that may
    repeat ids and end in -1 padding."""
    exact = np.stack([rng.permutation(universe)[:width] for _ in range(queries)])
    approx = rng.integers(0, universe, size=(queries, width))
    if padding:
        approx[:, width - 2 :] = -1
    return approx, exact


@pytest.mark.parametrize("k", [1, 5, 10])
@pytest.mark.parametrize("padding", [False, True])
def test_match_python_set_references(k, padding):
    rng = np.random.default_rng(k + 10 * padding)
    approx, exact = random_lists(rng, queries=60, width=12, universe=25, padding=padding)
    assert recall_at_k(torch.from_numpy(approx), torch.from_numpy(exact), k) == pytest.approx(
        python_recall(approx.tolist(), exact.tolist(), k), abs=1e-12
    )
    reference_loss = python_ndcg_loss(approx.tolist(), exact.tolist(), k)
    assert ndcg_at_k_loss(approx, exact, k) == pytest.approx(reference_loss, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.lists(st.integers(-1, 15), min_size=6, max_size=6), st.permutations(range(16))),
        min_size=1,
        max_size=8,
    ),
    k=st.integers(1, 6),
)
def test_property_matches_reference(rows, k):
    approx = [list(a) for a, _ in rows]
    exact = [list(e)[:6] for _, e in rows]
    recall = recall_at_k(approx, exact, k)
    assert recall == pytest.approx(python_recall(approx, exact, k), abs=1e-12)
    assert 0.0 <= recall <= 1.0
    assert ndcg_at_k_loss(approx, exact, k) == pytest.approx(python_ndcg_loss(approx, exact, k), abs=1e-12)


def test_perfect_and_reordered_lists():
    exact = torch.arange(40).reshape(4, 10)
    shuffled = exact[:, torch.randperm(10, generator=torch.Generator().manual_seed(0))]
    assert recall_at_k(shuffled, exact, 10) == 1.0
    assert ndcg_at_k_loss(shuffled, exact, 10) == pytest.approx(0.0, abs=1e-15)
    assert recall_at_k(exact + 100, exact, 10) == 0.0
    assert ndcg_at_k_loss(exact + 100, exact, 10) == pytest.approx(1.0)


def test_shape_errors():
    exact = torch.zeros(3, 5, dtype=torch.int64)
    with pytest.raises(IndexUsageError, match="queries"):
        recall_at_k(torch.zeros(2, 5, dtype=torch.int64), exact, 5)
    with pytest.raises(IndexUsageError, match="columns"):
        recall_at_k(exact, exact, 6)
    with pytest.raises(IndexUsageError, match="integer"):
        recall_at_k(exact.float(), exact, 2)
