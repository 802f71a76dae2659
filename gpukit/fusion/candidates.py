"""Each query's candidates with every run's value for them: (R, U, N) tensors.

Weight optimisation fuses the same runs under many weight vectors (or
parameter values). The per-run values of every candidate document do not
depend on them, so they are laid out once, densely, one column per run:
each configuration's fused scores are then a few tensor ops (a matrix
product for weighted sums) on all configurations at once.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from gpukit.fusion.combine import Entries, segments


@dataclass(frozen=True)
class Candidates:
    """One slice of queries' candidates (U: the slice's largest candidate count).

    Attributes:
        keys: (R, U) int64 doc keys, descending, -1 padding.
        values: (R, U, N) float64 value of the candidate in each run (the
            run's normalised score; for borda values and borda normalisation
            the value of a run that does not rank it too), else 0.
        present: (R, U, N) bool, whether the run ranks the candidate (all
            True under borda normalisation: every run lists every candidate).
        ranks: (R, U, N) float64 0-based rank in each run (inf where absent).
    """

    keys: torch.Tensor
    values: torch.Tensor
    present: torch.Tensor
    ranks: torch.Tensor


def dense_candidates(entries: Entries, n_runs: int, borda: str | None) -> Candidates:
    """The :class:`Candidates` of a slice's entries. ``borda``: ``"norm"`` (borda normalisation: entries' values are
    computed here from ranks), ``"method"`` (BordaFuse points) or ``None``."""
    sg = segments(entries.keys)
    keys, valid, seg = sg.keys, sg.valid, sg.seg
    rows, u = keys.shape[0], sg.width - 1
    n_cand = sg.n_cand
    runs = entries.runs[sg.perm]
    ranks = entries.ranks[sg.perm]
    lengths = entries.lengths.to(torch.float64)
    nc = n_cand.to(torch.float64).clamp(min=1)
    if borda == "norm":
        value = 1.0 - ranks / nc
        fill = 0.5 - (lengths - 1.0) / (2.0 * nc)
    elif borda == "method":
        value = nc - ranks
        fill = (nc - lengths + 1.0) / 2.0
    else:
        value = entries.values.gather(1, sg.perm)
        fill = torch.zeros(rows, n_runs, dtype=torch.float64, device=keys.device)
    row = torch.arange(rows, device=keys.device)[:, None].expand_as(seg)
    r, s, k = row[valid], seg[valid], runs[valid]
    values = fill[:, None, :].expand(rows, u, n_runs).clone()
    values[r, s, k] = value[valid]
    present = torch.zeros(rows, u, n_runs, dtype=torch.bool, device=keys.device)
    present[r, s, k] = True
    rank_table = torch.full((rows, u, n_runs), torch.inf, dtype=torch.float64, device=keys.device)
    rank_table[r, s, k] = ranks[valid]
    doc_keys = torch.full((rows, u), -1, dtype=torch.int64, device=keys.device)
    doc_keys[r, s] = keys[valid]
    if borda is not None:
        # Padding columns (no candidate) keep no value.
        values.masked_fill_((doc_keys < 0)[:, :, None], 0.0)
    if borda == "norm":
        present = (doc_keys >= 0)[:, :, None].expand(rows, u, n_runs)
    return Candidates(doc_keys, values, present, rank_table)
