"""Preference and judgment-group kernels (trec_eval's m_prefs_*.c, m_*_avgjg.c).

Preferences are batched as a (T, G, D, D) boolean tensor ``prefs``: topic,
judgment group (JG), and the topic's judged documents indexed by their
*docid rank* (trec_eval's form_prefs_counts.c): the ``njr`` judged documents
the run retrieved come first in ranking order, then the unretrieved ones in
docno order. ``prefs[t, g, a, b]`` is True when JG g prefers document a to
document b (transitively closed). A document index ``< njr`` is retrieved,
and a preference a > b is *fulfilled* when a comes first (a < b).

Preferences fall in five areas (trec_eval's A1..A5): both retrieved and
fulfilled (A1) or not (A2); only a retrieved (implied fulfilled, A3); only b
retrieved (implied failed, A4); neither (A5). Every count here is an integer
sum of masks (exact on any device); float sums run over the JG axis in a
fixed left-to-right order (:func:`~gpukit.metrics.cutoffs.ordered_prefix_at`),
so CPU and CUDA agree bitwise.

Judgment-group families (map_avgjg, P_avgjg, Rprec_mult_avgjg) score each
(topic, JG) as a row of an ordinary ranking and average the rows of a topic
(:func:`average_over_groups`).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from gpukit.metrics.cutoffs import ordered_prefix_at


class AreaCounts(NamedTuple):
    """(T, G) int64 preference counts per JG (trec_eval's JG fields)."""

    ful_ret: torch.Tensor  # A1
    poss_ret: torch.Tensor  # A1 + A2
    ful_imp: torch.Tensor  # A3
    poss_imp: torch.Tensor  # A3 + A4
    notoccur: torch.Tensor  # A5


def _masks(njr: torch.Tensor, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """retrieved_a (T,1,D,1), retrieved_b (T,1,1,D), a-before-b (D,D)."""
    idx = torch.arange(d, device=njr.device)
    ret = idx[None, :] < njr[:, None]
    return ret[:, None, :, None], ret[:, None, None, :], idx[:, None] < idx[None, :]


def _count(mask: torch.Tensor) -> torch.Tensor:
    return mask.sum((-2, -1), dtype=torch.int64)


def area_counts(prefs: torch.Tensor, njr: torch.Tensor) -> AreaCounts:
    """Preferences of each JG in trec_eval's areas A1..A5 (see the module docstring).

    ``prefs``: (T, G, D, D) bool; ``njr``: (T,) judged documents retrieved.
    """
    ret_a, ret_b, before = _masks(njr, prefs.shape[-1])
    a1 = _count(prefs & before & ret_b)  # b retrieved and after a: a is retrieved too
    a2 = _count(prefs & ~before & ret_a)  # a retrieved after b
    a3 = _count(prefs & ret_a & ~ret_b)
    a4 = _count(prefs & ~ret_a & ret_b)
    a5 = _count(prefs & ~ret_a & ~ret_b)
    return AreaCounts(a1, a1 + a2, a3, a3 + a4, a5)


def fulfilled_among(pairs: torch.Tensor, njr: torch.Tensor, retrieved_only: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(fulfilled, possible) (T, G) counts of a (T, G, D, D) pair mask.

    A pair (a, b) is fulfilled when a is retrieved and ranked before b
    (``retrieved_only``: and b is retrieved too; pairs with an unretrieved
    document are then left out altogether).
    """
    ret_a, ret_b, before = _masks(njr, pairs.shape[-1])
    if retrieved_only:
        pairs = pairs & ret_a & ret_b
    return _count(pairs & before & ret_a), _count(pairs)


def ratio(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """numerator / denominator in float64, 0 where the denominator is 0."""
    num, den = numerator.to(torch.float64), denominator.to(torch.float64)
    return torch.where(den > 0, num / den.clamp(min=1.0), torch.zeros_like(num))


def average_over_jgs(per_jg: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """trec_eval's prefs_avgjg*: sum over the JGs (left to right), divided by
    the number of JGs when the sum is > 0, else 0 (a NaN JG, 0/0 in
    prefs_avgjg_Rnonrel, makes the sum NaN and so the value 0, as in trec_eval).
    ``per_jg``: (T, G) float64; ``valid``: (T, G) bool (padding JGs are False)."""
    total = ordered_prefix_at(per_jg.masked_fill(~valid, 0.0), [None])[:, 0]
    n = valid.sum(1).to(torch.float64)
    return torch.where(total > 0, total / n.clamp(min=1.0), torch.zeros_like(total))


def pair_ratio_sums(prefs: torch.Tensor, njr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """trec_eval's prefs_pair*: per document pair {a, b} (a before b) the
    share of the JGs' preferences on the pair that a > b fulfils,
    c(a, b) / (c(a, b) + c(b, a)), c counting JGs.

    Returns (sum over both-retrieved pairs, sum over one-retrieved pairs,
    pairs: both retrieved, one retrieved, neither), (T,) each; a pair counts
    when some JG prefers one of its documents. The float sums are exact
    rationals grouped by denominator n (integer sums of c per n, then
    sum_n S_n / n in order of n): fixed order on every device.
    """
    counts = prefs.sum(1, dtype=torch.int32)  # (T, D, D): JGs preferring a to b
    t_n, d = counts.shape[0], counts.shape[-1]
    idx = torch.arange(d, device=counts.device)
    both = counts + counts.transpose(1, 2)
    # The pairs {a, b} (a before b) some JG has a preference on, as a flat list.
    t, a, b = torch.nonzero((both > 0) & (idx[:, None] < idx[None, :]), as_tuple=True)
    c, n = counts[t, a, b], both[t, a, b]
    njr_t = njr[t]
    area = torch.where(b < njr_t, 0, torch.where(a < njr_t, 1, 2))  # both retrieved, only a, neither
    pairs = torch.zeros(3 * t_n, dtype=torch.int64, device=counts.device)
    pairs.index_add_(0, area * t_n + t, torch.ones_like(t))
    sums = []
    for which in (0, 1):
        total = torch.zeros(t_n, dtype=torch.float64, device=counts.device)
        for k in range(1, prefs.shape[1] + 1):
            sel = (area == which) & (n == k)
            s_k = torch.zeros(t_n, dtype=torch.int64, device=counts.device).index_add_(0, t[sel], c[sel].to(torch.int64))
            total = total + s_k.to(torch.float64) / k
        sums.append(total)
    return sums[0], sums[1], pairs[:t_n], pairs[t_n : 2 * t_n], pairs[2 * t_n :]


class JudgedDocs(NamedTuple):
    """What the Rnonrel kernels read of a preference ranking (see PrefsRanking)."""

    prefs: torch.Tensor  # (T, G, D, D) bool
    present: torch.Tensor  # (T, G, D) bool: judged in the JG
    relevant: torch.Tensor  # (T, G, D) bool: level > 0
    lowest: torch.Tensor  # (T, G, D) bool: in the lowest level of a one-JSG JG
    single: torch.Tensor  # (T, G) bool: the JG has one JSG
    njr: torch.Tensor  # (T,) judged documents retrieved


def _rel_counts(j: JudgedDocs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """retrieved (T, 1, D); per JG: relevant, relevant retrieved, non-relevant mask (T, G, D)."""
    ret = (torch.arange(j.present.shape[2], device=j.present.device)[None, :] < j.njr[:, None])[:, None, :]
    return ret, j.relevant.sum(2), (j.relevant & ret).sum(2), j.present & ~j.relevant


def rnonrel_pairs(j: JudgedDocs, retrieved_only: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(fulfilled, possible) (T, G) of trec_eval's "recalculate" step of
    prefs_avgjg_Rnonrel (``retrieved_only``: prefs_avgjg_Rnonrel_ret), used
    for JGs with more non-relevant than relevant documents.

    Only R non-relevant documents are kept. For a JG of one JSG (classes by
    level), the kept ones are the first R (docid rank order) of the lowest
    class, and the pairs are: every preference whose lower document is not
    in the lowest class, plus every (JG document, kept lowest document) pair
    — trec_eval pairs the lowest class with itself there, the document with
    itself included. For a JG of several JSGs, the non-relevant documents
    after the R-th are dropped and the preferences among the rest counted.
    R is the JG's relevant documents (``retrieved_only``: relevant retrieved,
    except that the several-JSG case keeps counting up to all relevant ones,
    as trec_eval does). ``retrieved_only`` leaves out pairs with an
    unretrieved document.

    One divergence: when the lowest class has fewer than R documents (possible
    only with several non-relevant levels, e.g. qrels_prefs grades 0 and -1),
    trec_eval reads past the end of the class (undefined memory); here the
    whole class is kept.
    """
    prefs, present, lowest = j.prefs, j.present, j.lowest
    ret, num_rel, num_rel_ret, nonrel = _rel_counts(j)
    keep_r = (num_rel_ret if retrieved_only else num_rel)[:, :, None]
    # Classes: the kept lowest-class documents.
    kept_low = lowest & (lowest.cumsum(2) <= keep_r)
    class_pairs = (prefs & ~lowest[:, :, None, :]) | (present[:, :, :, None] & kept_low[:, :, None, :])
    # Partial orders: drop the non-relevant documents after the R-th.
    counted = nonrel & ret if retrieved_only else nonrel
    dropped = nonrel & (counted.cumsum(2) > num_rel[:, :, None])
    if retrieved_only:
        dropped = dropped & ret
    kept = ~dropped
    order_pairs = prefs & kept[:, :, :, None] & kept[:, :, None, :]
    pairs = torch.where(j.single[:, :, None, None], class_pairs, order_pairs)
    return fulfilled_among(pairs, j.njr, retrieved_only)


def rnonrel_ratio(areas: AreaCounts, j: JudgedDocs, retrieved_only: bool) -> torch.Tensor:
    """(T, G) float64 per-JG ratio of prefs_avgjg_Rnonrel(_ret); NaN for 0/0
    (which trec_eval lets through: it zeroes the topic, see average_over_jgs).

    With R relevant and N non-relevant documents in the JG (``retrieved_only``:
    retrieved ones), R >= N adds R - N notional non-relevant documents below
    every relevant one: fulfilled += relevant retrieved * (R - N), possible +=
    relevant * (R - N); otherwise :func:`rnonrel_pairs` recounts.
    """
    ret, num_rel, num_rel_ret, nonrel = _rel_counts(j)
    if retrieved_only:
        r, n = num_rel_ret, (nonrel & ret).sum(2)
        ful, poss = areas.ful_ret, areas.poss_ret
    else:
        r, n = num_rel, nonrel.sum(2)
        ful = areas.ful_ret + areas.ful_imp
        poss = areas.poss_ret + areas.poss_imp + areas.notoccur
    extra = (r - n).clamp(min=0)
    ful_a, poss_a = ful + num_rel_ret * extra, poss + num_rel * extra
    ful_b, poss_b = rnonrel_pairs(j, retrieved_only)
    use_a = r >= n
    f = torch.where(use_a, ful_a, ful_b).to(torch.float64)
    p = torch.where(use_a, poss_a, poss_b).to(torch.float64)
    return f / p  # 0/0 = NaN, on purpose


def average_over_groups(row_values: torch.Tensor, row_of: torch.Tensor) -> torch.Tensor:
    """(T, C): mean over the JGs of each topic of per-(topic, JG) row values.

    ``row_values``: (rows, C) float64; ``row_of``: (T, G) row of each JG of a
    topic, -1 for padding. JGs are added left to right (fixed order), then
    divided by the topic's number of JGs (trec_eval divides only when there
    are several, which is the same number).
    """
    t, g = row_of.shape
    c = row_values.shape[1]
    valid = row_of >= 0
    if row_values.shape[0] == 0:
        return row_values.new_zeros((t, c))
    gathered = row_values[row_of.clamp(min=0)].masked_fill(~valid[:, :, None], 0.0)  # (T, G, C)
    total = ordered_prefix_at(gathered.permute(0, 2, 1).reshape(t * c, g), [None]).reshape(t, c)
    return total / valid.sum(1, keepdim=True).clamp(min=1).to(torch.float64)


def any_group(row_mask: torch.Tensor, row_of: torch.Tensor) -> torch.Tensor:
    """(T,) whether some JG of the topic satisfies a per-row (rows,) condition."""
    if row_mask.shape[0] == 0:
        return torch.zeros(row_of.shape[0], dtype=torch.bool, device=row_of.device)
    return (row_mask[row_of.clamp(min=0)] & (row_of >= 0)).any(1)


def rprec_mult(relevant: torch.Tensor, num_rel: torch.Tensor, mult: float) -> torch.Tensor:
    """(rows,) precision at rank c = floor(mult * R + 0.9) (trec_eval's
    Rprec_mult cutoff, C's (long) truncation of a non-negative double), 0
    when c = 0; ranks past the end of a ranking count as non-relevant."""
    c = (mult * num_rel.to(torch.float64) + 0.9).floor().to(torch.int64)
    width = relevant.shape[1]
    if width == 0:
        return torch.zeros(relevant.shape[0], dtype=torch.float64, device=relevant.device)
    hits = relevant.cumsum(1, dtype=torch.int64)
    at = hits.gather(1, (c.clamp(min=1, max=width) - 1)[:, None])[:, 0]
    return ratio(torch.where(c > 0, at, torch.zeros_like(at)), c)
