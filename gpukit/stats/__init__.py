"""Statistical comparison of retrieval systems on per-query scores.

Layer 1 -- pure batched kernels on ``(Q,)`` / ``(S, Q)`` score tensors:

* :func:`paired_randomization_test` (sign flips; Monte Carlo or ``exact=True``),
* :func:`paired_bootstrap` (percentile CI and shifted-bootstrap p-value),
* :func:`paired_t_test`, :func:`wilcoxon_signed_rank` (agree with scipy),
* :func:`holm`, :func:`bonferroni` corrections,
* :func:`risk_reward`, :func:`urisk`, :func:`trisk`, :func:`wins_ties_losses`.

Layer 2 -- :func:`compare` (qrels + runs) and :func:`compare_per_query`
(score tensors) return a :class:`ComparisonTable`; :func:`plot_differences`
draws it. Resampling is seeded on the CPU so results are identical on every
device. Conventions are documented in ``docs/statistics.md``.
"""
from gpukit.stats._common import StatsError
from gpukit.stats.compare import (
    TESTS,
    ComparisonRow,
    ComparisonSettings,
    ComparisonTable,
    compare,
    compare_per_query,
)
from gpukit.stats.corrections import adjust, bonferroni, holm
from gpukit.stats.parametric import TTestResult, WilcoxonResult, paired_t_test, wilcoxon_signed_rank
from gpukit.stats.plot import plot_differences
from gpukit.stats.resampling import (
    BootstrapResult,
    RandomizationResult,
    paired_bootstrap,
    paired_randomization_test,
)
from gpukit.stats.risk import RiskResult, risk_reward, trisk, urisk, wins_ties_losses

__all__ = [
    "TESTS",
    "BootstrapResult",
    "ComparisonRow",
    "ComparisonSettings",
    "ComparisonTable",
    "RandomizationResult",
    "RiskResult",
    "StatsError",
    "TTestResult",
    "WilcoxonResult",
    "adjust",
    "bonferroni",
    "compare",
    "compare_per_query",
    "holm",
    "paired_bootstrap",
    "paired_randomization_test",
    "paired_t_test",
    "plot_differences",
    "risk_reward",
    "trisk",
    "urisk",
    "wilcoxon_signed_rank",
    "wins_ties_losses",
]
