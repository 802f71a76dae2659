"""Statistical comparison of retrieval systems on per-query scores.

Layer 1 -- pure batched kernels on ``(Q,)`` / ``(S, Q)`` score tensors:

* :func:`paired_randomization_test` (sign flips; Monte Carlo or ``exact=True``),
* :func:`paired_bootstrap` (percentile CI and shifted-bootstrap p-value),
* :func:`paired_t_test`, :func:`wilcoxon_signed_rank` (agree with scipy),
* :func:`holm`, :func:`bonferroni` corrections,
* :func:`risk_reward`, :func:`urisk`, :func:`trisk`, :func:`wins_ties_losses`,
* :func:`tukey_hsd` (all pairs, as statsmodels' ``pairwise_tukeyhsd``) on the
  :func:`studentized_range_cdf` / ``_sf`` / ``_ppf`` written here in torch.

Layer 2 -- :func:`compare` (qrels + runs) and :func:`compare_per_query`
(score tensors) return a :class:`ComparisonTable`; :func:`plot_differences`
draws it; :meth:`ComparisonTable.winners_losers` lists each system's largest
per-query gains and losses. :func:`compare_all_pairs` and
:func:`all_pairs_per_query` return a :class:`TukeyTable`. Resampling is seeded on the CPU so results are identical on every
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
from gpukit.stats.parametric import (
    TTestResult,
    WilcoxonResult,
    paired_t_test,
    wilcoxon_signed_rank,
)
from gpukit.stats.plot import plot_differences
from gpukit.stats.resampling import (
    BootstrapResult,
    RandomizationResult,
    paired_bootstrap,
    paired_randomization_test,
)
from gpukit.stats.risk import RiskResult, risk_reward, trisk, urisk, wins_ties_losses
from gpukit.stats.studentized_range import (
    studentized_range_cdf,
    studentized_range_ppf,
    studentized_range_sf,
)
from gpukit.stats.tukey import (
    TukeyHSDResult,
    TukeyRow,
    TukeyTable,
    all_pairs_per_query,
    compare_all_pairs,
    tukey_hsd,
)
from gpukit.stats.winners import QueryExtremes, WinnersLosers, winners_losers

__all__ = [
    "TESTS",
    "BootstrapResult",
    "ComparisonRow",
    "ComparisonSettings",
    "ComparisonTable",
    "QueryExtremes",
    "RandomizationResult",
    "RiskResult",
    "StatsError",
    "TTestResult",
    "TukeyHSDResult",
    "TukeyRow",
    "TukeyTable",
    "WilcoxonResult",
    "WinnersLosers",
    "adjust",
    "all_pairs_per_query",
    "bonferroni",
    "compare",
    "compare_all_pairs",
    "compare_per_query",
    "holm",
    "paired_bootstrap",
    "paired_randomization_test",
    "paired_t_test",
    "plot_differences",
    "risk_reward",
    "studentized_range_cdf",
    "studentized_range_ppf",
    "studentized_range_sf",
    "trisk",
    "tukey_hsd",
    "urisk",
    "wilcoxon_signed_rank",
    "winners_losers",
    "wins_ties_losses",
]
