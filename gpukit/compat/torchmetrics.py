"""torchmetrics / Lightning retrieval metrics computed by gpukit (extra ``torchmetrics``).

Drop-ins for torchmetrics 1.9's ``torchmetrics.retrieval`` classes:
``RetrievalMAP``, ``RetrievalMRR``, ``RetrievalPrecision``,
``RetrievalRecall``, ``RetrievalFallOut``, ``RetrievalHitRate``,
``RetrievalNormalizedDCG``, ``RetrievalRPrecision``, ``RetrievalAUROC`` and
(in :mod:`gpukit.compat.torchmetrics_curves`)
``RetrievalPrecisionRecallCurve`` and ``RetrievalRecallAtFixedPrecision``:
the same arguments (``empty_target_action``, ``ignore_index``, ``top_k``,
``adaptive_k``, ``max_fpr``, ``max_k``, ``min_precision``, ``aggregation``
"mean"/"median"/"min"/"max"/callable), the same ``update(preds, target,
indexes)``, subclasses of ``torchmetrics.Metric`` (``self.log`` works in
Lightning). A query's candidates may come in any number of updates, in any
order, on any ranks: ``compute`` groups them by ``indexes``.

Values are torchmetrics' definitions (``torchmetrics/functional/retrieval``),
computed for all queries at once instead of a loop over queries:

* MAP, MRR, Precision and Recall count a candidate scoring <= 0 as not
  retrieved; ``MAP(top_k=k)`` divides by the targets found in the top k.
* nDCG averages the gain over tied preds (independent of order); its gain is
  the target (any integer, negative too); IDCG ranks the query's targets.
* Empty query (no target; FallOut: no non-target): ``"neg"`` 0, ``"pos"`` 1,
  ``"skip"`` left out (0.0 if every query is), ``"error"`` raises at compute.
* preds are ranked as float32, as torchmetrics casts them.

Where gpukit differs from torchmetrics:

* **Ties.** torchmetrics orders tied preds with ``torch.topk`` /
  ``torch.argsort`` (not stable: the order of tied rows differs between CPU
  and CUDA, torch versions and batch layouts), so where a tie straddles a
  cutoff, or tied candidates differ in target within MAP/MRR/the curves, its
  value is not defined by its inputs. gpukit ranks tied candidates the less
  relevant first (pessimistic), the same on every device and split. Values
  equal torchmetrics' wherever ties do not change them (nDCG always;
  Precision/Recall/HitRate/FallOut/AUROC without a cutoff).
* ``target`` must be integral (torchmetrics also takes fractional floats);
  preds must not be NaN.
* Results are float64; ``aggregation="mean"`` is the exact rational mean
  rounded once. A callable aggregation receives float64 per-query values.
* Errors are :class:`gpukit.errors.UsageError` (a ``ValueError``).

State: bounded by the cutoff where there is one. With ``top_k`` (``max_k``
for the curves) the rows updates append are compacted, past 2^20 rows, into
each query's top-k buffer -- k rows plus rows tied with the k-th pred -- and
three integers; without a cutoff (and always for RPrecision, whose cutoff is
the query's own number of targets) every row is kept, as torchmetrics keeps
(:mod:`gpukit.compat.torchmetrics_base` gives the bound). All of it is
``dist_reduce_fx="cat"``, and the merge depends only on the multiset of
rows, so under DDP ``compute()`` equals the one-process value bit for bit.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gpukit.compat import torchmetrics_kernels as kernels
from gpukit.compat.torchmetrics_base import RetrievalBase, check_bool, check_cutoff
from gpukit.compat.torchmetrics_curves import (
    RetrievalPrecisionRecallCurve,
    RetrievalRecallAtFixedPrecision,
)
from gpukit.compat.torchmetrics_state import Ranked
from gpukit.errors import UsageError

__all__ = [
    "RetrievalAUROC", "RetrievalFallOut", "RetrievalHitRate", "RetrievalMAP", "RetrievalMRR", "RetrievalNormalizedDCG",
    "RetrievalPrecision", "RetrievalPrecisionRecallCurve", "RetrievalRPrecision", "RetrievalRecall", "RetrievalRecallAtFixedPrecision",
]


class _TopK(RetrievalBase):
    """A metric with an optional ``top_k`` cutoff."""

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None, top_k: int | None = None,
                 aggregation: str | Callable = "mean", **kwargs: Any) -> None:
        self.top_k = check_cutoff("top_k", top_k)
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, aggregation=aggregation, cutoff=top_k, **kwargs)


class RetrievalMAP(_TopK):
    """AP@k = (1/H) sum_{i<=k, hit_i} P@i, H = hits (target 1, pred > 0) in the top k."""

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.average_precision(r, self.top_k)


class RetrievalMRR(_TopK):
    """RR@k = 1 / rank of the first hit (target 1, pred > 0) within the top k, 0 if none."""

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.reciprocal_rank(r, self.top_k)


class RetrievalRecall(_TopK):
    """R@k = (hits in the top k) / (the query's targets)."""

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.recall(r, self.top_k)


class RetrievalHitRate(_TopK):
    """HitRate@k = 1 if a target is in the top k, else 0."""

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.hit_rate(r, self.top_k)


class RetrievalFallOut(_TopK):
    """FallOut@k = (non-targets in the top k) / (the query's non-targets); lower is better.

    Empty query: one without a non-target; ``empty_target_action`` defaults to ``"pos"``.
    """

    higher_is_better = False
    empty_means = "no non-target"

    def __init__(self, empty_target_action: str = "pos", ignore_index: int | None = None, top_k: int | None = None,
                 aggregation: str | Callable = "mean", **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k, aggregation=aggregation, **kwargs)

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.fall_out(r, self.top_k)


class RetrievalNormalizedDCG(_TopK):
    """nDCG@k = DCG@k / IDCG@k, DCG@k = sum_{i<=k} mean-gain-of-i's-tie-group / log2(i + 1), gain = target."""

    graded = True
    needs_ideal = True

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.normalized_dcg(r, self.top_k)


class RetrievalPrecision(_TopK):
    """P@k = (hits in the top k) / k; k = n if ``top_k`` is None, or if ``adaptive_k`` and top_k > n."""

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None, top_k: int | None = None,
                 adaptive_k: bool = False, aggregation: str | Callable = "mean", **kwargs: Any) -> None:
        self.adaptive_k = check_bool("adaptive_k", adaptive_k)
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k, aggregation=aggregation, **kwargs)

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.precision(r, self.top_k, self.adaptive_k)


class RetrievalRPrecision(RetrievalBase):
    """RPrec = (targets in the top R) / R, R = the query's targets (keeps every row: R is unbounded)."""

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 aggregation: str | Callable = "mean", **kwargs: Any) -> None:
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, aggregation=aggregation, **kwargs)

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.r_precision(r)


class RetrievalAUROC(_TopK):
    """AUROC of each query's top k (binary_auroc: ties count one half; ``max_fpr``: McClish-standardised partial AUC)."""

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None, top_k: int | None = None,
                 max_fpr: float | None = None, aggregation: str | Callable = "mean", **kwargs: Any) -> None:
        if max_fpr is not None and not (isinstance(max_fpr, float) and 0 < max_fpr <= 1):
            raise UsageError(f"max_fpr must be a float in (0, 1] or None; got {max_fpr!r}")
        self.max_fpr = max_fpr
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, top_k=top_k, aggregation=aggregation, **kwargs)

    def _values(self, r: Ranked) -> torch.Tensor:
        return kernels.auroc(r, self.top_k, self.max_fpr)

