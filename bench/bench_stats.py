"""pytest-benchmark: batched significance tests.

Run with ``pytest bench/bench_stats.py`` (add ``--benchmark-only`` to skip
nothing else). Workload of the issue: 10k resamples x 5k queries x 5 systems,
each compared with one baseline (a ``(5, 5000)`` score matrix against a
``(5000,)`` baseline), on the CPU and, when present, on CUDA.
"""
from __future__ import annotations

import pytest
import torch

from gpukit.stats import ComparisonSettings, compare_per_query, paired_bootstrap, paired_randomization_test

N_RESAMPLES, N_QUERIES, N_SYSTEMS = 10_000, 5_000, 5

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"))]


@pytest.fixture(scope="module")
def scores() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    # Scores on a 1/100 grid, like rounded metric values: ties and zero differences occur.
    systems = torch.randint(0, 101, (N_SYSTEMS, N_QUERIES), generator=g).double() / 100
    baseline = torch.randint(0, 101, (N_QUERIES,), generator=g).double() / 100
    return systems, baseline


def _on(device: str, *tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.to(device) for t in tensors]


@pytest.mark.parametrize("device", DEVICES)
def test_randomization_10k_resamples_5k_queries_5_systems(benchmark, scores, device):
    a, b = _on(device, *scores)
    result = benchmark.pedantic(paired_randomization_test, args=(a, b, N_RESAMPLES, 0), rounds=3, iterations=1)
    assert result.p_value.shape == (N_SYSTEMS,)


@pytest.mark.parametrize("device", DEVICES)
def test_bootstrap_10k_resamples_5k_queries_5_systems(benchmark, scores, device):
    a, b = _on(device, *scores)
    result = benchmark.pedantic(paired_bootstrap, args=(a, b, N_RESAMPLES, 0), rounds=3, iterations=1)
    assert result.ci_low.shape == (N_SYSTEMS,)


@pytest.mark.parametrize("device", DEVICES)
def test_comparison_table_randomization(benchmark, scores, device):
    """Everything compare() does after evaluation: randomization test,
    bootstrap CI, effect sizes, risk and the corrected table."""
    a, b = scores
    per_query = {"baseline": {"nDCG@10": b}, **{f"system{i}": {"nDCG@10": a[i]} for i in range(N_SYSTEMS)}}
    table = benchmark.pedantic(
        compare_per_query, args=(per_query, None, ComparisonSettings(n_resamples=N_RESAMPLES)),
        kwargs={"device": device},
        rounds=2, iterations=1,
    )
    assert len(table.rows) == N_SYSTEMS + 1
