"""The fusion kernel: one slice of queries, every run at once, no per-query loop.

The runs' (R, K_i) rows are laid side by side into one (R, M) row per query
(M = sum of K_i), and each row is sorted by doc key (descending, stable;
both sorts are one-dimensional radix sorts of packed keys, see
:mod:`gpukit.fusion.row_sort`): the entries of one document become neighbours (a segment; a run ranks a document at most
once, so a segment holds at most N entries, one per run, in run order).
Per-document sums, counts, maxima... are then scatter reductions over the
segments, the same ops on CPU and CUDA. The fused row is finally put in
ranking order by one stable sort on the fused score: segments are in key
order already, so ties end up by doc id descending, trec_eval's order.

Values that need the query's candidate count n_c (BordaFuse, borda
normalisation) are computed after the key sort, from each entry's rank and
run, read through the sort's permutation from per-column tables.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from gpukit.fusion.methods import BAYES_MIN_LOG_ODDS, MethodSpec
from gpukit.fusion.row_sort import descending_keys, ranking_order


@dataclass(frozen=True)
class Entries:
    """One slice's entries, every run side by side: (R, M) tensors, and what
    each of the M columns is."""

    keys: torch.Tensor  # int64 doc keys, -1 padding
    values: torch.Tensor | None  # float64 value of each entry (None: computed after the sort)
    runs: torch.Tensor  # (M,) int64 run of each column
    ranks: torch.Tensor  # (M,) float64 rank of each column in its run's row
    lengths: torch.Tensor  # (R, N) int64 documents of each run's row


def _seg_sum(seg: torch.Tensor, x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.zeros(seg.shape[0], width, dtype=x.dtype, device=x.device).scatter_add_(1, seg, x)


@dataclass(frozen=True)
class Segments:
    """A slice's entries sorted by doc key (descending, stable: a document's
    entries in run order), and the segment (candidate) of each.

    Attributes:
        keys: (R, M) sorted keys, -1 padding last.
        perm: (R, M) column of each sorted entry in the unsorted layout.
        valid: (R, M) the entry is a document.
        new: (R, M) the entry starts a segment.
        seg: (R, M) segment of each entry; padding: ``width - 1``, a spare one.
        n_cand: (R, 1) candidates of each query.
        width: U + 1, U the slice's largest candidate count.
    """

    keys: torch.Tensor
    perm: torch.Tensor
    valid: torch.Tensor
    new: torch.Tensor
    seg: torch.Tensor
    n_cand: torch.Tensor
    width: int


def segments(keys: torch.Tensor) -> Segments:
    """The :class:`Segments` of (R, M) doc keys (one host read: U)."""
    keys, perm = descending_keys(keys)
    valid = keys >= 0
    new = valid.clone()
    new[:, 1:] &= keys[:, 1:] != keys[:, :-1]
    n_cand = new.sum(1, keepdim=True)
    u = int(n_cand.max()) if keys.shape[0] else 0
    seg = torch.where(valid, torch.cumsum(new, 1) - 1, u)
    return Segments(keys, perm, valid, new, seg, n_cand, u + 1)


def fuse_slice(
    entries: Entries, spec: MethodSpec, params: dict, weights: torch.Tensor | None, borda_norm: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(R, U) fused doc keys (-1 padding) and float64 scores of one slice,
    each row in ranking order (score desc, key desc); U is the slice's
    largest candidate count."""
    sg = segments(entries.keys)
    keys, valid, seg, out_width = sg.keys, sg.valid, sg.seg, sg.width
    rows = keys.shape[0]
    runs = entries.runs[sg.perm] if spec.weighted or entries.values is None or spec.name == "bayesfuse" else None
    n_runs = entries.lengths.shape[1]
    lengths = entries.lengths.to(torch.float64)

    fills = None  # (R, N) value of a run for a candidate it does not rank
    if spec.value == "borda" or borda_norm:
        rank = entries.ranks[sg.perm]
        nc = sg.n_cand.to(torch.float64)
        if borda_norm:
            values = 1.0 - rank / nc.clamp(min=1)
            fills = 0.5 - (lengths - 1.0) / (2.0 * nc.clamp(min=1))
        else:
            values = nc - rank
            fills = (nc - lengths + 1.0) / 2.0
        values = values.masked_fill_(~valid, 0.0)
    else:
        values = entries.values.gather(1, sg.perm)
        if spec.name == "bayesfuse":
            fills = torch.full((rows, n_runs), BAYES_MIN_LOG_ODDS, dtype=torch.float64, device=keys.device)

    fused = _combine(spec, params, values, valid, seg, out_width, runs, weights, fills, borda_norm, n_runs)

    doc_keys = torch.full((rows, out_width), -1, dtype=torch.int64, device=keys.device).scatter_(1, seg, keys)
    doc_keys, fused = doc_keys[:, :-1], fused[:, :-1]
    present = doc_keys >= 0
    order = ranking_order(fused, present)
    return doc_keys.gather(1, order), fused.gather(1, order).masked_fill_(~present.gather(1, order), 0.0)


