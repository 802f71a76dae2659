"""URisk / TRisk and wins/ties/losses against plain-Python references."""
from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from gpukit.stats import StatsError, risk_reward, trisk, urisk, wins_ties_losses


def urisk_reference(a: list[float], b: list[float], alpha: float) -> float:
    """Dinçer et al. (2014): (1/c) [sum of wins - (1 + alpha) * sum of losses]."""
    d = [x - y for x, y in zip(a, b)]
    wins = sum(x for x in d if x > 0)
    losses = sum(-x for x in d if x < 0)
    return (wins - (1 + alpha) * losses) / len(d)


def trisk_reference(a: list[float], b: list[float], alpha: float) -> float:
    """URisk over its standard error s_r / sqrt(c), s_r the sample sd of the risk-adjusted differences."""
    d = [x - y for x, y in zip(a, b)]
    r = [x if x > 0 else (1 + alpha) * x for x in d]
    return urisk_reference(a, b, alpha) / (statistics.stdev(r) / math.sqrt(len(r)))


def _data(seed: int, rows: int = 4, q: int = 30):
    rng = np.random.default_rng(seed)
    return np.round(rng.random((rows, q)), 1), np.round(rng.random(q), 1)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 5.0, 10.0])
def test_urisk_and_trisk_match_reference(alpha):
    a, b = _data(1)
    ours_u, ours_t = urisk(a, b, alpha), trisk(a, b, alpha)
    for row in range(a.shape[0]):
        assert float(ours_u[row]) == pytest.approx(urisk_reference(a[row].tolist(), b.tolist(), alpha), abs=1e-14)
        assert float(ours_t[row]) == pytest.approx(trisk_reference(a[row].tolist(), b.tolist(), alpha), rel=1e-12)


def test_trisk_is_the_t_statistic_of_risk_adjusted_differences():
    scipy_stats = pytest.importorskip("scipy.stats")
    a, b = _data(2, rows=1)
    d = a[0] - b
    r = np.where(d > 0, d, 2.0 * d)
    assert float(trisk(a[0], b, 1.0)) == pytest.approx(scipy_stats.ttest_1samp(r, 0.0).statistic, rel=1e-12)


def test_wins_ties_losses_match_reference():
    a, b = _data(3)
    wins, ties, losses = wins_ties_losses(a, b)
    for row in range(a.shape[0]):
        d = [x - y for x, y in zip(a[row].tolist(), b.tolist())]
        assert int(wins[row]) == sum(x > 1e-12 for x in d)
        assert int(losses[row]) == sum(x < -1e-12 for x in d)
        assert int(ties[row]) == sum(abs(x) <= 1e-12 for x in d)


def test_float_noise_counts_as_a_tie():
    # 0.3 - 0.1 and 0.2 differ by one ulp in float64: still a tie.
    wins, ties, losses = wins_ties_losses([0.3 - 0.1, 0.5], [0.2, 0.4])
    assert (int(wins), int(ties), int(losses)) == (1, 1, 0)


def test_risk_reward_bundles_everything():
    a, b = _data(4, rows=2)
    result = risk_reward(a, b, alpha=5.0)
    assert result.alpha == 5.0
    assert result.urisk.tolist() == urisk(a, b, 5.0).tolist()
    assert result.trisk.tolist() == trisk(a, b, 5.0).tolist()
    assert (result.wins + result.ties + result.losses).tolist() == [a.shape[1]] * 2


def test_negative_alpha_is_rejected():
    a, b = _data(5, rows=1)
    with pytest.raises(StatsError):
        urisk(a, b, alpha=-1.0)
