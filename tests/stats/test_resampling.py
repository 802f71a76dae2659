"""Randomization and bootstrap kernels: exactness, determinism, stream protocol."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from counter_rng_reference import bootstrap_indices, sign_bits

from gpukit.stats import StatsError, paired_bootstrap, paired_randomization_test


def _scores(rows: int, q: int, seed: int, decimals: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-query scores in [0, 1]; rounding creates ties and zero differences as IR metrics do."""
    rng = np.random.default_rng(seed)
    a, b = rng.random((rows, q)), rng.random(q)
    if decimals is not None:
        a, b = np.round(a, decimals), np.round(b, decimals)
    return torch.from_numpy(a), torch.from_numpy(b)


def _python_exact_p(d: list[float]) -> float:
    """Plain-Python enumeration of all 2**Q sign vectors (float sums, 1e-9 tie tolerance)."""
    observed = abs(sum(d))
    hits = sum(
        abs(sum(s * x for s, x in zip(signs, d))) >= observed - 1e-9
        for signs in itertools.product((1.0, -1.0), repeat=len(d))
    )
    return hits / 2 ** len(d)


@pytest.mark.parametrize("decimals", [None, 1])
def test_exact_enumeration_matches_plain_python(decimals):
    a, b = _scores(3, 10, seed=1, decimals=decimals)
    result = paired_randomization_test(a, b, exact=True)
    assert result.exact and result.n_resamples == 2**10
    for row in range(3):
        expected = _python_exact_p((a[row] - b).tolist())
        assert float(result.p_value[row]) == pytest.approx(expected, abs=1e-15)


def test_monte_carlo_is_close_to_exact():
    a, b = _scores(4, 10, seed=2, decimals=2)
    exact = paired_randomization_test(a, b, exact=True).p_value
    n = 20000
    mc = paired_randomization_test(a, b, n_resamples=n, seed=11).p_value
    for p_exact, p_mc in zip(exact.tolist(), mc.tolist()):
        # Five binomial standard errors plus the +1 convention's bias.
        assert abs(p_mc - p_exact) <= 5 * math.sqrt(p_exact * (1 - p_exact) / n) + 2 / n


def _reference_sign_counts(d: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Counts from the documented sign stream (plain-Python hash in
    counter_rng_reference): bit q % 32 of word q // 32 flips query q."""
    signs = 1.0 - 2.0 * np.array(sign_bits(seed, n, d.shape[-1]), dtype=np.float64)
    observed = np.abs(d.sum(axis=-1))
    permuted = np.abs(signs @ d.T)
    return (permuted >= observed - 1e-9).sum(axis=0)


def test_monte_carlo_counts_follow_the_documented_stream():
    a, b = _scores(3, 37, seed=3)
    n, seed = 1000, 5
    result = paired_randomization_test(a, b, n_resamples=n, seed=seed)
    expected = _reference_sign_counts((a - b).numpy(), n, seed)
    assert result.count.tolist() == expected.tolist()
    np.testing.assert_array_equal(result.p_value.numpy(), (expected + 1) / (n + 1))


@pytest.mark.parametrize("chunk_size", [1, 7, 256, 999])
def test_randomization_independent_of_chunk_size(chunk_size):
    a, b = _scores(5, 100, seed=4, decimals=2)
    # 600 resamples: chunks of every size end mid-stream.
    reference = paired_randomization_test(a, b, n_resamples=600, seed=9)
    chunked = paired_randomization_test(a, b, n_resamples=600, seed=9, chunk_size=chunk_size)
    assert torch.equal(reference.count, chunked.count)
    assert torch.equal(reference.p_value, chunked.p_value)


def test_same_seed_same_result_different_seed_different_stream():
    a, b = _scores(5, 300, seed=5)
    first = paired_randomization_test(a, b, n_resamples=2000, seed=1)
    again = paired_randomization_test(a, b, n_resamples=2000, seed=1)
    other = paired_randomization_test(a, b, n_resamples=2000, seed=2)
    assert torch.equal(first.p_value, again.p_value)
    assert not torch.equal(first.count, other.count)
    boot = paired_bootstrap(a, b, n_resamples=2000, seed=1)
    boot_again = paired_bootstrap(a, b, n_resamples=2000, seed=1)
    for field in ("ci_low", "ci_high", "p_value"):
        assert torch.equal(getattr(boot, field), getattr(boot_again, field))


def test_randomization_is_symmetric_and_ties_are_exact():
    a, b = _scores(3, 50, seed=6, decimals=1)
    forward = paired_randomization_test(a, b, n_resamples=2000, seed=3)
    backward = paired_randomization_test(b.expand_as(a), a, n_resamples=2000, seed=3)
    assert torch.equal(forward.count, backward.count)
    same = paired_randomization_test(b, b, n_resamples=500, seed=0)
    assert float(same.p_value) == 1.0  # every sign vector ties a zero difference


def _reference_bootstrap(d: np.ndarray, n: int, seed: int, confidence: float):
    """Percentile CI and shifted p from the documented counter-based draws
    (plain-Python hash in counter_rng_reference), in numpy."""
    q = d.shape[-1]
    idx = np.array(bootstrap_indices(seed, n, q))
    means = d[:, idx].mean(axis=-1)  # (S, n)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail], axis=-1)
    observed = d.mean(axis=-1, keepdims=True)
    count = (np.abs(means - observed) >= np.abs(observed) - 1e-12).sum(axis=-1)
    return low, high, (count + 1) / (n + 1)


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_bootstrap_matches_numpy_reference(confidence):
    a, b = _scores(4, 60, seed=7)
    n, seed = 1500, 21
    result = paired_bootstrap(a, b, n_resamples=n, seed=seed, confidence=confidence, chunk_size=100)
    low, high, p = _reference_bootstrap((a - b).numpy(), n, seed, confidence)
    np.testing.assert_allclose(result.ci_low.numpy(), low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.ci_high.numpy(), high, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(result.p_value.numpy(), p)
    assert (result.ci_low <= result.mean_difference).all() and (result.mean_difference <= result.ci_high).all()


@pytest.mark.parametrize("chunk_size", [1, 33, 2000])
def test_bootstrap_independent_of_chunk_size(chunk_size):
    a, b = _scores(3, 80, seed=8, decimals=2)
    reference = paired_bootstrap(a, b, n_resamples=700, seed=4)
    chunked = paired_bootstrap(a, b, n_resamples=700, seed=4, chunk_size=chunk_size)
    for field in ("ci_low", "ci_high", "p_value", "count"):
        assert torch.equal(getattr(reference, field), getattr(chunked, field))


def test_one_dimensional_inputs_give_scalars():
    a, b = _scores(1, 20, seed=9)
    r = paired_randomization_test(a[0], b, n_resamples=100)
    boot = paired_bootstrap(a[0].tolist(), b.tolist(), n_resamples=100)
    assert r.p_value.shape == () and boot.ci_low.shape == ()
    assert float(r.mean_difference) == pytest.approx(float((a[0] - b).mean()))


def test_invalid_inputs_raise_stats_errors():
    a, b = _scores(1, 40, seed=10)
    with pytest.raises(StatsError):
        paired_randomization_test(a, b, exact=True)  # 2**40 sign vectors
    with pytest.raises(StatsError):
        paired_randomization_test(a, b, n_resamples=0)
    with pytest.raises(StatsError):
        paired_bootstrap(a, b, confidence=1.5)
    with pytest.raises(StatsError):
        paired_bootstrap(a, b[:-1])
    nan = a.clone()
    nan[0, 3] = float("nan")
    with pytest.raises(StatsError):
        paired_randomization_test(nan, b)
