"""Compat(p, normalize): Clarke et al.'s compatibility, as ir_measures' compat provider.

Source read for the definition: ir_measures 0.4.3,
``ir_measures/providers/compat_provider.py`` and ``measures/compat.py``
(p default 0.95, normalize default True; the ideal ranking is the relevant
documents, grade > 0, by grade descending, ties by the run's score; depth
max(|ranking|, R); normalised by the ideal's RBO against itself when that is
> 0). Conventions where gpukit differs from that provider, and why:

* the ranking breaks score ties by doc id descending, as every gpukit
  measure (trec_eval); the provider sorts tied documents by doc id
  ascending, so on tied scores the two rank differently;
* documents of one grade stand in the ideal in the order the ranking has
  them, those it lacks after. The provider orders them by score, giving a
  document the run lacks the score 0.0, and equal scores in the qrels'
  order: the same as gpukit when scores are positive and distinct, but with
  negative scores it ranks unretrieved documents above retrieved ones.

So ``gpukit.compat.ir_measures`` leaves Compat to the compat provider.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import torch

from gpukit.families.params import flag, number
from gpukit.families.registry import register
from gpukit.families.spec import Family
from gpukit.metrics.compat import compatibility, ideal_positions

if TYPE_CHECKING:  # pragma: no cover
    from gpukit.measures import Measure
    from gpukit.ranking import RankedJudgments

P = number("p", "persistence of the rank-biased overlap: depth d weighs p^(d-1) (ir_measures: 0.95)", 0.95,
           low=0, high=1)
NORMALIZE = flag("normalize", "divide by the ideal ranking's own overlap, so that the ideal ranking scores 1 "
                 "(ir_measures: True)", default=True)


def _compat(r: "RankedJudgments", m: "Measure", cuts: Sequence) -> tuple[torch.Tensor, torch.Tensor]:
    # The ideal positions do not depend on p or normalize: one computation for every Compat variant.
    positions = r._cached(("compat_positions",), lambda: ideal_positions(r.grades, r.ideal))
    v = compatibility(r.grades, r.num_ret, r.ideal, m.param("p"), m.param("normalize"), positions)[:, None]
    return v, (r.num_relevant(1) > 0)[:, None]  # grades are integers: > 0 is >= 1


def _describe(m: "Measure") -> dict[str, str]:
    return {
        "ideal": "the judged documents of grade > 0 by grade descending; one grade's documents in the ranking's "
        "order, those the run lacks after",
        "depth": "max(retrieved documents, R); each depth d weighs p^(d-1)",
        "normalisation": "by the ideal ranking's overlap with itself" if m.param("normalize") else "none (plain RBO)",
    }


Compat = register(Family(
    name="Compat",
    summary="compatibility: rank-biased overlap with the ideal ranking (Clarke et al. 2021)",
    definition="Compat = RBO(ranking, ideal) / RBO(ideal, ideal), RBO(a, b) = sum_{d<=D} p^(d-1) |a[:d] ∩ b[:d]| / d "
    "/ sum_{d<=D} p^(d-1), D = max(retrieved, R); ideal = relevant documents (grade > 0) by grade descending, ties "
    "in the ranking's order, unretrieved last; normalize=False: RBO(ranking, ideal) (ir_measures' compat provider; "
    "it breaks score ties by doc id ascending, gpukit descending)",
    kernel=_compat,
    cutoff="none",
    params=(P, NORMALIZE),
    needs=frozenset({"grades", "ideal", "num_ret"}),
    defined_when="R > 0 (the query has a document of grade > 0); otherwise 0 under trec_eval's convention",
    describe=_describe,
    examples=("Compat", "Compat(p=0.8)", "Compat(normalize=False)", "Compat(p=0.5,normalize=False)"),
    reads_ideal_grades=True,
))
