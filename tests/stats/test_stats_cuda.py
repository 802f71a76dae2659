"""Same seed, same numbers: CPU and CUDA results are bit-identical."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gpukit.stats import (
    ComparisonSettings,
    compare_per_query,
    paired_bootstrap,
    paired_randomization_test,
)

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _scores():
    rng = np.random.default_rng(0)
    # Rounded scores: many ties and zero differences, the hard case for exactness.
    return torch.from_numpy(np.round(rng.random((4, 3000)), 2)), torch.from_numpy(np.round(rng.random(3000), 2))


def test_randomization_cpu_equals_cuda():
    a, b = _scores()
    cpu = paired_randomization_test(a, b, n_resamples=5000, seed=1, device="cpu")
    gpu = paired_randomization_test(a.cuda(), b.cuda(), n_resamples=5000, seed=1, chunk_size=1234)
    assert torch.equal(cpu.count, gpu.count) and torch.equal(cpu.p_value, gpu.p_value)
    small_a, small_b = a[:, :16], b[:16]
    exact_cpu = paired_randomization_test(small_a, small_b, exact=True, device="cpu")
    exact_gpu = paired_randomization_test(small_a, small_b, exact=True, device="cuda")
    assert torch.equal(exact_cpu.p_value, exact_gpu.p_value)


def test_bootstrap_cpu_equals_cuda():
    a, b = _scores()
    cpu = paired_bootstrap(a, b, n_resamples=5000, seed=2, device="cpu")
    gpu = paired_bootstrap(a, b, n_resamples=5000, seed=2, device="cuda")
    for field in ("ci_low", "ci_high", "p_value", "count"):
        assert torch.equal(getattr(cpu, field), getattr(gpu, field))


def test_counter_based_draws_cpu_equal_cuda():
    from gpukit.stats.resampling import bootstrap_draws, sign_flips

    for draw in (bootstrap_draws, sign_flips):
        cpu = draw(3, 12_345, 64, 10_000, torch.device("cpu"))
        gpu = draw(3, 12_345, 64, 10_000, torch.device("cuda"))
        assert gpu.device.type == "cuda" and torch.equal(cpu, gpu.cpu())


def test_comparison_table_cpu_equals_cuda():
    a, b = _scores()
    scores = {"base": {"m": b}, **{f"s{i}": {"m": a[i]} for i in range(4)}}
    for test in ("randomization", "bootstrap"):
        settings = ComparisonSettings(test=test, n_resamples=3000, seed=5)
        cpu = compare_per_query(scores, settings=settings, device="cpu")
        gpu = compare_per_query(scores, settings=settings, device="cuda")
        assert cpu.to_dict() == gpu.to_dict()
