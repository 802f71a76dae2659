"""trec_eval's experimental graded measures: binG, G, ndcg_rel, Rndcg, rbp, rbp_resid, unj.

Inputs are the padded (Q, K) ranked grades or gains of a ranking (padding:
grade < 0, gain 0), the per-query number of retrieved documents ``num_ret``
and the ideal gains (Q, L): the positive gains of all judged documents of the
query, sorted descending, zero-padded (``gpukit.metrics.ideal_gains``).
Every float sum over ranks runs left to right on every device
(:func:`ordered_cumsum`, ``ordered_prefix_at``); discount and persistence
weights are computed on the CPU and copied, so they are the same bits
everywhere. Zero denominators give 0 (trec_eval); whether such a query enters
a mean is the evaluation layer's convention.
"""
from __future__ import annotations

import torch

from gpukit.metrics.coverage import judged_at_k
from gpukit.metrics.cutoffs import Cutoffs, ordered_prefix_at, safe_divide
from gpukit.metrics.graded import Gain, discounts, gains


def ordered_cumsum(values: torch.Tensor) -> torch.Tensor:
    """Row-wise running sums (Q, K), added strictly left to right on every device."""
    return _ordered_scan(values, product=False)


def ordered_cumprod(values: torch.Tensor) -> torch.Tensor:
    """Row-wise running products (Q, K), multiplied strictly left to right on every device."""
    return _ordered_scan(values, product=True)


def _ordered_scan(values: torch.Tensor, product: bool) -> torch.Tensor:
    # CPU's cumsum and cumprod run sequentially; CUDA's are parallel scans
    # with other rounding, so there the columns are combined one at a time.
    if values.device.type == "cpu" or values.shape[1] == 0:
        return values.cumprod(1) if product else values.cumsum(1)
    return column_by_column_scan(values, product)


def column_by_column_scan(values: torch.Tensor, product: bool = False) -> torch.Tensor:
    """The device path of :func:`ordered_cumsum` / :func:`ordered_cumprod` (usable on any device)."""
    out = torch.empty_like(values)
    total = torch.ones_like(values[:, 0]) if product else torch.zeros_like(values[:, 0])
    for col in range(values.shape[1]):
        total = total * values[:, col] if product else total + values[:, col]
        out[:, col] = total
    return out


def _row_sum(values: torch.Tensor) -> torch.Tensor:
    """(Q,) left-to-right row sums."""
    return ordered_prefix_at(values, [None])[:, 0]


def _fit(ideal: torch.Tensor, width: int) -> torch.Tensor:
    """The ideal gains cut or zero-padded to ``width`` ranks."""
    if ideal.shape[1] >= width:
        return ideal[:, :width]
    return torch.nn.functional.pad(ideal, (0, width - ideal.shape[1]))


def persistence_weights(p: float, width: int, device: torch.device) -> torch.Tensor:
    """p^(i-1) for ranks i = 1..width+1, each the previous one times p (as trec_eval's loop)."""
    steps = torch.full((width + 1,), p, dtype=torch.float64)
    steps[0] = 1.0
    return steps.cumprod(0).to(device)


def binary_g(rel: torch.Tensor, num_rel: torch.Tensor) -> torch.Tensor:
    """binG = (1/R) * sum over relevant ranks i of 1 / log2(2 + non-relevant docs ranked above i), (Q,).

    Unjudged documents count as non-relevant. 0 where R = 0.
    """
    q, width = rel.shape
    ranks = torch.arange(width, device=rel.device)
    hits_before = rel.cumsum(1, dtype=torch.int64) - rel.to(torch.int64)
    nonrel_before = ranks - hits_before  # >= 0, < width
    weights = (1.0 / torch.log2(torch.arange(2, width + 2, dtype=torch.float64))).to(rel.device)
    contrib = torch.where(rel, weights[nonrel_before], torch.zeros((), dtype=torch.float64, device=rel.device))
    return safe_divide(_row_sum(contrib), num_rel)


