"""Graded measures: gains, DCG@k and nDCG@k.

DCG@k = sum_{i=1..k} gain(grade_i) / log2(i + 1): discount weights 1, 0.6309,
0.5, ... Gains: ``linear`` gain = grade, ``exp`` gain = 2**grade - 1, or a
custom {grade: gain} mapping (unlisted grades keep gain = grade). Documents
that are unjudged, or judged with a grade <= 0, gain 0 unless a custom
mapping gives grade 0 a gain. The ideal DCG sorts the positive gains of all
judged documents of the query, retrieved or not (trec_eval's ndcg_cut).
"""
from __future__ import annotations

from typing import Union

import torch

from gpukit.metrics.cutoffs import Cutoffs, ordered_prefix_at, safe_divide, truncate


#: ``"linear"``, ``"exp"`` or ``((grade, gain), ...)`` pairs (custom gains).
Gain = Union[str, tuple[tuple[int, float], ...]]


def gains(grades: torch.Tensor, gain: Gain, min_grade: int = 0) -> torch.Tensor:
    """Map an integer grade tensor (any shape) to float64 gains; grades below
    ``min_grade`` gain 0 (ranx's relevance level ``-l``: only grades >= it count)."""
    # Clamping at 0 first maps "not judged" (a large negative code) and
    # negative grades to gain 0 in the same pass as the widening.
    g = grades.clamp(min=0).to(torch.float64)
    if gain == "exp":
        out = torch.exp2(g.clamp_(max=1000)).sub_(1.0)
    else:
        out = g
    if isinstance(gain, tuple):
        for grade, value in gain:
            if grade >= 0:
                out = torch.where(grades == grade, torch.full_like(out, value), out)
    if min_grade > 0:
        out = out.masked_fill_(grades < min_grade, 0.0)
    return out


# Discount tables per device, grown to powers of two and sliced: one copy per
# device and size class instead of one host-to-device copy per call (which a
# CUDA graph cannot capture). Built on the CPU, as the CPU and CUDA log2
# implementations may differ in the last bit; a power-of-two length keeps
# every element in the vectorised loop, so a value never depends on the size.
_DISCOUNTS: dict[torch.device, torch.Tensor] = {}


def discounts(width: int, device: torch.device) -> torch.Tensor:
    """1 / log2(rank + 1) for ranks 1..width, float64, on ``device``."""
    device = torch.device(device)
    table = _DISCOUNTS.get(device)
    if table is None or table.numel() < width:
        size = max(1024, 1 << max(width - 1, 0).bit_length())
        table = (1.0 / torch.log2(torch.arange(2, size + 2, dtype=torch.float64))).to(device)
        _DISCOUNTS[device] = table
    return table[:width]


def dcg(ranked_gains: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """DCG at each cutoff, (Q, C)."""
    ranked_gains = truncate(ranked_gains, cutoffs)
    weighted = ranked_gains * discounts(ranked_gains.shape[1], ranked_gains.device)
    return ordered_prefix_at(weighted, cutoffs)


def ideal_gains(judged_grades: torch.Tensor, gain: Gain, min_grade: int = 0) -> torch.Tensor:
    """Positive gains of all judged documents, sorted descending, (Q, L).

    ``judged_grades`` must be sorted descending per row (as
    ``RankedJudgments.ideal`` is); linear and exponential gains keep that
    order (``min_grade`` zeroes a suffix of it), so only a custom mapping
    needs a sort.
    """
    g = gains(judged_grades, gain, min_grade)  # linear and exponential gains of grades clamped at 0 are >= 0
    if isinstance(gain, tuple):  # a custom gain may be negative
        g = torch.sort(g.clamp_(min=0.0), dim=1, descending=True).values
    return g


def ndcg(ranked_gains: torch.Tensor, ideal: torch.Tensor, cutoffs: Cutoffs) -> tuple[torch.Tensor, torch.Tensor]:
    """(nDCG, IDCG) at each cutoff, each (Q, C); nDCG is 0 where IDCG is 0."""
    idcg = dcg(ideal, cutoffs)
    return safe_divide(dcg(ranked_gains, cutoffs), idcg), idcg
