"""User-model measures: expected reciprocal rank (ERR@k).

Inputs are padded (Q, K) ranked grades (padding and unjudged: grade < 0).
The product over ranks and the sum over ranks run left to right on every
device (``ordered_cumprod``, ``ordered_prefix_at``).
"""
from __future__ import annotations

import torch

from gpukit.metrics.cutoffs import Cutoffs, ordered_prefix_at, truncate
from gpukit.metrics.trec_graded import ordered_cumprod


def stop_probabilities(grades: torch.Tensor, max_grade: int) -> torch.Tensor:
    """R_i = (2^g - 1) / 2^max_grade for grade g > 0 (g capped at max_grade), else 0; (Q, K) float64."""
    g = grades.clamp(min=0, max=max_grade).to(torch.float64)
    return torch.exp2(g).sub_(1.0).div_(2.0**max_grade)


def expected_reciprocal_rank(grades: torch.Tensor, max_grade: int, cutoffs: Cutoffs) -> torch.Tensor:
    """ERR@k = sum_{i<=k} R_i * prod_{j<i} (1 - R_j) / i (Chapelle et al. 2009; gdeval), (Q, C)."""
    grades = truncate(grades, cutoffs)
    stop = stop_probabilities(grades, max_grade)
    # Reaching rank i: every document above it failed to satisfy the user.
    reach = ordered_cumprod(1.0 - stop)
    reach = torch.cat([torch.ones_like(reach[:, :1]), reach[:, :-1]], dim=1)
    ranks = torch.arange(1, grades.shape[1] + 1, dtype=torch.float64, device=grades.device)
    return ordered_prefix_at(stop * reach / ranks, cutoffs)
