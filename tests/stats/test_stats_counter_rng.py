"""The bootstrap's counter-based draws: equal to a plain-Python implementation
of the same hash, uniform and independent enough for resampling, and drawn
without torch's generator (so CPU and CUDA give the same numbers)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from counter_rng_reference import bootstrap_index, bootstrap_indices, word

from gpukit.stats import StatsError, paired_bootstrap, paired_randomization_test
from gpukit.stats.resampling import bootstrap_draws, counter_words

SEEDS = [0, 1, 12345, -1, -(2**63), 2**64 - 1, 2**32, 2**32 + 1]


@pytest.mark.parametrize("seed", SEEDS)
def test_words_equal_plain_python(seed):
    start, rows, n = 999_990, 12, 37  # a window deep in the stream
    got = counter_words(seed, start, rows, n, torch.device("cpu"))
    assert got.dtype == torch.int64
    expected = [[word(seed, start + r, i) for i in range(n)] for r in range(rows)]
    assert got.tolist() == expected


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 2**31 - 1])
def test_indices_equal_plain_python_and_stay_in_range(n):
    seed, start, rows, width = 7, 3, 5, 9
    got = bootstrap_draws(seed, start, rows, n, torch.device("cpu"), width=width)
    expected = [[bootstrap_index(seed, start + r, i, n) for i in range(width)] for r in range(rows)]
    assert got.tolist() == expected
    assert int(got.min()) >= 0 and int(got.max()) < n


def test_extreme_words_do_not_overflow():
    # Largest 32-bit inputs: the int64 products must not wrap (compare with Python).
    from counter_rng_reference import mix32 as python_mix32

    from gpukit.stats.resampling import mix32

    values = [0, 1, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1]
    assert mix32(torch.tensor(values, dtype=torch.int64)).tolist() == [python_mix32(v) for v in values]


def test_seeds_give_different_streams():
    streams = {tuple(bootstrap_draws(s, 0, 4, 50, torch.device("cpu")).flatten().tolist()) for s in SEEDS}
    # -1 and 2**64 - 1 are the same seed mod 2**64 (as for torch.Generator.manual_seed).
    assert len(streams) == len(SEEDS) - 1


def test_draws_are_uniform_and_pairwise_independent():
    chi2 = pytest.importorskip("scipy.stats").chisquare
    n = 7
    draws = bootstrap_draws(3, 0, 20_000, n, torch.device("cpu")).numpy()  # (20000, 7)
    # Marginal: every value equally likely.
    assert chi2(np.bincount(draws.ravel(), minlength=n)).pvalue > 1e-4
    # Neighbouring positions in a resample, and the same position in neighbouring resamples.
    for first, second in ((draws[:, :-1], draws[:, 1:]), (draws[:-1], draws[1:])):
        pairs = np.bincount((first * n + second).ravel(), minlength=n * n)
        assert chi2(pairs).pvalue > 1e-4


def test_bootstrap_resamples_are_the_documented_draws():
    rng = np.random.default_rng(0)
    d = torch.from_numpy(rng.random(11) - 0.5)
    result = paired_bootstrap(d, torch.zeros(11), n_resamples=40, seed=5, confidence=0.5)
    idx = np.array(bootstrap_indices(5, 40, 11))
    means = np.sort(d.numpy()[idx].mean(axis=1))
    low, high = np.percentile(means, [25, 75])
    assert float(result.ci_low) == pytest.approx(low, abs=1e-15)
    assert float(result.ci_high) == pytest.approx(high, abs=1e-15)


@pytest.mark.parametrize("kernel", [paired_bootstrap, paired_randomization_test])
def test_resampling_does_not_use_torch_generators(monkeypatch, kernel):
    def refuse(*args, **kwargs):
        raise AssertionError("the resampling drew from torch's generator")

    monkeypatch.setattr(torch, "randint", refuse)
    a = torch.linspace(0, 1, 30, dtype=torch.float64)
    kernel(a, a.flip(0), n_resamples=300, seed=1, chunk_size=64)


def test_too_many_queries_is_a_stats_error():
    with pytest.raises(StatsError, match="2\\*\\*31"):
        bootstrap_draws(0, 0, 1, 2**31, torch.device("cpu"), width=1)


def test_draws_on_the_device_path_copy_nothing_from_the_host():
    """On the meta device (the non-CPU path, no data): no host-to-device copy,
    no sync, and a fixed number of ops whatever the chunk's size."""
    from op_budget import DeviceOpCounter

    counts = []
    for rows, n in ((4, 10), (512, 10_000)):
        with DeviceOpCounter() as count:
            out = bootstrap_draws(11, 1000, rows, n, torch.device("meta"))
        assert out.shape == (rows, n) and out.device.type == "meta"
        assert count.host_to_device == 0 and count.syncs == 0, count.ops
        counts.append(count.total)
    assert counts[0] == counts[1] and counts[0] <= 40, counts


def test_sign_flips_equal_plain_python():
    from counter_rng_reference import sign_bits

    from gpukit.stats.resampling import sign_flips

    for seed, n in ((0, 1), (9, 33), (2**64 - 5, 70)):
        got = sign_flips(seed, 0, 6, n, torch.device("cpu"))
        assert got.dtype == torch.float64 and got.tolist() == [[float(b) for b in row] for row in sign_bits(seed, 6, n)]
    # A window deep in the stream is the same window of the whole stream.
    assert torch.equal(sign_flips(4, 500, 3, 40, torch.device("cpu")), sign_flips(4, 0, 503, 40, torch.device("cpu"))[500:])


def test_sign_bits_are_fair_and_pairwise_independent():
    stats = pytest.importorskip("scipy.stats")
    chi2 = stats.chisquare
    from gpukit.stats.resampling import sign_flips

    bits = sign_flips(8, 0, 4000, 64, torch.device("cpu")).to(torch.int64).numpy()  # (4000, 64): 2 words a row
    assert chi2(np.bincount(bits.ravel(), minlength=2)).pvalue > 1e-4
    # Every bit position is fair: sum of 64 squared binomial z-scores ~ chi2(64).
    n = bits.shape[0]
    z2 = (((bits.sum(axis=0) - n / 2) ** 2) / (n / 4)).sum()
    assert stats.chi2.sf(z2, df=64) > 1e-4
    # Neighbouring bits, the two words of a row, and neighbouring resamples are independent.
    for first, second in ((bits[:, :-1], bits[:, 1:]), (bits[:, :32], bits[:, 32:]), (bits[:-1], bits[1:])):
        assert chi2(np.bincount((2 * first + second).ravel(), minlength=4)).pvalue > 1e-4


def test_sign_flips_on_the_device_path_copy_nothing_from_the_host():
    from op_budget import DeviceOpCounter

    from gpukit.stats.resampling import sign_flips

    with DeviceOpCounter() as count:
        out = sign_flips(3, 0, 256, 5000, torch.device("meta"))
    assert out.shape == (256, 5000) and count.host_to_device == 0 and count.syncs == 0, count.ops

