"""Pieces shared by family records: defined-masks, descriptions, trec_eval names."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import torch

if TYPE_CHECKING:  # pragma: no cover
    from gpukit.measures import Measure
    from gpukit.ranking import RankedJudgments

#: trec_eval's default cutoffs for P, recall, ndcg_cut, map_cut, relative_P...
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
DISCOUNT = "1 / log2(rank + 1)"


def always(values: torch.Tensor) -> torch.Tensor:
    """Every query defined: a broadcast view of one True (no (Q, C) fill)."""
    return torch.ones((1,) * values.dim(), dtype=torch.bool, device=values.device).expand_as(values)


def needs_relevant(r: "RankedJudgments", m: "Measure", values: torch.Tensor) -> torch.Tensor:
    """Defined where the query has a relevant document (R > 0)."""
    return r.has_relevant(m.rel).expand_as(values)


def describe_binary(m: "Measure") -> dict[str, str]:
    return {"relevance": f"grade >= {m.rel} is relevant"}


def describe_gain(m: "Measure") -> str:
    if m.gain == "exp":
        return "2^grade - 1 (exponential); grade <= 0 or unjudged gains 0"
    if isinstance(m.gain, tuple):
        return "custom " + ", ".join(f"grade {g} -> {v:g}" for g, v in m.gain) + "; other grades: gain = grade (> 0)"
    return "grade (linear); grade <= 0 or unjudged gains 0"


def describe_graded(m: "Measure") -> dict[str, str]:
    return {
        "gain": describe_gain(m),
        "discount": DISCOUNT,
        "ideal": "all judged documents of the query, sorted by gain",
    }


def trec_names(cut: str | None = None, uncut: str | None = None) -> Callable[["Measure"], str | None]:
    """trec_eval's output name: ``cut`` (``P`` -> ``P_10``) with a cutoff, ``uncut`` without.

    Only for the family's default parameters other than ``rel`` (trec_eval
    sets the relevance level for all measures with ``-l``); anything else
    has no trec_eval name.
    """

    def name(m: "Measure") -> str | None:
        if not _default_params(m):
            return None
        if m.cutoff is None:
            return uncut
        return None if cut is None else f"{cut}_{m.cutoff}"

    return name


def _default_params(m: "Measure") -> bool:
    fam = m.spec
    for p in fam.params:
        if p.name != "rel" and m.param(p.name) != p.check(p.default):
            return False
    return True
