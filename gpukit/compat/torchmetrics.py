"""torchmetrics / Lightning retrieval metrics computed by gpukit (extra ``torchmetrics``).

``RetrievalNormalizedDCG``, ``RetrievalMAP``, ``RetrievalMRR``,
``RetrievalPrecision``, ``RetrievalRecall``, ``RetrievalHitRate`` and
``RetrievalRPrecision`` take torchmetrics' arguments (``top_k``,
``empty_target_action``, ``ignore_index``, ``adaptive_k``) and its
``update(preds, target, indexes)``, and subclass ``torchmetrics.Metric``, so
``self.log("val/ndcg", metric)`` works in Lightning.

State: fixed-size and exact. Instead of torchmetrics' lists of every
prediction (gathered to one process at ``compute``), each metric holds the
sum of its per-query values as a fixed-point number in four int64 limbs
(:func:`gpukit.pipelines.streaming.to_fixed_point`, the state of
:class:`gpukit.RetrievalEvaluator`), the count of queries with a relevant
candidate and the count of queries without one. All three are int64 with
``dist_reduce_fx="sum"``: integer sums do not depend on the order or the
split, so under DDP ``compute()`` returns exactly what one process fed
every batch returns.

Grouping by ``indexes``: a query's value needs all its candidates, so
**each query's rows must come in one update call** (they may be anywhere in
the batch: rows are grouped by a stable sort on ``indexes``). A query id
seen in an earlier update of this metric raises :class:`GpukitError` (as
``RetrievalEvaluator.update_run`` does); ``reset()`` starts over. Under DDP,
shard by query (each query to one rank; beware a ``DistributedSampler``
that pads by repeating items); ranks do not check each other's ids.

gpukit's conventions, and where torchmetrics 1.9 differs:

* Ranking: candidates by score descending; ties broken by row order within
  the update (earlier row first). torchmetrics' nDCG averages DCG over tied
  groups; its other metrics take ``topk``'s arbitrary order.
* Grades: integer (or integral float/bool) ``target``; relevant means grade
  >= 1; nDCG's gain is the grade (DCG = sum_i g_i / log2(i + 1)), the ideal
  ranking is the query's candidates sorted by grade (as torchmetrics);
  negative grades are candidates without judgment (count as not relevant,
  out of the ideal ranking), where torchmetrics uses them as negative gains.
* Scores <= 0: ranked like any score. torchmetrics' MAP, MRR, Precision and
  Recall count a candidate with score <= 0 as not retrieved.
* ``MAP(top_k=k)`` is AP@k = (1/R) sum_{i<=k, rel_i} P@i with R the
  query's relevant candidates (trec_eval's map_cut, ir_measures' AP@k);
  torchmetrics divides by the relevant candidates within the top k.
* ``Precision``: P@k = (relevant in top k) / k, also when a query has fewer
  than k candidates (as torchmetrics); ``adaptive_k=True`` divides by
  min(k, n); ``top_k=None`` is relevant / n (n = the query's candidates).
* ``empty_target_action`` (a query with no relevant candidate): ``"neg"``
  counts it as 0, ``"pos"`` as 1, ``"skip"`` leaves it out (0.0 when every
  query is left out), ``"error"`` raises at ``compute`` -- torchmetrics'
  meanings. ``"skip"`` is gpukit's own convention (R = 0 leaves a query out).
* ``compute()`` is the exact rational mean rounded once, a float64 tensor;
  ``aggregation`` other than ``"mean"`` is refused (a median needs every
  value, which fixed-size state does not keep).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torchmetrics import Metric

from gpukit.errors import GpukitError, UsageError
from gpukit.evaluation import compute_measures
from gpukit.measures import Measure, parse_measures
from gpukit.pipelines.streaming import LIMBS, dense_ranking, from_fixed_point, to_fixed_point

__all__ = [
    "RetrievalHitRate", "RetrievalMAP", "RetrievalMRR", "RetrievalNormalizedDCG",
    "RetrievalPrecision", "RetrievalRPrecision", "RetrievalRecall",
]

EMPTY_TARGET_ACTIONS = ("error", "skip", "neg", "pos")


def group_by_query(preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Flat rows -> dense (G, N) scores and grades, (G,) candidate counts, (G,) query ids.

    Rows are stably sorted by ``indexes``; row order within a query is kept
    (it is the tie order). Padding is score -inf and grade -1 (a candidate
    without judgment: ranks last, never relevant, out of the ideal ranking),
    and each query's ``num_ret`` is its own count, so padding changes no value.
    One host synchronisation: the number of queries and the largest query.
    """
    order = torch.sort(indexes, stable=True).indices
    idx, scores, grades = indexes[order], preds[order], target[order]
    qids, counts = torch.unique_consecutive(idx, return_counts=True)
    groups, width = int(qids.numel()), int(counts.max())
    starts = torch.cumsum(counts, 0) - counts
    row = torch.repeat_interleave(torch.arange(groups, device=idx.device), counts)
    col = torch.arange(idx.numel(), device=idx.device) - starts[row]
    dense_scores = torch.full((groups, width), -torch.inf, dtype=scores.dtype, device=scores.device)
    dense_grades = torch.full((groups, width), -1, dtype=torch.int32, device=grades.device)
    dense_scores[row, col] = scores
    dense_grades[row, col] = grades
    return dense_scores, dense_grades, counts, qids


