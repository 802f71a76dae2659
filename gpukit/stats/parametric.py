"""Classical paired tests: Student's t-test and the Wilcoxon signed-rank test.

Both are batched over ``S`` comparisons with tensor ops; only the final
distribution functions (Student t CDF, normal CDF) are evaluated on the host
with :mod:`scipy.special` (optional extra ``gpukit[stats]``). Results agree
with ``scipy.stats.ttest_rel`` and ``scipy.stats.wilcoxon`` (default
options) applied row by row, to about 1e-12.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from gpukit.stats._common import (
    ArrayLike,
    StatsError,
    paired_differences,
    scipy_special,
    squeeze_like,
    t_statistic,
)

#: scipy's ``method="auto"`` uses the exact null distribution up to this Q.
_EXACT_MAX_QUERIES = 50
#: ... and, with ties or zeros, enumerates all sign flips up to this Q
#: (2**13 <= 9999, scipy's default number of permutation resamples).
_PERMUTATION_MAX_QUERIES = 13


@dataclass(frozen=True)
class TTestResult:
    """Outcome of :func:`paired_t_test` (float64 CPU tensors, ``(S,)`` or ``()``)."""

    statistic: torch.Tensor  #: t = mean(d) / (sd(d) / sqrt(Q)), sd with ddof=1
    p_value: torch.Tensor  #: two-sided, 2 * P(T_{Q-1} >= |t|)
    df: int  #: Q - 1
    mean_difference: torch.Tensor


@dataclass(frozen=True)
class WilcoxonResult:
    """Outcome of :func:`wilcoxon_signed_rank` (CPU tensors, ``(S,)`` or ``()``)."""

    statistic: torch.Tensor  #: min(R+, R-), as scipy reports it
    p_value: torch.Tensor
    r_plus: torch.Tensor  #: rank sum of positive differences
    r_minus: torch.Tensor  #: rank sum of negative differences
    z: torch.Tensor  #: normal-approximation z of R+ (NaN for rows not using it)
    n_nonzero: torch.Tensor  #: differences left after dropping zeros (int64)
    methods: tuple[str, ...]  #: per row: "exact", "permutation" or "asymptotic"


def paired_t_test(a: ArrayLike, b: ArrayLike) -> TTestResult:
    """Two-sided paired Student t-test on ``d = a - b``.

    ``t = mean(d) / sqrt(var(d, ddof=1) / Q)`` with ``Q - 1`` degrees of
    freedom; ``p = 2 * stdtr(Q - 1, -|t|)``. As in scipy, all-zero
    differences give ``t = p = NaN`` and a constant non-zero difference
    gives ``t = +-inf``, ``p = 0``.
    """
    d = paired_differences(a, b, min_queries=2).cpu()
    n = d.shape[-1]
    mean, _, t = t_statistic(d)
    special = scipy_special()
    p = torch.from_numpy(2.0 * special.stdtr(float(n - 1), -t.abs().numpy()))
    return TTestResult(
        statistic=squeeze_like(t, a, b),
        p_value=squeeze_like(p, a, b),
        df=n - 1,
        mean_difference=squeeze_like(mean, a, b),
    )


def _average_ranks(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Row-wise ranks (1-based, ties averaged) and each element's tie-group size."""
    sorted_values, order = torch.sort(values, dim=-1, stable=True)
    n = values.shape[-1]
    positions = torch.arange(n, dtype=torch.float64).expand_as(sorted_values)
    starts = torch.ones_like(sorted_values, dtype=torch.bool)
    starts[:, 1:] = sorted_values[:, 1:] != sorted_values[:, :-1]
    group = starts.long().cumsum(dim=-1) - 1
    group_size = torch.zeros_like(sorted_values).scatter_add_(-1, group, torch.ones_like(sorted_values))
    size = group_size.gather(-1, group)
    first = torch.where(starts, positions, torch.zeros_like(positions)).cummax(dim=-1).values
    # A group occupying 0-based positions first..first+size-1 has mean rank first + (size+1)/2.
    ranks_sorted = first + (size + 1.0) / 2.0
    ranks = torch.empty_like(ranks_sorted).scatter_(-1, order, ranks_sorted)
    sizes = torch.empty_like(size).scatter_(-1, order, size)
    return ranks, sizes


