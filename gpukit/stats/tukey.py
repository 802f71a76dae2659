"""All-pairs comparison of ``k`` systems: Tukey's honestly significant difference (HSD).

Convention: ``statsmodels.stats.multicomp.pairwise_tukeyhsd``'s one-way
ANOVA. The ``Q`` per-query values of each system are treated as an
independent group (``k`` groups of ``Q``); **the pairing by query is
ignored**, so query difficulty counts as noise (the paired tests of
:func:`gpukit.stats.compare` remove it and are more powerful). With the
system means ``m_i`` and ``N = kQ`` values:

    MSE  = sum_i sum_q (x_iq - m_i)^2 / (N - k)      (pooled within-system variance)
    se   = sqrt(MSE / Q)                              (statsmodels: MSE (1/Q + 1/Q) / 2)
    q_ij = |m_j - m_i| / se,  df = N - k
    p_ij = P(R_{k,df} > q_ij)                         (studentized range; already adjusted)
    CI_ij = (m_j - m_i) -+ q_crit se,  q_crit = F^-1_{k,df}(1 - alpha)
    reject_ij = q_ij > q_crit

for every pair ``i < j`` in the given system order, the difference being
``m_j - m_i`` (statsmodels' ``meandiff = group2 - group1``). The p-values
and intervals hold simultaneously for all ``k(k-1)/2`` pairs (family-wise
error ``alpha``): no further correction applies. A zero difference gives
``q = 0`` (p = 1) even when MSE = 0. The distribution is
:mod:`gpukit.stats.studentized_range` (no scipy needed).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from gpukit.device import DeviceLike
from gpukit.markup import latex_escape, latex_tabular, markdown_table, number, p_value
from gpukit.stats._common import ArrayLike, StatsError, as_float64
from gpukit.stats._scores import (
    Scores,
    common_queries,
    evaluate_runs,
    name_runs,
    shared_measures,
)
from gpukit.stats.studentized_range import studentized_range_ppf, studentized_range_sf

METHOD = ("Tukey HSD over all pairs (statsmodels pairwise_tukeyhsd): one-way ANOVA, each system's "
          "per-query values an independent group (query pairing ignored), pooled MSE with df = kQ - k, "
          "p-values from the studentized range (family-wise), reject when q > q_crit(1 - alpha)")


@dataclass(frozen=True)
class TukeyHSDResult:
    """:func:`tukey_hsd` on one ``(k, Q)`` matrix; tensors are float64 CPU, one entry per pair."""

    means: torch.Tensor  #: (k,) system means
    pairs: list[tuple[int, int]]  #: (i, j), i < j, in np.triu_indices order
    mean_difference: torch.Tensor  #: m_j - m_i
    statistic: torch.Tensor  #: studentized range |m_j - m_i| / se
    p_value: torch.Tensor  #: P(R > statistic), family-wise adjusted
    ci_low: torch.Tensor
    ci_high: torch.Tensor
    reject: torch.Tensor  #: bool, statistic > q_crit
    q_crit: float
    df: int
    mse: float
    alpha: float


def tukey_hsd(values: ArrayLike, alpha: float = 0.05) -> TukeyHSDResult:
    """Tukey HSD of the ``k`` rows of ``values`` (``(k, Q)``, k >= 2, Q >= 2, finite);
    see the module docstring for the formulas and the one-way ANOVA convention."""
    x = as_float64(values)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise StatsError(f"Tukey HSD needs (k, Q) values with k >= 2 systems and Q >= 2 queries, got {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise StatsError("scores contain NaN or infinite values; drop omitted queries before testing")
    if not 0.0 < alpha < 1.0:
        raise StatsError(f"alpha must be in (0, 1), got {alpha}")
    k, q = x.shape
    df = k * q - k
    means = x.mean(dim=1)
    mse = ((x - means[:, None]) ** 2).sum() / df
    se = torch.sqrt(mse / q)
    i, j = torch.triu_indices(k, k, 1, device=x.device)
    diff = means[j] - means[i]
    # 0 / 0 (MSE = 0, equal means) is no evidence of a difference: q = 0.
    stat = torch.where(diff == 0, torch.zeros_like(diff), diff.abs() / se)
    q_crit = studentized_range_ppf(1.0 - alpha, k, df, device=x.device)
    half = se * q_crit
    return TukeyHSDResult(
        means=means.cpu(), pairs=list(zip(i.tolist(), j.tolist())), mean_difference=diff.cpu(),
        statistic=stat.cpu(), p_value=studentized_range_sf(stat, k, df).cpu(),
        ci_low=(diff - half).cpu(), ci_high=(diff + half).cpu(), reject=(stat > q_crit).cpu(),
        q_crit=q_crit, df=df, mse=float(mse), alpha=alpha,
    )


@dataclass(frozen=True)
class TukeyRow:
    """One pair on one measure: ``difference = mean(system_b) - mean(system_a)``."""

    measure: str
    system_a: str
    system_b: str
    difference: float
    p_value: float  #: Tukey-adjusted
    ci_low: float  #: simultaneous (1 - alpha) interval of the difference
    ci_high: float
    significant: bool  #: studentized range > q_crit
    statistic: float


@dataclass(frozen=True)
class TukeyTable:
    """:func:`compare_all_pairs`: per measure a :class:`TukeyHSDResult`, and its rows."""

    systems: list[str]
    measures: list[str]
    alpha: float
    results: dict[str, TukeyHSDResult]
    query_ids: dict[str, list[str]] = field(default_factory=dict)

    @functools.cached_property
    def rows(self) -> list[TukeyRow]:
        out = []
        for m in self.measures:
            r = self.results[m]
            for n, (i, j) in enumerate(r.pairs):
                out.append(TukeyRow(m, self.systems[i], self.systems[j], float(r.mean_difference[n]),
                                    float(r.p_value[n]), float(r.ci_low[n]), float(r.ci_high[n]),
                                    bool(r.reject[n]), float(r.statistic[n])))
        return out

    def row(self, system_a: str, system_b: str, measure: str) -> TukeyRow:
        for r in self.rows:
            if (r.system_a, r.system_b, r.measure) == (system_a, system_b, measure):
                return r
        raise KeyError(f"no pair ({system_a!r}, {system_b!r}) for {measure!r}; pairs follow the systems' order")

    def title(self) -> str:
        return f"Tukey HSD, all pairs; family-wise alpha = {self.alpha}; one-way ANOVA (query pairing ignored)"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the method in words, and per measure its ANOVA figures, means and pairs."""
        measures = {}
        for m in self.measures:
            r = self.results[m]
            pairs = [{k: v for k, v in asdict(row).items() if k != "measure"} for row in self.rows if row.measure == m]
            measures[m] = {
                "queries": len(self.query_ids.get(m, [])), "df": r.df, "mse": r.mse, "q_crit": r.q_crit,
                "means": dict(zip(self.systems, r.means.tolist())),
                "pairs": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in p.items()}
                          for p in pairs],
            }
        return {"method": "tukey", "description": METHOD, "alpha": self.alpha, "systems": list(self.systems),
                "measures": measures}

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        ci = f"{1 - self.alpha:.0%} CI"
        header = ["measure", "system A", "system B", "diff (B-A)", ci, "p-adj", "reject"]
        body = [[r.measure, r.system_a, r.system_b, number(r.difference, signed=True),
                 f"[{number(r.ci_low, signed=True)}, {number(r.ci_high, signed=True)}]",
                 p_value(r.p_value), "yes" if r.significant else "no"] for r in self.rows]
        return header, body

    def _footer(self) -> str:
        parts = [f"{m}: {len(self.query_ids.get(m, []))} queries, df {r.df}, MSE {r.mse:.6g}, q_crit {r.q_crit:.4f}"
                 for m, r in self.results.items()]
        return "; ".join(parts)

    def to_text(self) -> str:
        header, body = self._cells()
        widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]
        lines = [self.title()]
        for row in [header] + body:
            lines.append("  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        lines.append(self._footer())
        return "\n".join(lines)

    def to_markdown(self) -> str:
        header, body = self._cells()
        return markdown_table(header, body, "lllrrrl") + f"\n\n{self.title()}. {self._footer()}."

    def to_latex(self) -> str:
        header, body = self._cells()
        header = [latex_escape(h) for h in header]
        body = [[latex_escape(c) for c in row] for row in body]
        return latex_tabular(header, body, "lllrrrl", comments=[self.title(), self._footer()])

    def __str__(self) -> str:
        return self.to_text()


def all_pairs_per_query(scores: Scores, query_ids: Sequence[str] | None = None, alpha: float = 0.05) -> TukeyTable:
    """Tukey HSD from per-query scores ``{system: {measure: (Q,) scores}}`` (NaN: omitted,
    for every system alike), on each measure's evaluated queries; pairs in the systems' order."""
    systems = list(scores)
    if len(systems) < 2:
        raise StatsError(f"need at least two systems to compare, got {len(systems)}")
    measures = shared_measures(scores, systems[0])
    results, ids = {}, {}
    for m in measures:
        values, ids[m] = common_queries(scores, systems, m, query_ids)
        results[m] = tukey_hsd(values, alpha)
    return TukeyTable(systems, measures, alpha, results, ids)


def compare_all_pairs(qrels: Any, runs: Mapping[str, Any] | Iterable[Any], measures: Iterable[Any] | Any,
                      alpha: float = 0.05, device: DeviceLike = None, **evaluate_options: Any) -> TukeyTable:
    """Evaluate the runs (as :func:`gpukit.stats.compare` does) and compare every pair with Tukey HSD."""
    if not 0.0 < alpha < 1.0:
        raise StatsError(f"alpha must be in (0, 1), got {alpha}")
    scores, query_ids, _ = evaluate_runs(qrels, name_runs(runs), measures, device, **evaluate_options)
    return all_pairs_per_query(scores, query_ids, alpha)
