"""Multiple-testing corrections (family-wise error rate) for p-values.

Given ``m`` p-values from one family of tests (in :func:`gpukit.compare`:
every system against the baseline, for one measure):

* Bonferroni: ``p_adj_i = min(1, m * p_i)``.
* Holm (1979) step-down: with ``p_(1) <= ... <= p_(m)`` sorted ascending,
  ``p_adj_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))`` -- uniformly more
  powerful than Bonferroni with the same FWER guarantee.

A p-value is significant at level ``alpha`` when ``p_adj <= alpha``.
"""
from __future__ import annotations

from typing import Callable

import torch

from gpukit.stats._common import ArrayLike, StatsError, as_float64


def _validated(p_values: ArrayLike) -> torch.Tensor:
    p = as_float64(p_values).cpu()
    if p.ndim != 1:
        raise StatsError(f"p-values must be a 1-D family, got shape {tuple(p.shape)}")
    if bool(torch.isnan(p).any()) or bool(((p < 0) | (p > 1)).any()):
        raise StatsError("p-values must lie in [0, 1] (no NaN)")
    return p


def bonferroni(p_values: ArrayLike) -> torch.Tensor:
    """Bonferroni-adjusted p-values, ``min(1, m * p)``, in input order."""
    p = _validated(p_values)
    return (p * p.numel()).clamp(max=1.0)


def holm(p_values: ArrayLike) -> torch.Tensor:
    """Holm step-down adjusted p-values, in input order (ties keep input order)."""
    p = _validated(p_values)
    m = p.numel()
    if m == 0:
        return p
    sorted_p, order = torch.sort(p, stable=True)
    multipliers = torch.arange(m, 0, -1, dtype=torch.float64)  # m - j + 1 for j = 1..m
    # The running max makes adjusted p-values monotone in the sorted order.
    adjusted_sorted = torch.cummax(sorted_p * multipliers, dim=0).values.clamp(max=1.0)
    return torch.empty_like(p).scatter_(0, order, adjusted_sorted)


CORRECTIONS: dict[str, Callable[[ArrayLike], torch.Tensor]] = {
    "holm": holm,
    "bonferroni": bonferroni,
}


def adjust(p_values: ArrayLike, method: str | None) -> torch.Tensor:
    """Apply the correction named ``method`` (``"holm"``, ``"bonferroni"``,
    ``None``/``"none"`` for raw p-values)."""
    if method is None or method == "none":
        return _validated(p_values).clone()
    try:
        return CORRECTIONS[method](p_values)
    except KeyError:
        raise StatsError(f"unknown correction {method!r}; choose holm, bonferroni or none") from None
