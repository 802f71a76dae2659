"""``gpukit.compare``: significance tests of several systems against a baseline.

Layering: :func:`compare` evaluates the runs (one :func:`gpukit.evaluate`
per run), :func:`compare_per_query` works on per-query score tensors alone,
and both end in the batched kernels of :mod:`gpukit.stats.resampling`,
:mod:`~gpukit.stats.parametric` and :mod:`~gpukit.stats.risk`.

For each measure, every non-baseline system is compared with the baseline on
the queries where the measure is defined (omission depends on the qrels
only, so the set is the same for every system -- checked). Per system and
measure the table holds the mean, the mean difference to the baseline, the
p-value of the chosen test (raw and corrected within the measure's family of
``S - 1`` comparisons), a bootstrap percentile confidence interval of the
mean difference, the paired effect size ``d_z = mean(d) / sd(d)`` (sd with
ddof = 1), wins/ties/losses, URisk and TRisk.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from gpukit.device import DeviceLike, resolve_device
from gpukit.markup import latex_escape, latex_tabular, markdown_table, number, p_value
from gpukit.stats._common import StatsError, check_resamples, check_seed, t_statistic
from gpukit.stats._scores import (
    common_queries,
    evaluate_runs,
    name_runs,
    shared_measures,
)
from gpukit.stats.corrections import adjust
from gpukit.stats.parametric import paired_t_test, wilcoxon_signed_rank
from gpukit.stats.resampling import paired_bootstrap, paired_randomization_test
from gpukit.stats.risk import risk_reward
from gpukit.stats.winners import WinnersLosers, winners_losers

TESTS = ("randomization", "t-test", "bootstrap", "wilcoxon")

_TEST_DESCRIPTIONS = {
    "randomization": "two-sided paired randomization (sign-flip) test on the mean difference, "
    "p = (#{|mean_perm| >= |mean_obs|} + 1) / (n + 1)",
    "t-test": "two-sided paired Student t-test (scipy.stats.ttest_rel)",
    "bootstrap": "two-sided shifted paired bootstrap on the mean difference, "
    "p = (#{|mean_b - mean_obs| >= |mean_obs|} + 1) / (n + 1)",
    "wilcoxon": "two-sided Wilcoxon signed-rank test (scipy.stats.wilcoxon defaults: "
    "zeros dropped, no continuity correction, method='auto')",
}


@dataclass(frozen=True)
class ComparisonRow:
    """One system on one measure. Fields after ``is_baseline`` are None for the baseline."""

    system: str
    measure: str
    mean: float
    n_queries: int  #: queries entering the mean and the tests
    is_baseline: bool
    difference: float | None = None  #: mean(system) - mean(baseline)
    p_value: float | None = None  #: corrected p-value
    p_value_raw: float | None = None
    ci_low: float | None = None  #: bootstrap percentile CI of the mean difference
    ci_high: float | None = None
    effect_size: float | None = None  #: mean(d) / sd(d), ddof = 1 (paired Cohen's d_z)
    significant: bool | None = None  #: corrected p <= alpha
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None
    urisk: float | None = None
    trisk: float | None = None

    @property
    def marker(self) -> str:
        """``"*"`` when significant, else ``""``; direction is the sign of the difference."""
        return "*" if self.significant else ""


@dataclass(frozen=True)
class ComparisonSettings:
    """How a comparison is run (validated on construction); see :func:`compare`."""

    baseline: str | None = None
    test: str = "randomization"
    n_resamples: int = 10000
    seed: int = 0
    correction: str | None = "holm"
    alpha: float = 0.05
    confidence: float = 0.95
    risk_alpha: float = 1.0

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise StatsError(f"unknown test {self.test!r}; choose one of {', '.join(TESTS)}")
        check_resamples(self.n_resamples)
        check_seed(self.seed)
        if not 0.0 < self.alpha < 1.0:
            raise StatsError(f"alpha must be in (0, 1), got {self.alpha}")
        if not 0.0 < self.confidence < 1.0:
            raise StatsError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.correction == "none":
            object.__setattr__(self, "correction", None)
        adjust([], self.correction)  # rejects unknown corrections up front

    def describe(self) -> dict[str, Any]:
        """The settings with the conventions behind them, in words."""
        return {
            "baseline": self.baseline,
            "test": self.test,
            "test_description": _TEST_DESCRIPTIONS[self.test],
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "correction": self.correction or "none",
            "correction_family": "all non-baseline systems, per measure",
            "alpha": self.alpha,
            "significance": "corrected p <= alpha",
            "confidence": self.confidence,
            "confidence_interval": "bootstrap percentile of the mean difference "
            f"({self.n_resamples} resamples, seed {self.seed})",
            "effect_size": "mean difference / standard deviation of per-query differences (ddof=1)",
            "risk_alpha": self.risk_alpha,
            "risk": "URisk = mean of d_i if d_i > 0 else (1 + alpha) d_i; TRisk = URisk / (sd / sqrt(c))",
        }

    def title(self) -> str:
        resampled = self.test in ("randomization", "bootstrap")
        test = f"{self.test} ({self.n_resamples} resamples, seed {self.seed})" if resampled else self.test
        return (
            f"baseline: {self.baseline}; test: {test}; correction: {self.correction or 'none'}; "
            f"alpha: {self.alpha}; CI: {self.confidence:.0%} bootstrap percentile "
            f"({self.n_resamples} resamples, seed {self.seed})"
        )


@dataclass(frozen=True)
class ComparisonTable:
    """Result of :func:`compare`: rows per (measure, system), plus the settings used."""

    systems: list[str]  #: baseline first
    measures: list[str]
    rows: list[ComparisonRow]
    settings: ComparisonSettings  #: with the baseline resolved
    #: per measure, the evaluated query ids the differences are aligned with
    query_ids: dict[str, list[str]] = field(default_factory=dict)
    #: (system, measure) -> per-query differences to the baseline, float64 CPU
    differences: dict[tuple[str, str], torch.Tensor] = field(default_factory=dict)

    def row(self, system: str, measure: str) -> ComparisonRow:
        for r in self.rows:
            if r.system == system and r.measure == measure:
                return r
        raise KeyError(f"no row for system {system!r} and measure {measure!r}")

    @property
    def baseline(self) -> str:
        return str(self.settings.baseline)

    # ------------------------------------------------------------- formats
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready nested dict; non-finite floats become None."""
        measures: dict[str, Any] = {}
        for m in self.measures:
            systems = {}
            for r in self.rows:
                if r.measure == m:
                    # The baseline row carries only its mean: its comparison fields are None.
                    entry = {
                        k: _json_value(v) for k, v in asdict(r).items()
                        if k not in ("system", "measure") and not (r.is_baseline and v is None)
                    }
                    if not r.is_baseline:
                        entry["marker"] = r.marker
                    systems[r.system] = entry
            measures[m] = {"queries": len(self.query_ids.get(m, [])), "systems": systems}
        return {**self.settings.describe(), "systems": list(self.systems), "measures": measures}

    def to_dataframe(self):
        """One row per (measure, system), indexed by both, with every
        :class:`ComparisonRow` field (None for the baseline's comparison
        fields) and ``marker``; the settings are in ``frame.attrs``. pandas
        is imported here only."""
        from gpukit.report import require_pandas

        pd = require_pandas("ComparisonTable.to_dataframe")
        records = [{**asdict(r), "marker": r.marker} for r in self.rows]
        frame = pd.DataFrame.from_records(records, columns=[f.name for f in dataclasses.fields(ComparisonRow)] + ["marker"])
        frame = frame.set_index(["measure", "system"])
        frame.attrs.update(self.settings.describe())
        return frame

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        """Header and body of the text and markdown tables."""
        ci = f"{round(self.settings.confidence * 100):d}% CI"
        header = ["measure", "system", "mean", "diff", ci, "p", "p(raw)", "d_z", "W/T/L", "URisk", "TRisk"]
        body = []
        for r in self.rows:
            if r.is_baseline:
                body.append([r.measure, r.system, number(r.mean), "(baseline)", "", "", "", "", "", "", ""])
                continue
            body.append([
                r.measure, r.system, number(r.mean), number(r.difference, signed=True),
                f"[{number(r.ci_low, signed=True)}, {number(r.ci_high, signed=True)}]",
                p_value(r.p_value) + r.marker, p_value(r.p_value_raw), number(r.effect_size, 2),
                f"{r.wins}/{r.ties}/{r.losses}", number(r.urisk, signed=True), number(r.trisk, 2),
            ])
        return header, body

    def _legend(self) -> list[str]:
        conf = self.settings
        counts = ", ".join(f"{m}: {len(self.query_ids.get(m, []))}" for m in self.measures)
        return [
            (f"* corrected p <= {conf.alpha}. d_z: mean difference / sd of differences. "
             f"W/T/L: queries better/tied/worse than the baseline (|diff| <= 1e-12 ties). "
             f"URisk/TRisk with alpha = {conf.risk_alpha:g}."),
            f"queries per measure: {counts}",
        ]

    def to_text(self) -> str:
        """Aligned plain-text table, one line per (measure, system), with a legend."""
        header, body = self._cells()
        widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]
        lines = [self.settings.title()]
        for row in [header] + body:
            cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines + self._legend())

    def to_markdown(self) -> str:
        """The :meth:`to_text` table as a GFM pipe table, the settings and legend below it."""
        header, body = self._cells()
        table = markdown_table(header, body, "ll" + "r" * (len(header) - 2))
        return "\n\n".join([table, self.settings.title() + ".", *self._legend()])

    def to_latex(self) -> str:
        """A booktabs ``tabular``: systems x measures, mean with a significance marker."""
        header = ["System"] + [latex_escape(m) for m in self.measures]
        body = []
        for system in self.systems:
            name = latex_escape(system) + (" (baseline)" if system == self.baseline else "")
            cells = [f"{r.mean:.4f}" + ("$^{*}$" if r.significant else "")
                     for r in (self.row(system, m) for m in self.measures)]
            body.append([name, *cells])
        comments = [self.settings.title(), f"$^{{*}}$: corrected p <= {self.settings.alpha} against the baseline"]
        return latex_tabular(header, body, "l" + "r" * len(self.measures), comments)

    def winners_losers(self, n: int = 5) -> WinnersLosers:
        """Per system and measure: wins/ties/losses and the ``n`` largest per-query
        gains and losses against the baseline (:func:`gpukit.stats.winners.winners_losers`)."""
        return winners_losers(self, n)

    def __str__(self) -> str:
        return self.to_text()


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _raw_p_values(settings: ComparisonSettings, others: torch.Tensor, base: torch.Tensor, boot_p: torch.Tensor,
                  chunk_size: int | None, device: torch.device) -> torch.Tensor:
    if settings.test == "randomization":
        p = paired_randomization_test(others, base, settings.n_resamples, settings.seed,
                                      chunk_size=chunk_size, device=device).p_value
    elif settings.test == "t-test":
        p = paired_t_test(others, base).p_value
    elif settings.test == "wilcoxon":
        p = wilcoxon_signed_rank(others, base).p_value
    else:
        p = boot_p
    # NaN arises only when every difference is zero (t-test, large-Q Wilcoxon):
    # no evidence of a difference at all, so report p = 1.
    return torch.nan_to_num(p, nan=1.0)