@functools.lru_cache(maxsize=64)
def _signed_rank_counts(n: int) -> tuple[int, ...]:
    """Number of subsets of {1..n} with each rank sum 0..n(n+1)/2 (exact null of R+)."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for k in range(1, n + 1):
        for total in range(len(counts) - 1, k - 1, -1):
            counts[total] += counts[total - k]
    return tuple(counts)


def _exact_p(r_plus: float, n: int) -> float:
    """Two-sided exact p: 2 * min(P(R+ >= floor r), P(R+ <= ceil r)), capped at 1.

    Rounding toward the tails is scipy's conservative choice for
    non-integral statistics (ties with ``method="exact"``).
    """
    counts = _signed_rank_counts(n)
    total = 1 << n
    upper = sum(counts[math.floor(r_plus):])
    lower = sum(counts[: math.ceil(r_plus) + 1])
    return min(1.0, 2.0 * min(upper, lower) / total)


def _permutation_p(ranks: torch.Tensor, d: torch.Tensor, r_plus: float) -> float:
    """Two-sided p of R+ over all 2**Q sign flips (scipy's small-sample path with ties/zeros).

    Flipping d_i moves rank_i between R+ and R- (zeros never count), so
    ``R+_perm = R+ + sum_i bit_i * rank_i * (1 - 2[d_i > 0]) * [d_i != 0]``.
    Scipy's relative tolerance ``100 * eps * |R+|`` decides ties.
    """
    n = d.shape[-1]
    positive = (d > 0).to(torch.float64)
    delta = ranks * (1.0 - 2.0 * positive) * (d != 0).to(torch.float64)
    codes = torch.arange(1 << n)
    bits = ((codes.unsqueeze(-1) >> torch.arange(n)) & 1).to(torch.float64)
    null = r_plus + bits @ delta
    gamma = abs(100.0 * torch.finfo(torch.float64).eps * r_plus)
    less = float((null <= r_plus + gamma).sum()) / (1 << n)
    greater = float((null >= r_plus - gamma).sum()) / (1 << n)
    return min(1.0, 2.0 * min(less, greater))


def wilcoxon_signed_rank(a: ArrayLike, b: ArrayLike, *, method: str = "auto") -> WilcoxonResult:
    """Two-sided Wilcoxon signed-rank test on ``d = a - b``, batched over rows.

    Matches ``scipy.stats.wilcoxon(a, b)`` with its defaults
    (``zero_method="wilcox"``: zero differences are dropped before ranking;
    ``correction=False``: no continuity correction; ``method="auto"``),
    applied to each row separately:

    * ``Q > 50``: normal approximation ``z = (R+ - n(n+1)/4) / se`` with
      ``se = sqrt((n(n+1)(2n+1) - sum_ties(t^3 - t)/2) / 24)`` over the
      ``n`` non-zero differences, ``p = 2 * Phi(-|z|)``;
    * no ties and no zeros: exact null distribution of ``R+``;
    * ties or zeros and ``Q <= 13``: enumeration of all ``2**Q`` sign flips;
    * otherwise the normal approximation.

    ``method="exact"`` or ``"asymptotic"`` forces one path for every row.
    Ranks of ``|d|`` are averaged over exact float ties, as scipy does.
    """
    if method not in ("auto", "exact", "asymptotic"):
        raise StatsError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}")
    d = paired_differences(a, b).cpu()
    q = d.shape[-1]
    nonzero = d != 0
    # Zeros rank last (as +inf) so the non-zero ranks are 1..n, then masked out.
    magnitude = torch.where(nonzero, d.abs(), torch.full_like(d, float("inf")))
    ranks, tie_sizes = _average_ranks(magnitude)
    ranks = ranks * nonzero
    r_plus = (ranks * (d > 0)).sum(dim=-1)
    r_minus = (ranks * (d < 0)).sum(dim=-1)
    n = nonzero.sum(dim=-1)
    nf = n.to(torch.float64)
    # Each element of a tie group of size t contributes t^2 - 1, i.e. t^3 - t per group.
    tie_term = ((tie_sizes**2 - 1.0) * nonzero).sum(dim=-1)
    has_ties = ((tie_sizes > 1) & nonzero).any(dim=-1)
    se = torch.sqrt((nf * (nf + 1) * (2 * nf + 1) - tie_term / 2.0) / 24.0)
    z = (r_plus - nf * (nf + 1) / 4.0) / se
    special = scipy_special()
    p_normal = 2.0 * special.ndtr(-z.abs().numpy())

    methods, p_values = [], []
    for row in range(d.shape[0]):
        row_method = method
        if method == "auto":
            if q > _EXACT_MAX_QUERIES:
                row_method = "asymptotic"
            elif not bool(has_ties[row]) and bool(nonzero[row].all()):
                row_method = "exact"
            elif q <= _PERMUTATION_MAX_QUERIES:
                row_method = "permutation"
            else:
                row_method = "asymptotic"
        if row_method == "exact":
            p_values.append(_exact_p(float(r_plus[row]), int(n[row])))
        elif row_method == "permutation":
            p_values.append(_permutation_p(ranks[row], d[row], float(r_plus[row])))
        else:
            p_values.append(float(p_normal[row]))
        methods.append(row_method)
    asymptotic = torch.tensor([m == "asymptotic" for m in methods])
    return WilcoxonResult(
        statistic=squeeze_like(torch.minimum(r_plus, r_minus), a, b),
        p_value=squeeze_like(torch.tensor(p_values, dtype=torch.float64), a, b),
        r_plus=squeeze_like(r_plus, a, b),
        r_minus=squeeze_like(r_minus, a, b),
        z=squeeze_like(torch.where(asymptotic, z, torch.full_like(z, float("nan"))), a, b),
        n_nonzero=squeeze_like(n, a, b),
        methods=tuple(methods),
    )
