"""Reading several cutoffs off one cumulative sum."""
from __future__ import annotations

from typing import Sequence

import torch

Cutoffs = Sequence[int | None]


def prefix_at(cumulative: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """Values of a row-wise cumulative sum at rank ``k`` for each cutoff.

    ``cumulative[:, i]`` holds the sum over ranks 1..i+1. A cutoff beyond the
    row's width (or ``None``) reads the last column: ranks past the end of a
    ranking add nothing. Returns (Q, len(cutoffs)).
    """
    q, width = cumulative.shape
    if width == 0:
        return cumulative.new_zeros((q, len(cutoffs)))
    cols = [width - 1 if k is None else min(int(k), width) - 1 for k in cutoffs]
    index = torch.tensor(cols, device=cumulative.device, dtype=torch.int64)
    return cumulative.index_select(1, index)


def ordered_prefix_at(values: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """Row sums of ranks 1..k for each cutoff, added strictly left to right.

    Floating-point addition is not associative, so the order is fixed on
    every device to make CPU and CUDA results bitwise identical: CPU's cumsum
    is a sequential running sum already; CUDA's is a parallel scan, so there
    the columns are added one at a time (K small kernels, graph-capturable).
    Returns (Q, len(cutoffs)).
    """
    q, width = values.shape
    if width == 0:
        return values.new_zeros((q, len(cutoffs)))
    if values.device.type == "cpu":
        return prefix_at(values.cumsum(1), cutoffs)
    return column_by_column_prefix_at(values, cutoffs)


def column_by_column_prefix_at(values: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """The device path of :func:`ordered_prefix_at` (usable on any device)."""
    q, width = values.shape
    last = [width if k is None else min(int(k), width) for k in cutoffs]
    out = values.new_empty((q, len(cutoffs)))
    total = torch.zeros_like(values[:, 0])
    for col in range(max(last)):
        total = total + values[:, col]
        for c, stop in enumerate(last):
            if stop == col + 1:
                out[:, c] = total
    return out


def cutoff_values(cutoffs: Cutoffs, fallback: torch.Tensor) -> torch.Tensor:
    """(Q, C) float64 tensor of the cutoffs, ``None`` replaced by ``fallback`` (Q,)."""
    cols = [fallback.to(torch.float64) if k is None else torch.full_like(fallback, k, dtype=torch.float64) for k in cutoffs]
    return torch.stack(cols, dim=1) if cols else fallback.new_zeros((fallback.shape[0], 0), dtype=torch.float64)


def truncate(ranked: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """Drop the columns no cutoff can reach (saves work for small k)."""
    if any(k is None for k in cutoffs) or not cutoffs:
        return ranked
    return ranked[:, : max(int(k) for k in cutoffs)]  # type: ignore[arg-type]


def safe_divide(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """numerator / denominator, 0 where the denominator is 0 (trec_eval's rule)."""
    denominator = denominator.to(numerator.dtype)
    return torch.where(denominator > 0, numerator / denominator.clamp(min=1e-300), torch.zeros_like(numerator))