def compare_per_query(
    scores: Mapping[str, Mapping[str, Any]],
    query_ids: Sequence[str] | None = None,
    settings: ComparisonSettings | None = None,
    *,
    device: DeviceLike = None,
    chunk_size: int | None = None,
) -> ComparisonTable:
    """Compare systems from per-query scores: ``{system: {measure: (Q,) scores}}``.

    Scores are aligned over the same ``Q`` queries (``query_ids``, default
    ``"0".."Q-1"``) for every system; NaN marks a query omitted for that
    measure and must be NaN for every system. ``settings`` defaults to
    :class:`ComparisonSettings()` (baseline: the first system); ``device``
    and ``chunk_size`` as in :func:`compare`.
    """
    settings = settings or ComparisonSettings()
    systems = list(scores)
    if len(systems) < 2:
        raise StatsError(f"need at least two systems to compare, got {len(systems)}")
    baseline = systems[0] if settings.baseline is None else settings.baseline
    if baseline not in scores:
        raise StatsError(f"baseline {baseline!r} is not among the systems: {', '.join(systems)}")
    measures = shared_measures(scores, baseline)
    first = scores[baseline][measures[0]] if measures else None
    dev = resolve_device(device, first.device if isinstance(first, torch.Tensor) else None)
    others = [s for s in systems if s != baseline]
    order = [baseline] + others
    rows: list[ComparisonRow] = []
    all_ids: dict[str, list[str]] = {}
    differences: dict[tuple[str, str], torch.Tensor] = {}
    for m in measures:
        values, all_ids[m] = common_queries(scores, order, m, query_ids)
        rows += _measure_rows(m, order, values, settings, dev, chunk_size)
        differences.update({(s, m): values[i + 1] - values[0] for i, s in enumerate(others)})
    return ComparisonTable(
        systems=order, measures=measures, rows=rows,
        settings=dataclasses.replace(settings, baseline=baseline), query_ids=all_ids, differences=differences,
    )