def _combine(spec, params, values, valid, seg, width, runs, weights, fills, all_present, n_runs) -> torch.Tensor:
    """(R, width) fused score of each segment (see :mod:`gpukit.fusion.methods`).

    ``fills``: a run's value for a candidate it does not rank, counted in
    sums (BordaFuse, BayesFuse, borda normalisation). ``all_present``:
    every run counts as ranking every candidate (borda normalisation), so
    counts are N and max / min / median include the fills."""
    how = spec.combine
    w_entry = weights[runs].masked_fill_(~valid, 0.0) if weights is not None and runs is not None else None
    if how in ("max", "min", "med"):
        return _order_statistic(how, values, valid, seg, width, runs, fills if all_present else None, n_runs)

    def total(x: torch.Tensor, row_w: torch.Tensor | None) -> torch.Tensor:
        """Sum over the runs of a segment: ranked entries, plus fills of the runs absent from it."""
        if fills is None:
            return _seg_sum(seg, x, width)
        entry_fill = fills.gather(1, runs.clamp(min=0)).masked_fill_(~valid, 0.0)
        if row_w is None:
            return _seg_sum(seg, x - entry_fill, width) + fills.sum(1, keepdim=True)
        return _seg_sum(seg, x - entry_fill * w_entry, width) + (fills * row_w).sum(1, keepdim=True)

    if how == "wsum":
        return total(values * w_entry, weights[None, :])
    if how == "mixed":
        summed = total(values * w_entry, weights[None, :])
        return summed * torch.sqrt(_count(valid, seg, width, all_present, n_runs))
    summed = total(values, None)
    if how == "sum":
        return summed
    count = _count(valid, seg, width, all_present, n_runs)
    if how == "mnz":
        return summed * count
    if how == "anz":
        return summed / count.clamp(min=1)
    if how == "gmnz":
        return summed * count.pow(float(params["gamma"]))
    if how == "log_mnz":
        return summed * torch.log(count.clamp(min=1))
    if how == "logn_mnz":
        return summed * torch.log(count + float(params["sigma"]))
    if how == "wmnz":
        weight_sum = weights.sum().expand(summed.shape[0], 1) if all_present else _seg_sum(seg, w_entry, width)
        return summed * weight_sum
    raise AssertionError(f"unknown combination {how!r}")  # pragma: no cover - specs use the names above


def _count(valid, seg, width, all_present, n_runs) -> torch.Tensor:
    if all_present:
        return torch.full((seg.shape[0], 1), float(n_runs), dtype=torch.float64, device=seg.device)
    return _seg_sum(seg, valid.to(torch.float64), width)


def _order_statistic(how, values, valid, seg, width, runs, fills, n_runs) -> torch.Tensor:
    """Max, min or median over the runs ranking each document (with
    ``fills``: over all runs, those not ranking it giving their fill)."""
    rows = seg.shape[0]
    if fills is not None:
        # Dense (R, width, N): each candidate's value in every run.
        dense = fills[:, None, :].expand(rows, width, n_runs).clone()
        row_index = torch.arange(rows, device=seg.device)[:, None].expand_as(seg)
        dense[row_index[valid], seg[valid], runs[valid]] = values[valid]
        if how == "max":
            return dense.amax(2)
        if how == "min":
            return dense.amin(2)
        ordered = dense.sort(2).values
        return (ordered[:, :, (n_runs - 1) // 2] + ordered[:, :, n_runs // 2]) / 2.0
    if how in ("max", "min"):
        reduce = "amax" if how == "max" else "amin"
        return torch.zeros(rows, width, dtype=torch.float64, device=seg.device).scatter_reduce_(1, seg, values, reduce, include_self=False)
    # Median: entries sorted by value within each segment (value sort, then a
    # stable sort by segment), read at the segment's middle one or two.
    by_value = torch.sort(values.masked_fill(~valid, torch.inf), dim=1, stable=True).indices
    seg_v = seg.gather(1, by_value)
    by_seg = torch.sort(seg_v, dim=1, stable=True).indices
    ordered = values.gather(1, by_value).gather(1, by_seg)
    count = _seg_sum(seg, valid.to(torch.int64), width)
    start = torch.cumsum(count, 1) - count  # first column of each segment in ``ordered``
    last = ordered.shape[1] - 1
    low = (start + torch.div(count - 1, 2, rounding_mode="floor")).clamp(0, last)
    high = (start + torch.div(count, 2, rounding_mode="floor")).clamp(0, last)
    return (ordered.gather(1, low) + ordered.gather(1, high)) / 2.0
