"""Paired t-test and Wilcoxon signed-rank test against scipy (to 1e-10)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

scipy_stats = pytest.importorskip("scipy.stats")

from gpukit.stats import StatsError, paired_t_test, wilcoxon_signed_rank  # noqa: E402

TOL = 1e-10


def _cases() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Continuous data, heavy ties (rounded scores) and exact zeros, around the
    sizes where scipy's method='auto' switches path (13/14 and 50/51).

    Q = 11..13 with ties is left to the dispatch test below: scipy's own
    permutation path takes seconds there (same code path as Q = 10)."""
    rng = np.random.default_rng(20240)
    cases = []
    for q in (3, 8, 10, 14, 30, 50, 51, 200):
        a, b = rng.random(q), rng.random(q)
        cases.append((f"continuous-{q}", a, b))
        cases.append((f"rounded-{q}", np.round(a, 1), np.round(b, 1)))
        with_zeros = a.copy()
        with_zeros[: q // 3] = b[: q // 3]
        cases.append((f"zeros-{q}", with_zeros, b))
    return cases


CASES = _cases()


def _scipy(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on degenerate inputs; values are compared
        return fn(*args, **kwargs)


@pytest.mark.parametrize("name,a,b", CASES, ids=[c[0] for c in CASES])
def test_t_test_matches_scipy(name, a, b):
    ours = paired_t_test(torch.from_numpy(a), torch.from_numpy(b))
    ref = _scipy(scipy_stats.ttest_rel, a, b)
    assert ours.df == len(a) - 1
    np.testing.assert_allclose(float(ours.p_value), ref.pvalue, rtol=0, atol=TOL)
    np.testing.assert_allclose(float(ours.statistic), ref.statistic, rtol=TOL)


@pytest.mark.parametrize("name,a,b", CASES, ids=[c[0] for c in CASES])
def test_wilcoxon_matches_scipy_defaults(name, a, b):
    ours = wilcoxon_signed_rank(a, b)
    ref = _scipy(scipy_stats.wilcoxon, a, b)
    np.testing.assert_allclose(float(ours.p_value), ref.pvalue, rtol=0, atol=TOL)
    np.testing.assert_allclose(float(ours.statistic), ref.statistic, rtol=0, atol=TOL)


def test_wilcoxon_cases_cover_every_auto_path():
    methods = {wilcoxon_signed_rank(a, b).methods[0] for _, a, b in CASES}
    assert methods == {"exact", "permutation", "asymptotic"}


def test_wilcoxon_auto_dispatch_at_scipy_boundaries():
    rng = np.random.default_rng(3)
    tied = {q: (np.round(rng.random(q), 1), np.round(rng.random(q), 1)) for q in (13, 14)}
    assert wilcoxon_signed_rank(*tied[13]).methods == ("permutation",)
    assert wilcoxon_signed_rank(*tied[14]).methods == ("asymptotic",)
    assert wilcoxon_signed_rank(rng.random(50), rng.random(50)).methods == ("exact",)
    assert wilcoxon_signed_rank(rng.random(51), rng.random(51)).methods == ("asymptotic",)


@pytest.mark.parametrize("method", ["exact", "asymptotic"])
@pytest.mark.parametrize("a,b", [pytest.param(a, b, id=name) for name, a, b in CASES if len(a) <= 50])
def test_wilcoxon_forced_method_matches_scipy(method, a, b):
    ours = wilcoxon_signed_rank(a, b, method=method)
    ref = _scipy(scipy_stats.wilcoxon, a, b, method=method)
    np.testing.assert_allclose(float(ours.p_value), ref.pvalue, rtol=0, atol=TOL)


def test_batched_rows_equal_row_by_row_scipy():
    rng = np.random.default_rng(7)
    a = np.round(rng.random((6, 40)), 2)
    b = np.round(rng.random(40), 2)
    t = paired_t_test(a, b)
    w = wilcoxon_signed_rank(a, b)
    assert t.p_value.shape == (6,) and w.p_value.shape == (6,)
    for row in range(6):
        np.testing.assert_allclose(float(t.p_value[row]), scipy_stats.ttest_rel(a[row], b).pvalue, rtol=0, atol=TOL)
        reference = _scipy(scipy_stats.wilcoxon, a[row], b).pvalue
        np.testing.assert_allclose(float(w.p_value[row]), reference, rtol=0, atol=TOL)


@pytest.mark.parametrize("q", [5, 20])
def test_all_zero_differences_follow_scipy(q):
    a = np.full(q, 0.5)
    ours = wilcoxon_signed_rank(a, a)
    ref = _scipy(scipy_stats.wilcoxon, a, a)
    assert np.isnan(float(ours.p_value)) == np.isnan(ref.pvalue)
    if not np.isnan(ref.pvalue):
        assert float(ours.p_value) == pytest.approx(ref.pvalue)
    t = paired_t_test(a, a)
    assert np.isnan(float(t.p_value)) and np.isnan(_scipy(scipy_stats.ttest_rel, a, a).pvalue)


def test_constant_nonzero_difference_is_infinitely_significant():
    b = np.arange(10) * 0.125  # exact binary fractions: the difference is exactly constant
    ours = paired_t_test(b + 0.25, b)
    assert float(ours.p_value) == 0.0 and float(ours.statistic) == float("inf")


def test_inputs_are_validated():
    with pytest.raises(StatsError):
        paired_t_test([0.1, float("nan"), 0.3], [0.1, 0.2, 0.3])
    with pytest.raises(StatsError):
        paired_t_test([0.1, 0.2], [0.1, 0.2, 0.3])
    with pytest.raises(StatsError):
        paired_t_test([0.1], [0.2])  # one query: no variance
    with pytest.raises(StatsError):
        wilcoxon_signed_rank([0.1, 0.2], [0.2, 0.1], method="pratt")
