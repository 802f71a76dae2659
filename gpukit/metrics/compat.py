"""Compatibility (Clarke, Vtyurina and Smucker, TOIS 2021): rank-biased overlap
of a ranking with an ideal ranking, as ir_measures' ``compat`` provider.

Per query, with n retrieved documents and R judged documents of grade > 0::

    ideal   = the R relevant documents by grade descending; documents of one
              grade in the order the ranking has them, those it lacks after
    D       = max(n, R)                        (the depth of the overlap)
    O_d     = |ranking[:d] ∩ ideal[:d]|
    RBO     = sum_{d=1..D} p^(d-1) * O_d / d  /  sum_{d=1..D} p^(d-1)
    Compat  = RBO(ranking, ideal) / RBO(ideal, ideal)   (normalize; RBO when not)

A relevant retrieved document at rank r and ideal position s is in the
overlap from depth m = max(r, s) on, so sum_d p^(d-1) O_d / d is the sum,
over those documents, of the tail sum_{d=m..D} p^(d-1) / d: no per-query
loop, only a sort of each row by grade and tables of tail sums. For the
ideal against itself O_d = min(d, R). A query without relevant documents
scores 0 (ir_measures); the family's record says whether it enters a mean.

The weight tables are built on the CPU (each weight the previous one times
p, as ir_measures' loop) and copied, so they are the same bits on every
device; the sum over a row runs left to right (``ordered_prefix_at``).
"""
from __future__ import annotations

import torch

from gpukit.metrics.cutoffs import ordered_prefix_at, safe_divide
from gpukit.metrics.trec_graded import persistence_weights

#: Sort key of a ranked document that is not relevant: after every relevant one.
_LAST = 2**31 - 1


def _weight_tables(p: float, width: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(mass, tail), float64 on ``device``, indexed by depth 0..width+1:
    mass[d] = sum_{i=1..d} p^(i-1) and tail[m] = sum_{i=m..width} p^(i-1) / i
    (tail[0] unused, tail[width+1] = 0)."""
    pw = persistence_weights(p, width, torch.device("cpu"))[:width]  # p^(i-1), i = 1..width
    mass = torch.cat([torch.zeros(1, dtype=torch.float64), pw.cumsum(0)])
    terms = pw / torch.arange(1, width + 1, dtype=torch.float64)
    # Tails summed from the deep (small) end: accurate where they are small.
    tail = torch.cat([torch.zeros(1, dtype=torch.float64), terms.flip(0).cumsum(0).flip(0), torch.zeros(1, dtype=torch.float64)])
    return mass.to(device), tail.to(device)


def ideal_positions(grades: torch.Tensor, ideal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where each relevant ranked document stands in the ideal ranking.

    Returns (rank, position, relevant), each (Q, min(K, L)) with rows reordered
    by grade descending, then rank (a stable sort), cut after the last column
    that can hold a relevant document: the 1-based rank of the
    document, its 1-based place in the ideal ranking, and whether it is
    relevant (grade > 0; the other entries are meaningless). The place is the
    number of judged documents of higher grade (retrieved or not), plus the
    relevant ranked documents of its grade above it, plus one.
    """
    relevant = grades > 0
    key = torch.where(relevant, -grades, torch.full_like(grades, _LAST))
    sorted_key, order = torch.sort(key, dim=1, stable=True)
    # A row has at most L relevant ranked documents (L = the ideal's width, the most judged
    # documents of a topic), all sorted to the front: the rest of the row can be dropped.
    keep = min(grades.shape[1], ideal.shape[1])
    sorted_key, order = sorted_key[:, :keep].contiguous(), order[:, :keep]
    sorted_relevant = sorted_key < 0
    # Ascending copies of the ideal grades (padding -1 becomes +1, still last).
    neg_ideal = ideal.to(key.dtype).neg().contiguous()
    higher_judged = torch.searchsorted(neg_ideal, sorted_key, side="left")
    higher_ranked = torch.searchsorted(sorted_key, sorted_key, side="left")
    t = torch.arange(keep, device=grades.device)
    position = higher_judged - higher_ranked + t[None, :] + 1
    return order + 1, position, sorted_relevant


def compatibility(grades: torch.Tensor, num_ret: torch.Tensor, ideal: torch.Tensor, p: float, normalize: bool,
                  positions: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """Compat per query, (Q,) float64 (see the module docstring).

    ``grades`` (Q, K) ranked grades (unjudged and padding < 0), ``num_ret``
    (Q,) retrieved documents, ``ideal`` (Q, L) judged grades sorted
    descending (padding -1); ``positions``: :func:`ideal_positions` of them
    when already computed (they depend on neither p nor normalize).
    """
    device = grades.device
    num_rel = (ideal > 0).sum(1)
    depth = torch.maximum(num_ret.to(torch.int64), num_rel)
    mass, tail = _weight_tables(p, max(grades.shape[1], ideal.shape[1]), device)
    rank, position, relevant = ideal_positions(grades, ideal) if positions is None else positions
    # Entries that are not relevant get a harmless index (their contribution is masked).
    start = torch.where(relevant, torch.maximum(rank, position), torch.zeros_like(rank))
    beyond = tail[depth + 1]  # the part of each tail past the query's depth
    contrib = torch.where(relevant, tail[start] - beyond[:, None], torch.zeros((), dtype=torch.float64, device=device))
    raw = ordered_prefix_at(contrib, [None])[:, 0]
    if not normalize:
        return safe_divide(raw, mass[depth])
    # The ideal against itself: O_d = d up to R, then R.
    best = mass[num_rel] + num_rel.to(torch.float64) * (tail[num_rel + 1] - beyond)
    return safe_divide(raw, best)