def normalized_gain(ranked: torch.Tensor, ideal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(G, sum of ideal gains), each (Q,).

    G = (1/sum_j I_j) * sum over ranks i with gain g_i != 0 of g_i / log2(2 + C_i - S_i),
    S_i = g_1 + ... + g_i, C_i = sum_{j<=i} max(I_j, 1) (I_j = 0 past the ideal).
    """
    width = ranked.shape[1]
    s = ordered_cumsum(ranked)
    c = ordered_cumsum(_fit(ideal, width).clamp(min=1.0))
    # log2 of data-dependent values: exact for the integer arguments of
    # integer gains; other gains may differ in the last bit across devices.
    contrib = torch.where(ranked != 0, ranked / torch.log2(2.0 + c - s), torch.zeros_like(ranked))
    total_ideal = _row_sum(ideal)
    return safe_divide(_row_sum(contrib), total_ideal), total_ideal


def ndcg_at_relevant(ranked: torch.Tensor, ideal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(ndcg_rel, M), each (Q,); M = judged documents with positive gain.

    ndcg_rel = (1/M) * (sum over retrieved ranks i with gain > 0 of nDCG@i
    + (M - those retrieved) * nDCG of the whole ranking); 0 where M = 0 or the
    sum is not positive (negative custom gains), as trec_eval.
    """
    width = ranked.shape[1]
    dcg = ordered_cumsum(ranked * discounts(width, ranked.device))
    idcg = ordered_cumsum(_fit(ideal, width) * discounts(width, ranked.device))
    positive = ranked > 0
    points = torch.where(positive, safe_divide(dcg, idcg), torch.zeros_like(dcg))
    m = (ideal > 0).sum(1)
    dcg_all = dcg[:, -1] if width else ranked.new_zeros(ranked.shape[0])
    idcg_all = _row_sum(ideal * discounts(ideal.shape[1], ideal.device))
    missed = (m - positive.sum(1)).to(torch.float64)
    total = _row_sum(points) + missed * safe_divide(dcg_all, idcg_all)
    value = torch.where(total > 0, safe_divide(total, m), torch.zeros_like(total))
    return value, m


def ndcg_at_r_levels(ranked: torch.Tensor, ideal: torch.Tensor, num_ret: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(Rndcg, number of points), each (Q,).

    The points are nDCG@k at each k where the ideal gain changes (I_k != I_{k+1},
    I_{M+1} = 0: the ends of the gain levels), plus nDCG of the whole ranking
    (DCG@n / IDCG) when n >= M + 2 (trec_eval's loop skips it at n = M + 1);
    DCG@k stops growing at n. Rndcg is their mean, 0 without points.
    """
    width, depth = ranked.shape[1], ideal.shape[1]
    dcg = ordered_cumsum(ranked * discounts(width, ranked.device))
    idcg = ordered_cumsum(ideal * discounts(depth, ideal.device))
    following = torch.nn.functional.pad(ideal[:, 1:], (0, 1))
    boundary = (ideal > 0) & (ideal != following)
    if width:
        at = torch.arange(depth, device=ideal.device).clamp(max=width - 1)
        dcg_k = dcg.index_select(1, at)
        dcg_all = dcg[:, -1]
    else:
        dcg_k = torch.zeros_like(idcg)
        dcg_all = ranked.new_zeros(ranked.shape[0])
    points = torch.where(boundary, safe_divide(dcg_k, idcg), torch.zeros_like(idcg))
    m = (ideal > 0).sum(1)
    idcg_all = idcg[:, -1] if depth else torch.zeros_like(dcg_all)
    whole = (num_ret >= m + 2) & (m > 0)
    total = _row_sum(points) + torch.where(whole, safe_divide(dcg_all, idcg_all), torch.zeros_like(dcg_all))
    count = boundary.sum(1) + whole.to(torch.int64)
    return safe_divide(total, count), count


def rbp_gain_scale(max_grade: torch.Tensor, gain: Gain) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(normalise, low, high) per query for trec_eval's rbp gain normalisation, each (Q,).

    trec_eval's gain table of a query holds grades 0..max judged grade (gain =
    the default gain of the grade) and every custom ``grade=gain`` pair; when
    a table gain lies outside [0, 1], gains map to (gain - low) / (high - low),
    low and high the table's extremes. A query without judged documents has
    only the custom pairs (its retrieved documents gain 0 anyway).
    """
    custom = dict(gain) if isinstance(gain, tuple) else {}
    base = "exp" if gain == "exp" else "linear"
    hi = max_grade.clone()
    for level in sorted(custom, reverse=True):
        hi = torch.where(hi == level, hi - 1, hi)  # highest grade <= max with the default gain
    lo = torch.zeros_like(max_grade)
    for level in sorted(custom):
        lo = torch.where(lo == level, lo + 1, lo)  # lowest grade with the default gain
    has_default = (lo <= max_grade) & (max_grade >= 0)
    inf = torch.full(max_grade.shape, float("inf"), dtype=torch.float64, device=max_grade.device)
    high = torch.where(has_default, gains(hi.clamp(min=0), base), -inf)
    low = torch.where(has_default, gains(lo.clamp(min=0), base), inf)
    if custom:
        values = torch.tensor(list(custom.values()), dtype=torch.float64)
        high = high.clamp(min=float(values.max()))
        low = low.clamp(max=float(values.min()))
    normalise = (low < 0) | (high > 1)
    return normalise, low, high


def rank_biased_precision(grades: torch.Tensor, max_grade: torch.Tensor, gain: Gain, p: float, scale: bool = True,
                          min_grade: int = 0) -> torch.Tensor:
    """RBP = (1 - p) * sum_i gain'_i * p^(i-1), (Q,), with trec_eval's gain normalisation
    (:func:`rbp_gain_scale`; a zero range gives gain 0) where ``scale``, raw gains
    otherwise (ranx's rbp; grades below ``min_grade`` gain 0). Unjudged documents gain 0."""
    g = gains(grades, gain, min_grade)
    if scale:
        normalise, low, high = rbp_gain_scale(max_grade, gain)
        scaled = torch.where(grades >= 0, safe_divide(g - low[:, None], (high - low)[:, None]), torch.zeros_like(g))
        g = torch.where(normalise[:, None], scaled, g)
    weights = persistence_weights(p, grades.shape[1], grades.device)[: grades.shape[1]]
    return (1.0 - p) * _row_sum(g * weights)


def unjudged_mask(grades: torch.Tensor, num_ret: torch.Tensor) -> torch.Tensor:
    """(Q, K) retrieved documents that are not judged (absent from the qrels, or a negative grade)."""
    ranks = torch.arange(grades.shape[1], device=grades.device)
    return (grades < 0) & (ranks[None, :] < num_ret[:, None])


def rbp_residual(grades: torch.Tensor, num_ret: torch.Tensor, p: float) -> torch.Tensor:
    """rbp_resid = p^n + (1 - p) * sum over unjudged ranks i of p^(i-1), (Q,); 0 when no
    retrieved document is unjudged (trec_eval: then even the tail p^n is left out)."""
    unjudged = unjudged_mask(grades, num_ret)
    weights = persistence_weights(p, grades.shape[1], grades.device)
    spread = torch.where(unjudged, weights[: grades.shape[1]], torch.zeros((), dtype=torch.float64, device=grades.device))
    tail = weights[num_ret.clamp(max=grades.shape[1])]
    resid = tail + (1.0 - p) * _row_sum(spread)
    return torch.where(unjudged.any(1), resid, torch.zeros_like(resid))


def unjudged_at_k(grades: torch.Tensor, num_ret: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """unj@k = |unjudged retrieved documents in the top k| / k, (Q, C); ranks past the
    ranking count as judged (trec_eval)."""
    return judged_at_k(unjudged_mask(grades, num_ret), cutoffs)
