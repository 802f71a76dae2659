"""Reading several cutoffs off one cumulative sum."""
from __future__ import annotations

from typing import Sequence

import torch

Cutoffs = Sequence[int | None]


def _columns(width: int, cutoffs: Cutoffs) -> list[int]:
    return [width - 1 if k is None else min(int(k), width) - 1 for k in cutoffs]


def prefix_at(cumulative: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """Values of a row-wise cumulative sum at rank ``k`` for each cutoff.

    ``cumulative[:, i]`` holds the sum over ranks 1..i+1. A cutoff beyond the
    row's width (or ``None``) reads the last column: ranks past the end of a
    ranking add nothing. Returns (Q, len(cutoffs)): for one cutoff a view of
    that column (no copy), else a new tensor.

    The columns are stacked from views: one kernel and no index tensor
    built from host data (a host-to-device copy on every call, which a CUDA
    graph cannot capture).
    """
    q, width = cumulative.shape
    if width == 0:
        return cumulative.new_zeros((q, len(cutoffs)))
    if not cutoffs:
        return cumulative.new_empty((q, 0))
    columns = _columns(width, cutoffs)
    if len(columns) == 1:
        return cumulative[:, columns[0] : columns[0] + 1]
    return torch.stack([cumulative[:, c] for c in columns], dim=1)


def ordered_prefix_at(values: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """Row sums of ranks 1..k for each cutoff, added strictly left to right.

    Floating-point addition is not associative, so the order is fixed on
    every device and runs stay bitwise reproducible: the CPU's ``cumsum(1)``
    is a sequential running sum per row. On other devices the row scan is a
    parallel one, so the (K, Q) transpose is scanned along dim 0 instead:
    CUDA's scan over an outer dimension walks each column sequentially
    (one thread per query, in rank order), which gives the CPU's sums bit
    for bit in O(1) kernels (a copy, a scan, a gather). Returns
    (Q, len(cutoffs)).
    """
    q, width = values.shape
    if width == 0:
        return values.new_zeros((q, len(cutoffs)))
    if values.device.type == "cpu":
        return prefix_at(values.cumsum(1), cutoffs)
    return outer_scan_prefix_at(values, cutoffs)


def ordered_prefix_at_(values: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """:func:`ordered_prefix_at` that may overwrite ``values`` (a temporary of
    the caller's): on the CPU the running sum is taken in place, the same
    sequential sums without a second (Q, K) table."""
    if values.device.type == "cpu" and values.shape[1] > 0:
        return prefix_at(values.cumsum_(1), cutoffs)
    return ordered_prefix_at(values, cutoffs)


def outer_scan_prefix_at(values: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """The device path of :func:`ordered_prefix_at` (usable on any device).

    Only the columns up to the largest cutoff are scanned.
    """
    q, width = values.shape
    if width == 0 or not cutoffs:
        return values.new_zeros((q, len(cutoffs)))
    stop = max(_columns(width, cutoffs)) + 1
    scanned = values[:, :stop].t().contiguous().cumsum(0)  # (stop, Q): rank-major
    return prefix_at(scanned.t(), cutoffs)


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
    if numerator.is_floating_point() and not denominator.is_floating_point() and denominator.dtype != torch.bool:
        # A count (R, k, retrieved...): where it is > 0 it is >= 1, so it needs
        # no clamp, and true division converts it to the numerator's type as
        # an explicit cast would; the quotients where it is 0 (inf, nan) are
        # not selected. Three ops instead of five, the same values.
        return torch.where(denominator > 0, numerator / denominator, 0.0)
    denominator = denominator.to(numerator.dtype)
    return torch.where(denominator > 0, numerator / denominator.clamp(min=1e-300), 0.0)