class _GpukitRetrievalMetric(Metric):
    """Shared state and update; subclasses name their gpukit measure."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(
        self,
        empty_target_action: str = "neg",
        ignore_index: int | None = None,
        top_k: int | None = None,
        aggregation: str = "mean",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if empty_target_action not in EMPTY_TARGET_ACTIONS:
            raise UsageError(f"empty_target_action must be one of {', '.join(EMPTY_TARGET_ACTIONS)}; got {empty_target_action!r}")
        if ignore_index is not None and not isinstance(ignore_index, int):
            raise UsageError(f"ignore_index must be an integer or None; got {ignore_index!r}")
        if top_k is not None and not (isinstance(top_k, int) and not isinstance(top_k, bool) and top_k > 0):
            raise UsageError(f"top_k must be a positive integer or None; got {top_k!r}")
        if aggregation != "mean":
            raise UsageError(f"aggregation={aggregation!r}: only 'mean' can be kept in fixed-size exact state")
        self.empty_target_action = empty_target_action
        self.ignore_index = ignore_index
        self.top_k = top_k
        self.add_state("value_sum", default=torch.zeros(LIMBS, dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("nonempty", default=torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("empty", default=torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        # Query ids already fed (host bookkeeping, not metric state): a query must come whole, once.
        self._seen: set[int] = set()

    #: The gpukit family; ``@top_k`` is appended when top_k is given.
    family = ""

    # ------------------------------------------------------------ per class
    def _measures(self, width: int) -> list[Measure]:
        return parse_measures([self.family if self.top_k is None else f"{self.family}@{self.top_k}"])

    def _values(self, computed: dict[Measure, tuple[torch.Tensor, torch.Tensor]], measures: list[Measure], counts: torch.Tensor) -> torch.Tensor:
        """(G,) float64 per-query values; default: the single measure's."""
        return computed[measures[0]][0]

    # ----------------------------------------------------------- updates
    def _check(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if indexes is None or indexes.shape != preds.shape or preds.shape != target.shape:
            raise UsageError("indexes, preds and target must be tensors of the same shape")
        if indexes.dtype != torch.long:
            raise UsageError(f"indexes must be a tensor of long integers; got {indexes.dtype}")
        if not preds.is_floating_point():
            raise UsageError(f"preds must be floating point; got {preds.dtype}")
        indexes, preds, target = indexes.flatten(), preds.flatten(), target.flatten()
        if self.ignore_index is not None:
            keep = target != self.ignore_index
            indexes, preds, target = indexes[keep], preds[keep], target[keep]
        if indexes.numel() == 0:
            raise UsageError("indexes, preds and target must be non-empty")
        if target.is_floating_point():
            # Grades are integers (gpukit's kernels); integral floats such as 0./1. are accepted.
            if bool((target != torch.round(target)).any()):
                raise UsageError("target must hold integer grades (integral values)")
            target = target.to(torch.int64)
        elif target.is_complex():
            raise UsageError(f"target must hold integer grades; got {target.dtype}")
        if bool(((target > 2**31 - 1) | (target < -(2**31))).any()):
            raise UsageError("target grades must fit in int32")
        preds = torch.where(torch.isnan(preds), torch.full_like(preds, -torch.inf), preds)
        return preds, target.to(torch.int32), indexes

    def update(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> None:  # type: ignore[override]
        """Add the queries of one batch; every query's rows must be in this call."""
        self._update(preds, target, indexes)

    def _update(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> None:
        preds, target, indexes = self._check(preds, target, indexes)
        scores, grades, counts, qids = group_by_query(preds, target, indexes)
        ids = qids.tolist()
        again = self._seen.intersection(ids)
        if again:
            shown = ", ".join(str(q) for q in sorted(again)[:5]) + (f" and {len(again) - 5} more" if len(again) > 5 else "")
            raise GpukitError(
                f"{type(self).__name__}.update: query index(es) {shown} already came in an earlier update; "
                "each query's rows must come in one update call (reset() starts over)"
            )
        self._seen.update(ids)
        measures = self._measures(scores.shape[1])
        ranking = dense_ranking(scores, grades, measures)
        # num_ret is each query's own candidate count (SetP reads it), not the padded width.
        ranking = dataclasses.replace(ranking, num_ret=counts.to(torch.int64))
        values = self._values(compute_measures(ranking, measures), measures, counts)
        has_relevant = (grades >= 1).any(dim=1)
        limbs = to_fixed_point(torch.where(has_relevant, values, torch.zeros_like(values))).sum(0)
        self.value_sum += limbs.to(self.value_sum.device)
        nonempty = has_relevant.sum().to(self.nonempty.device)
        self.nonempty += nonempty
        self.empty += len(ids) - nonempty

    def forward(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        """Update, and return this batch's value (from the state increment, with no reset,
        so the query-id check spans the whole epoch)."""
        before = (self.value_sum.clone(), self.nonempty.clone(), self.empty.clone())
        self.update(preds, target, indexes)
        self._forward_cache = self._mean(self.value_sum - before[0], self.nonempty - before[1], self.empty - before[2])
        return self._forward_cache

    def reset(self) -> None:
        super().reset()
        self._seen = set()

    # ----------------------------------------------------------- results
    def _mean(self, value_sum: torch.Tensor, nonempty: torch.Tensor, empty: torch.Tensor) -> torch.Tensor:
        total = from_fixed_point(value_sum.tolist())
        good, bad = int(nonempty), int(empty)
        if bad and self.empty_target_action == "error":
            raise GpukitError(f"{type(self).__name__}: {bad} quer{'ies have' if bad > 1 else 'y has'} no relevant candidate (empty_target_action='error')")
        if self.empty_target_action == "skip":
            mean = total / good if good else 0
        else:
            mean = (total + (bad if self.empty_target_action == "pos" else 0)) / (good + bad) if good + bad else 0
        return torch.tensor(float(mean), dtype=torch.float64, device=value_sum.device)

    def compute(self) -> torch.Tensor:
        """The mean over every query seen (all ranks, after torchmetrics' sync)."""
        return self._mean(self.value_sum, self.nonempty, self.empty)


class RetrievalNormalizedDCG(_GpukitRetrievalMetric):
    """nDCG@k = DCG@k / IDCG@k, DCG@k = sum_{i<=k} g_i / log2(i + 1), g = grade, ideal from the query's candidates."""

    family = "nDCG"


class RetrievalMAP(_GpukitRetrievalMetric):
    """AP@k = (1/R) sum_{i<=k, rel_i} P@i, R = relevant candidates of the query (torchmetrics: relevant in the top k)."""

    family = "AP"


class RetrievalMRR(_GpukitRetrievalMetric):
    """RR@k = 1 / rank of the first relevant candidate within the top k (0 if none)."""

    family = "RR"


class RetrievalRecall(_GpukitRetrievalMetric):
    """R@k = (relevant in the top k) / R."""

    family = "R"


class RetrievalHitRate(_GpukitRetrievalMetric):
    """Success@k = 1 if a relevant candidate is in the top k, else 0."""

    def _measures(self, width: int) -> list[Measure]:
        # top_k=None: every candidate, i.e. the padded width.
        return parse_measures([f"Success@{self.top_k or width}"])


class RetrievalRPrecision(_GpukitRetrievalMetric):
    """Rprec = (relevant in the top R) / R."""

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None, **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, **kwargs)

    family = "Rprec"


class RetrievalPrecision(_GpukitRetrievalMetric):
    """P@k = (relevant in the top k) / k; ``adaptive_k``: / min(k, n); ``top_k=None``: relevant / n."""

    def __init__(
        self,
        empty_target_action: str = "neg",
        ignore_index: int | None = None,
        top_k: int | None = None,
        adaptive_k: bool = False,
        aggregation: str = "mean",
        **kwargs: Any,
    ) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k, aggregation=aggregation, **kwargs)
        if not isinstance(adaptive_k, bool):
            raise UsageError(f"adaptive_k must be a bool; got {adaptive_k!r}")
        self.adaptive_k = adaptive_k

    def _measures(self, width: int) -> list[Measure]:
        # SetP = relevant retrieved / num_ret, with num_ret = the query's candidates.
        return parse_measures(["SetP"] if self.top_k is None else [f"P@{self.top_k}", "SetP"])

    def _values(self, computed, measures, counts):
        if self.top_k is None:
            return computed[measures[0]][0]
        at_k, whole = computed[measures[0]][0], computed[measures[1]][0]
        if not self.adaptive_k:
            return at_k
        return torch.where(counts.to(at_k.device) < self.top_k, whole, at_k)