def _measure_rows(measure: str, systems: list[str], values: torch.Tensor, settings: ComparisonSettings,
                  device: torch.device, chunk_size: int | None) -> list[ComparisonRow]:
    """Rows of one measure; ``values`` is ``(S, Q)`` on evaluated queries, baseline first."""
    q = values.shape[1]
    if q < 2:
        raise StatsError(f"{measure}: need at least 2 evaluated queries to compare, got {q}")
    base, other = values[0], values[1:]
    boot = paired_bootstrap(other, base, settings.n_resamples, settings.seed, confidence=settings.confidence,
                            chunk_size=chunk_size, device=device)
    raw = _raw_p_values(settings, other, base, boot.p_value, chunk_size, device)
    corrected = adjust(raw, settings.correction)
    mean_d, sd_d, _ = t_statistic(other - base)
    risk = risk_reward(other, base, settings.risk_alpha)
    rows = [ComparisonRow(systems[0], measure, float(base.mean()), q, True)]
    for i, s in enumerate(systems[1:]):
        rows.append(ComparisonRow(
            system=s, measure=measure, mean=float(other[i].mean()), n_queries=q, is_baseline=False,
            difference=float(mean_d[i]), p_value=float(corrected[i]), p_value_raw=float(raw[i]),
            ci_low=float(boot.ci_low[i]), ci_high=float(boot.ci_high[i]),
            effect_size=float(mean_d[i] / sd_d[i]), significant=bool(corrected[i] <= settings.alpha),
            wins=int(risk.wins[i]), ties=int(risk.ties[i]), losses=int(risk.losses[i]),
            urisk=float(risk.urisk[i]), trisk=float(risk.trisk[i]),
        ))
    return rows


