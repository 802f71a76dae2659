"""Per-query winners and losers of each system against the baseline.

From a :class:`~gpukit.stats.compare.ComparisonTable`'s per-query
differences ``d_q = system_q - baseline_q`` (on each measure's evaluated
queries), per system and measure:

* wins / ties / losses: ``d_q > tol``, ``|d_q| <= tol``, ``d_q < -tol``
  (``tol = 1e-12``, as in :func:`gpukit.stats.wins_ties_losses`);
* the ``n`` largest gains: the queries with ``d_q > tol``, largest ``d_q``
  first; the ``n`` largest losses: ``d_q < -tol``, most negative first.
  Equal differences keep the table's query order. Fewer than ``n`` are
  listed when fewer queries win (lose): a tie is neither.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from gpukit.markup import latex_escape, latex_tabular, markdown_table, number
from gpukit.stats._common import StatsError
from gpukit.stats.risk import DEFAULT_TIE_TOLERANCE, wins_ties_losses

if TYPE_CHECKING:
    from gpukit.stats.compare import ComparisonTable


@dataclass(frozen=True)
class QueryExtremes:
    """One system on one measure against the baseline."""

    system: str
    measure: str
    wins: int
    ties: int
    losses: int
    gains: list[tuple[str, float]]  #: (query id, d_q), largest first
    drops: list[tuple[str, float]]  #: (query id, d_q), most negative first


def largest_differences(d: torch.Tensor, query_ids: list[str], n: int,
                        tolerance: float = DEFAULT_TIE_TOLERANCE) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The ``n`` largest gains and losses of the differences ``d`` (``(Q,)``), see the module docstring."""
    d = d.detach().to(torch.float64).cpu()
    out = []
    for sign in (1.0, -1.0):
        values, order = torch.sort(-sign * d, stable=True)  # stable: equal differences keep query order
        chosen = order[values < -tolerance][:n].tolist()
        out.append([(query_ids[i], float(d[i])) for i in chosen])
    return out[0], out[1]


@dataclass(frozen=True)
class WinnersLosers:
    """:func:`winners_losers`: a :class:`QueryExtremes` per (measure, system), baseline excluded."""

    baseline: str
    n: int
    rows: list[QueryExtremes]

    def to_dict(self) -> dict[str, Any]:
        measures: dict[str, Any] = {}
        for r in self.rows:
            measures.setdefault(r.measure, {})[r.system] = {
                "wins": r.wins, "ties": r.ties, "losses": r.losses,
                "largest_gains": [{"query": q, "difference": d} for q, d in r.gains],
                "largest_losses": [{"query": q, "difference": d} for q, d in r.drops],
            }
        return {"baseline": self.baseline, "n": self.n, "tie_tolerance": DEFAULT_TIE_TOLERANCE, "measures": measures}

    def title(self) -> str:
        return (f"per-query gains and losses against the baseline {self.baseline}: the {self.n} largest of each, "
                f"W/T/L = queries better/tied/worse (|diff| <= {DEFAULT_TIE_TOLERANCE:g} ties)")

    def _cells(self, query=str) -> tuple[list[str], list[list[str]]]:
        def listed(pairs: list[tuple[str, float]]) -> str:
            return ", ".join(f"{query(q)} ({number(d, signed=True)})" for q, d in pairs) or "-"

        header = ["measure", "system", "W/T/L", "largest gains", "largest losses"]
        body = [[r.measure, r.system, f"{r.wins}/{r.ties}/{r.losses}", listed(r.gains), listed(r.drops)]
                for r in self.rows]
        return header, body

    def to_text(self) -> str:
        header, body = self._cells()
        widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header) - 1)]
        lines = [self.title()]
        for row in [header] + body:
            lines.append("  ".join([c.ljust(w) for c, w in zip(row, widths)] + row[-1:]).rstrip())
        return "\n".join(lines)

    def to_markdown(self) -> str:
        header, body = self._cells()
        return markdown_table(header, body, "llrll") + f"\n\n{self.title()}."

    def to_latex(self) -> str:
        header, body = self._cells(query=latex_escape)
        body = [[latex_escape(c) for c in row[:3]] + row[3:] for row in body]
        return latex_tabular(header, body, "llrll", comments=[self.title()])

    def __str__(self) -> str:
        return self.to_text()


def winners_losers(table: ComparisonTable, n: int = 5) -> WinnersLosers:
    """Wins/ties/losses and the ``n`` largest per-query gains and losses of every
    non-baseline system of ``table``, per measure (``n >= 1``)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise StatsError(f"n must be a positive integer, got {n!r}")
    rows = []
    for m in table.measures:
        ids = table.query_ids[m]
        for s in table.systems:
            if s == table.baseline:
                continue
            d = table.differences[(s, m)]
            wins, ties, losses = (int(c) for c in wins_ties_losses(d, torch.zeros_like(d)))
            gains, drops = largest_differences(d, ids, n)
            rows.append(QueryExtremes(s, m, wins, ties, losses, gains, drops))
    return WinnersLosers(table.baseline, n, rows)
