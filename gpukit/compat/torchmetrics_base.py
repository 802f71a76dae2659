"""Shared base of :mod:`gpukit.compat.torchmetrics`: argument checks, state, update, empty targets, aggregation.

State (all ``dist_reduce_fx="cat"`` lists of tensors, so torchmetrics' DDP
sync, ``forward`` and ``merge_state`` concatenate them):

* raw rows ``(index, pred, target)`` as ``update`` received them (after
  ``ignore_index``): everything, without a cutoff, as torchmetrics keeps.
* with a cutoff (``top_k`` / ``max_k``), what compactions kept: each query's
  top-k buffer (:func:`~gpukit.compat.torchmetrics_state.keep_top`: k rows,
  plus rows tied with the k-th pred), its counters ``(index, candidates, sum
  of targets)`` over every row compacted, and for nDCG its k largest targets.
  An update compacts the raw rows into these once they outnumber both the
  buffer and 2^20 rows, so the state never exceeds the buffer's bound (k
  rows per query, plus ties) plus max(that bound, 2^20 rows) plus one batch.

A query may come in any number of updates and processes: ``compute`` merges
raw and compacted parts of each query without changing the state. The merge
depends only on the multiset of rows (canonical order, integer counters),
so the result does not depend on how rows were split between updates or
ranks, nor on when compactions happened.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from gpukit.compat import torchmetrics_state as state
from gpukit.errors import UsageError
from gpukit.pipelines.streaming import from_fixed_point, to_fixed_point

EMPTY_TARGET_ACTIONS = ("error", "skip", "neg", "pos")
AGGREGATIONS = ("mean", "median", "min", "max")
_RAW = ("raw_index", "raw_preds", "raw_target")
_ROWS = ("rows_index", "rows_preds", "rows_target")
_COUNTERS = ("query_index", "query_candidates", "query_target_sum")
_IDEAL = ("ideal_index", "ideal_target")
#: Raw rows are compacted only past this many (smaller states are not worth the sorts).
COMPACT_MIN_ROWS = 1 << 20


def check_cutoff(name: str, value: Any) -> int | None:
    if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        raise UsageError(f"{name} must be a positive integer or None; got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{name} must be a bool; got {value!r}")
    return value


def aggregate(values: torch.Tensor, aggregation: str | Callable, dim: int | None = None) -> torch.Tensor:
    """torchmetrics' ``_retrieval_aggregate`` on float64 per-query values.

    ``"mean"`` is the exact rational mean (fixed-point sum) rounded once;
    ``"median"`` is torch's lower median; a callable gets ``(values, dim=dim)``.
    """
    if aggregation == "mean":
        limbs = to_fixed_point(values).sum(0)
        count = values.shape[0]
        if limbs.dim() == 1:
            return torch.tensor(float(from_fixed_point(limbs.tolist()) / count), dtype=torch.float64, device=values.device)
        return torch.tensor([float(from_fixed_point(row) / count) for row in limbs.tolist()], dtype=torch.float64, device=values.device)
    if aggregation in ("median", "min", "max"):
        reduce = getattr(torch, aggregation)
        return reduce(values) if dim is None else reduce(values, dim=dim).values
    return aggregation(values, dim=dim)


class RetrievalBase(Metric):
    """Rows grouped by ``indexes``; subclasses give ``_values`` (per-query) and the cutoff of their buffer."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    #: Targets other than 0/1 allowed (nDCG's gains).
    graded = False
    #: Keep each query's largest targets (nDCG's ideal ranking).
    needs_ideal = False
    #: Queries "empty" for empty_target_action: without a target (FallOut: without a non-target).
    empty_means = "no target"

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 aggregation: str | Callable = "mean", cutoff: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if empty_target_action not in EMPTY_TARGET_ACTIONS:
            raise UsageError(f"empty_target_action must be one of {', '.join(EMPTY_TARGET_ACTIONS)}; got {empty_target_action!r}")
        if ignore_index is not None and (not isinstance(ignore_index, int) or isinstance(ignore_index, bool)):
            raise UsageError(f"ignore_index must be an integer or None; got {ignore_index!r}")
        if not (aggregation in AGGREGATIONS or callable(aggregation)):
            raise UsageError(f"aggregation must be one of {', '.join(AGGREGATIONS)} or a callable; got {aggregation!r}")
        self.empty_target_action = empty_target_action
        self.ignore_index = ignore_index
        self.aggregation = aggregation
        self._cutoff = cutoff
        compacted = () if cutoff is None else _ROWS + _COUNTERS + (_IDEAL if self.needs_ideal else ())
        for name in _RAW + compacted:
            self.add_state(name, default=[], dist_reduce_fx="cat")

    # ----------------------------------------------------------- updates
    def _check(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if not all(isinstance(t, torch.Tensor) for t in (preds, target, indexes)) or indexes.shape != preds.shape or preds.shape != target.shape:
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
        if target.is_complex():
            raise UsageError(f"target must hold integers; got {target.dtype}")
        if target.is_floating_point() and bool((target != torch.round(target)).any()):
            raise UsageError("target must hold integral values (0/1, or integer gains for nDCG)")
        target = target.to(torch.int64)
        if not self.graded and bool(((target < 0) | (target > 1)).any()):
            raise UsageError(f"{type(self).__name__}: target must be binary (0/1 or bool)")
        # torchmetrics ranks float32 preds: float64 preds that round to the same float32 tie there, and here.
        preds = preds.to(torch.float32)
        if bool(torch.isnan(preds).any()):
            raise UsageError("preds must not contain NaN")
        return preds, target, indexes

    def update(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> None:  # type: ignore[override]
        """Add rows; a query's rows may be spread over any number of updates."""
        preds, target, indexes = self._check(preds, target, indexes)
        for name, value in zip(_RAW, (indexes, preds, target)):
            getattr(self, name).append(value)
        if self._cutoff is not None and isinstance(self.raw_index, list):
            raw = sum(part.numel() for part in self.raw_index)
            kept = sum(part.numel() for part in self.rows_index) if isinstance(self.rows_index, list) else self.rows_index.numel()
            if raw > max(kept, COMPACT_MIN_ROWS):
                self._compact()

    def _merged(self) -> tuple[tuple, tuple | None, tuple | None]:
        """(rows, counters, ideal rows) of raw and compacted state together, not yet cut
        (counters None without a cutoff: every row is there to count)."""
        raw = tuple(dim_zero_cat(getattr(self, name)) if len(getattr(self, name)) else None for name in _RAW)
        if raw[0] is None and self._cutoff is None:
            raise UsageError(f"{type(self).__name__}.compute() before any update")

        def joined(names, extra):
            parts = [dim_zero_cat(getattr(self, name)) if len(getattr(self, name)) else None for name in names]
            if parts[0] is None:
                return extra
            return parts if extra is None else tuple(torch.cat([p, e]) for p, e in zip(parts, extra))

        if self._cutoff is None:
            return raw, None, (raw[0], raw[2]) if self.needs_ideal else None
        rows = joined(_ROWS, raw if raw[0] is not None else None)
        if rows is None:
            raise UsageError(f"{type(self).__name__}.compute() before any update")
        counters = joined(_COUNTERS, state.query_counters(raw[0], raw[2]) if raw[0] is not None else None)
        ideal = joined(_IDEAL, (raw[0], raw[2]) if raw[0] is not None else None) if self.needs_ideal else None
        return rows, counters, ideal

    def _compact(self) -> None:
        """Raw rows into the top-k buffer, the counters and the ideal targets."""
        rows, counters, ideal = self._merged()
        for names, values in ((_ROWS, state.keep_top(*rows, self._cutoff)), (_COUNTERS, state.merge_counters(*counters)),
                              (_IDEAL, state.keep_largest_targets(*ideal, self._cutoff) if ideal is not None else ())):
            for name, value in zip(names, values):
                setattr(self, name, [value])
        for name in _RAW:
            setattr(self, name, [])

    # ----------------------------------------------------------- compute
    def _ranked(self, width: int | None = None) -> state.Ranked:
        """The merged state, every query's buffer dense and ranked (after torchmetrics' sync)."""
        rows, counters, ideal = self._merged()
        return state.build_ranked(rows, counters, self._cutoff, ideal, width)

    def _empty(self, r: state.Ranked) -> torch.Tensor:
        """(G,) bool: the queries empty_target_action applies to."""
        if self.empty_means == "no non-target":
            return r.candidates - r.target_sum == 0
        return r.target_sum == 0

    def _resolve_empty(self, values: torch.Tensor, empty: torch.Tensor) -> torch.Tensor:
        """Per-query values with empty queries set to 0 ("neg") or 1 ("pos"), left out ("skip") or refused ("error")."""
        if self.empty_target_action == "error" and bool(empty.any()):
            count = int(empty.sum())
            raise UsageError(f"{type(self).__name__}: {count} quer{'ies have' if count > 1 else 'y has'} {self.empty_means} (empty_target_action='error')")
        if self.empty_target_action == "skip":
            return values[~empty]
        fill = 1.0 if self.empty_target_action == "pos" else 0.0
        mask = empty.view(-1, *([1] * (values.dim() - 1)))
        return torch.where(mask, torch.full_like(values, fill), values)

    def _values(self, r: state.Ranked) -> torch.Tensor:
        raise NotImplementedError

    def compute(self) -> torch.Tensor:
        """The aggregated per-query value over every query seen; 0.0 if every query is skipped."""
        r = self._ranked()
        values = self._resolve_empty(self._values(r), self._empty(r))
        if values.numel() == 0:
            return torch.tensor(0.0, dtype=torch.float64, device=values.device)
        return aggregate(values, self.aggregation)