def compare(
    qrels: Any,
    runs: Mapping[str, Any] | Iterable[Any],
    measures: Iterable[Any] | Any,
    baseline: str | None = None,
    test: str = "randomization",
    n_resamples: int = 10000,
    seed: int = 0,
    correction: str | None = "holm",
    alpha: float = 0.05,
    device: DeviceLike = None,
    confidence: float = 0.95,
    *,
    risk_alpha: float = 1.0,
    chunk_size: int | None = None,
    **evaluate_options: Any,
) -> ComparisonTable:
    """Evaluate runs and test every system against a baseline.

    Args:
        qrels: a :class:`gpukit.Qrels`.
        runs: ``{name: Run}`` (order kept) or a sequence of runs named by
            ``run.name``; at least two.
        measures: measure names or :class:`gpukit.Measure` values.
        baseline: name of the reference system (default: the first).
        test: ``"randomization"`` (default), ``"t-test"``, ``"bootstrap"`` or
            ``"wilcoxon"``; see :mod:`gpukit.stats` for each convention.
        n_resamples: resamples of the randomization test and of the
            bootstrap behind every confidence interval.
        seed: seed of the resampling streams; results are identical for the same
            seed on every device and chunk size.
        correction: ``"holm"`` (default), ``"bonferroni"`` or None, applied
            per measure over the ``S - 1`` comparisons with the baseline.
        alpha: significance level; a row is significant when corrected p <= alpha.
        device: where evaluation and resampling run (``None``: the first run's
            device; ``"auto"``, ``"cpu"``, ``"cuda"``; see :mod:`gpukit.device`).
        confidence: level of the bootstrap percentile interval.
        risk_alpha: the alpha of URisk/TRisk (loss penalty), default 1.
        chunk_size: resamples per batched op (memory knob; results unchanged).
        evaluate_options: passed to :func:`gpukit.evaluate` (``convention``,
            ``relevance_level``, ``max_depth``, ...). The topic set must be
            identical for every run, which the default convention guarantees.
    """
    # Validate before the (expensive) evaluation.
    settings = ComparisonSettings(baseline, test, n_resamples, seed, correction, alpha, confidence, risk_alpha)
    named = name_runs(runs)
    if baseline is not None and baseline not in named:
        raise StatsError(f"baseline {baseline!r} is not among the runs: {', '.join(named)}")
    scores, query_ids, dev = evaluate_runs(qrels, named, measures, device, **evaluate_options)
    return compare_per_query(scores, query_ids, settings, device=dev, chunk_size=chunk_size)
