"""torchmetrics' ``RetrievalPrecisionRecallCurve`` and ``RetrievalRecallAtFixedPrecision`` on gpukit's state.

Per query, for k = 1..max_k (``max_k`` None: the largest query's candidate
count): hits@k = targets among the first k candidates (any pred; ties the
less relevant first), recall@k = hits@k / (the query's targets),
precision@k = hits@k / k, or hits@k / min(k, n) with ``adaptive_k``. Empty
queries (no target) are curves of 0 ("neg"), of 1 ("pos"), left out
("skip") or refused ("error"). The curves are aggregated over queries at
each k (``aggregation``, "mean" exact); the result is ``(precision, recall,
top_k)``, top_k = 1..max_k.

``RetrievalRecallAtFixedPrecision(min_precision)``: on the aggregated
curves, the largest recall among the k whose precision >= min_precision, and
the largest such k; ``(0.0, max_k)`` if none or if that recall is 0.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gpukit.compat import torchmetrics_kernels as kernels
from gpukit.compat.torchmetrics_base import (
    RetrievalBase,
    aggregate,
    check_bool,
    check_cutoff,
)
from gpukit.errors import UsageError


class RetrievalPrecisionRecallCurve(RetrievalBase):
    """Mean (or other aggregation) precision@k and recall@k for k = 1..max_k."""

    def __init__(self, max_k: int | None = None, adaptive_k: bool = False, empty_target_action: str = "neg",
                 ignore_index: int | None = None, aggregation: str | Callable = "mean", **kwargs: Any) -> None:
        self.max_k = check_cutoff("max_k", max_k)
        self.adaptive_k = check_bool("adaptive_k", adaptive_k)
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, aggregation=aggregation, cutoff=max_k, **kwargs)

    def compute(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # type: ignore[override]
        r = self._ranked(width=self.max_k)
        max_k = self.max_k if self.max_k is not None else int(r.candidates.max())
        hits = kernels.cumulative_hits(r, max_k)
        k = torch.arange(1, max_k + 1, device=hits.device)
        denominator = torch.minimum(k, r.candidates[:, None]) if self.adaptive_k else k.expand_as(hits)
        empty = self._empty(r)
        precision = self._resolve_empty(hits / denominator.to(torch.float64), empty)
        recall = self._resolve_empty(hits / r.target_sum[:, None].to(torch.float64), empty)
        if precision.shape[0] == 0:
            zeros = torch.zeros(max_k, dtype=torch.float64, device=hits.device)
            return zeros, zeros.clone(), k
        return aggregate(precision, self.aggregation, dim=0), aggregate(recall, self.aggregation, dim=0), k


class RetrievalRecallAtFixedPrecision(RetrievalPrecisionRecallCurve):
    """(largest recall@k with precision@k >= min_precision, its largest k) on the aggregated curves."""

    def __init__(self, min_precision: float = 0.0, max_k: int | None = None, adaptive_k: bool = False,
                 empty_target_action: str = "neg", ignore_index: int | None = None, **kwargs: Any) -> None:
        if not (isinstance(min_precision, float) and 0.0 <= min_precision <= 1.0):
            raise UsageError(f"min_precision must be a float in [0, 1]; got {min_precision!r}")
        self.min_precision = min_precision
        super().__init__(max_k=max_k, adaptive_k=adaptive_k, empty_target_action=empty_target_action, ignore_index=ignore_index, **kwargs)

    def compute(self) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        precision, recall, k = super().compute()
        admissible = precision >= self.min_precision
        best = torch.where(admissible, recall, torch.full_like(recall, -1.0)).max()
        if not bool(admissible.any()) or float(best) == 0.0:
            return torch.zeros((), dtype=torch.float64, device=recall.device), torch.tensor(k.numel(), device=k.device)
        # Ties in recall go to the largest k (torchmetrics' max over (recall, k) pairs).
        return best, k[admissible & (recall == best)].max()
