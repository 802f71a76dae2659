"""Measures of the ranking itself rather than of relevance."""
from __future__ import annotations

import torch

from gpukit.metrics.cutoffs import Cutoffs, cutoff_values, prefix_at, truncate


def judged_share(judged: torch.Tensor, num_ret: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """ir_measures' Judged@k = |judged documents in the top k| / min(k, n), n retrieved (no cutoff: k = n);
    0 for an empty ranking. (Q, C)."""
    counts = prefix_at(truncate(judged, cutoffs).cumsum(1, dtype=torch.int32), cutoffs).to(torch.float64)
    read = torch.minimum(cutoff_values(cutoffs, num_ret), num_ret.to(torch.float64)[:, None])
    return counts / read.clamp(min=1)


def judged_at_k(judged: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """Judged@k = |judged documents in the top k| / k, (Q, C)."""
    judged = truncate(judged, cutoffs)
    k = cutoff_values(cutoffs, torch.full((judged.shape[0],), judged.shape[1], device=judged.device))
    return prefix_at(judged.cumsum(1, dtype=torch.int32), cutoffs).to(torch.float64) / k.clamp(min=1)
