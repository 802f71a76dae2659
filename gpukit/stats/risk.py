"""Risk-reward analysis of a system against a baseline.

With per-query differences ``d_i = a_i - b_i`` (system minus baseline) over
``c`` queries (Dinçer, Macdonald & Ounis, SIGIR 2014):

* wins / ties / losses: ``d_i > tol``, ``|d_i| <= tol``, ``d_i < -tol``;
* risk-adjusted differences ``r_i = d_i`` if ``d_i > 0`` else ``(1 + alpha) d_i``;
* ``URisk_alpha = mean(r) = (1/c) [sum_{d_i > 0} d_i - (1 + alpha) sum_{d_i < 0} |d_i|]``;
* ``TRisk_alpha = URisk_alpha / SE``, ``SE = s_r / sqrt(c)`` where ``s_r`` is the
  sample standard deviation of ``r`` (ddof = 1). TRisk is thus the one-sample
  t statistic of ``r``; ``TRisk < -2`` signals significant risk of harming
  queries relative to the baseline, ``TRisk > 2`` a significant gain.

``alpha = 0`` gives plain mean differences; larger alpha penalises losses
more (the paper uses 1, 5 and 10). Constant ``r`` gives ``TRisk = +-inf``
(or NaN when ``r`` is all zero), as for the t-test.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from gpukit.stats._common import ArrayLike, StatsError, paired_differences, squeeze_like, t_statistic

#: Differences with ``|d| <= tolerance`` count as ties: absorbs float noise
#: between mathematically equal scores without hiding real differences.
DEFAULT_TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class RiskResult:
    """Risk-reward summary, CPU tensors shaped ``(S,)`` or ``()``."""

    wins: torch.Tensor  #: int64
    ties: torch.Tensor  #: int64
    losses: torch.Tensor  #: int64
    urisk: torch.Tensor  #: float64
    trisk: torch.Tensor  #: float64
    alpha: float


def _risk_adjusted(d: torch.Tensor, alpha: float) -> torch.Tensor:
    if alpha < 0:
        raise StatsError(f"risk alpha must be >= 0, got {alpha}")
    return torch.where(d > 0, d, (1.0 + alpha) * d)


def wins_ties_losses(
    a: ArrayLike, b: ArrayLike, tolerance: float = DEFAULT_TIE_TOLERANCE
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Counts of queries where ``a`` beats, ties or loses to ``b`` (int64)."""
    d = paired_differences(a, b).cpu()
    wins = (d > tolerance).sum(dim=-1)
    losses = (d < -tolerance).sum(dim=-1)
    ties = d.shape[-1] - wins - losses
    return squeeze_like(wins, a, b), squeeze_like(ties, a, b), squeeze_like(losses, a, b)


def urisk(a: ArrayLike, b: ArrayLike, alpha: float = 1.0) -> torch.Tensor:
    """``URisk_alpha`` of ``a`` against baseline ``b`` (see module docstring)."""
    d = paired_differences(a, b).cpu()
    return squeeze_like(_risk_adjusted(d, alpha).mean(dim=-1), a, b)


def trisk(a: ArrayLike, b: ArrayLike, alpha: float = 1.0) -> torch.Tensor:
    """``TRisk_alpha = URisk_alpha / (s_r / sqrt(c))`` with ``s_r`` using ddof = 1."""
    d = paired_differences(a, b, min_queries=2).cpu()
    _, _, t = t_statistic(_risk_adjusted(d, alpha))
    return squeeze_like(t, a, b)


def risk_reward(
    a: ArrayLike, b: ArrayLike, alpha: float = 1.0, tolerance: float = DEFAULT_TIE_TOLERANCE
) -> RiskResult:
    """Wins/ties/losses, URisk and TRisk in one call."""
    wins, ties, losses = wins_ties_losses(a, b, tolerance)
    return RiskResult(wins, ties, losses, urisk(a, b, alpha), trisk(a, b, alpha), alpha)
