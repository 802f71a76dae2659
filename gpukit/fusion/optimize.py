"""``gpukit.optimize_fusion``: the fusion weights (or parameter) that score best on judged queries.

ranx's grids, searched as one batch: each query's candidates and every
run's value for them are laid out once (:mod:`gpukit.fusion.candidates`),
the fused scores of a chunk of configurations are tensor ops on all of them
(a matrix product for weights), and each configuration's rankings are scored
by gpukit's measure kernels, (configurations x queries) rows at a time.

Grids (ranx's defaults):

* weights (``wsum``, ``wmnz``, ``mixed``, ``w_bordafuse``): every vector of
  the values 0, step, 2 step, ..., 1 (rounded to step's decimals, step 0.1)
  whose sum, added left to right in floating point, is exactly 1.0, in
  ``itertools.product`` order (ranx's test: a few vectors such as
  (0.1, 0.2, 0.7), whose float sum is 1.0000000000000002, are not tried);
* ``rrf``: k = min_k, min_k + step, ..., max_k (10, 20, ..., 100);
* ``gmnz`` gamma, ``logn_isr`` sigma, ``rbc`` phi: 0.01, 0.02, ..., 1.0.

The chosen configuration is the last of those with the highest mean
(ranx's ``>=`` scan from 0). Rankings break ties by doc id descending.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import UsageError, UsageTypeError
from gpukit.evaluation import compute_measures, resolve_convention
from gpukit.fusion.align import align_runs, check_runs
from gpukit.fusion.candidates import Candidates, dense_candidates
from gpukit.fusion.fuse import SLICE_ENTRIES, fuse, slice_entries
from gpukit.fusion.methods import METHODS, method_spec
from gpukit.fusion.normalise import norm_name
from gpukit.measures import parse_measures
from gpukit.ranking import NOT_JUDGED, RankedJudgments, form_ranking

WEIGHTED = ("wsum", "wmnz", "mixed", "w_bordafuse")
ONE_PARAMETER = {"rrf": "k", "gmnz": "gamma", "logn_isr": "sigma", "rbc": "phi"}

#: (configurations x queries x candidates) scores formed at once.
BATCH_ELEMENTS = 1 << 23


@dataclass(frozen=True)
class FusionOptimization:
    """The result of :func:`optimize_fusion`.

    Attributes:
        method, norm, metric: what was optimised.
        params: the chosen configuration, ranx's shape: ``{"weights": [...]}``
            or ``{"k": 60}`` (pass to :func:`gpukit.fuse` as ``**params``).
        score: its mean of ``metric``.
        configs: every configuration tried, in order (weight tuples or values).
        scores: the mean of each (NaN where no query defines the measure).
    """

    method: str
    norm: str | None
    metric: str
    params: dict[str, Any]
    score: float
    configs: list = field(repr=False)
    scores: list[float] = field(repr=False)

    def fuse(self, runs: Sequence[Run], **kwargs: Any) -> Run:
        """``gpukit.fuse`` of ``runs`` with the chosen configuration."""
        return fuse(runs, method=self.method, norm=self.norm, **self.params, **kwargs)


def weight_grid(step: float, n_runs: int) -> list[tuple[float, ...]]:
    """ranx's weight vectors for ``n_runs`` runs (see the module docstring),
    enumerated without the full product: prefixes whose sum passes 1 are cut."""
    digits = str(step)[::-1].find(".")
    values = [round(float(x), digits) for x in np.arange(0, 1 + step, step)]
    out: list[tuple[float, ...]] = []

    def extend(prefix: list[float], partial: float) -> None:
        if len(prefix) == n_runs:
            if sum(prefix) == 1.0:  # ranx's exact test, summed as it sums
                out.append(tuple(prefix))
            return
        for v in values:
            if partial + v > 1.0 + 1e-9:
                continue  # weights are non-negative: no completion sums to 1
            prefix.append(v)
            extend(prefix, partial + v)
            prefix.pop()

    extend([], 0.0)
    return out


def parameter_grid(method: str, step: float | None, low: float | None, high: float | None) -> list:
    """ranx's grid of ``method``'s one parameter."""
    if method == "rrf":
        step, low, high = int(step or 10), int(low if low is not None else 10), int(high if high is not None else 100)
        return list(range(low, high + 1, step))
    step = step or 0.01
    low = 0.01 if low is None else low
    high = 1.0 if high is None else high
    digits = str(step)[::-1].find(".")
    return [round(float(x), digits) for x in np.arange(low, high + step, step)]


def optimize_fusion(
    qrels: Qrels,
    runs: Sequence[Run],
    method: str = "wsum",
    norm: str | None = "min-max",
    metric: str = "ndcg",
    step: float | None = None,
    *,
    low: float | None = None,
    high: float | None = None,
    convention: str = "gpukit",
    device: DeviceLike = None,
) -> FusionOptimization:
    """Search ranx's grid for the weights (weighted methods) or the parameter
    (``rrf`` k, ``gmnz`` gamma, ``logn_isr`` sigma, ``rbc`` phi) that maximise
    the mean of ``metric`` over ``qrels``' queries; every configuration is
    evaluated in one batch. ``step``, ``low``, ``high`` change the grid
    (defaults: ranx's); ``convention`` is :func:`gpukit.evaluate`'s."""
    if not isinstance(qrels, Qrels):
        raise UsageTypeError(f"qrels must be a gpukit Qrels, got {type(qrels).__name__}")
    runs = check_runs(runs)
    spec = method_spec(method)
    norm = norm_name(norm)
    if spec.name not in WEIGHTED and spec.name not in ONE_PARAMETER:
        raise UsageError(f"optimize_fusion searches {', '.join(WEIGHTED + tuple(ONE_PARAMETER))}; {spec.name!r} has nothing to search")
    if norm == "borda" and spec.rank_based:
        raise UsageError(f"norm 'borda' gives every candidate to every run without a rank; rank-based method {spec.name!r} needs another norm")
    conv = resolve_convention(convention, None)
    measures = parse_measures(metric)
    if len(measures) != 1:
        raise UsageError(f"optimize_fusion optimises one measure, got {len(measures)}")
    measure = measures[0]
    if measure.spec.aggregate_under(conv) != "mean":
        raise UsageError(f"optimize_fusion maximises a mean; {measure} aggregates by {measure.spec.aggregate_under(conv)}")
    if spec.name in WEIGHTED:
        configs: list = weight_grid(step or 0.1, len(runs))
    else:
        configs = parameter_grid(spec.name, step, low, high)
    if not configs:
        raise UsageError(f"the grid of step {step} has no configuration")
    dev = resolve_device(device, runs[0].device)
    aligned = align_runs(runs, dev)
    cands = _candidates(aligned, spec, norm)
    means = _means(qrels, aligned.query_ids, aligned.doc_space, cands, spec, configs, measure, conv)
    best, best_at = 0.0, None
    for i, value in enumerate(means):
        if value >= best:  # ranx's scan: the last of the best
            best, best_at = value, i
    if best_at is None:
        raise UsageError(f"no query of the qrels defines {measure}: nothing to optimise")
    chosen = configs[best_at]
    params = {"weights": list(chosen)} if spec.name in WEIGHTED else {ONE_PARAMETER[spec.name]: chosen}
    return FusionOptimization(spec.name, norm, str(measure), params, best, configs, means)


def _candidates(aligned, spec, norm) -> Candidates:
    """Every union query's candidates (one layout, padded to the widest)."""
    borda = "norm" if norm == "borda" else ("method" if spec.value == "borda" else None)
    values_spec = METHODS["sum"]  # entries valued by their normalised score
    total_depth = sum(int(c.shape[1]) for c in aligned.codes)
    step = max(1, SLICE_ENTRIES // max(total_depth * aligned.num_runs, 1))
    parts = []
    for lo in range(0, aligned.num_queries, step):
        hi = min(lo + step, aligned.num_queries)
        entries = slice_entries(aligned, lo, hi, values_spec, norm, {})
        parts.append(dense_candidates(entries, aligned.num_runs, borda))
    width = max(p.keys.shape[1] for p in parts)

    def pad(t: torch.Tensor, value) -> torch.Tensor:
        extra = width - t.shape[1]
        if extra == 0:
            return t
        shape = (t.shape[0], extra) + tuple(t.shape[2:])
        return torch.cat([t, torch.full(shape, value, dtype=t.dtype, device=t.device)], 1)

    return Candidates(
        torch.cat([pad(p.keys, -1) for p in parts]),
        torch.cat([pad(p.values, 0.0) for p in parts]),
        torch.cat([pad(p.present, False) for p in parts]),
        torch.cat([pad(p.ranks, torch.inf) for p in parts]),
    )


def _config_scores(spec, cands: Candidates, rows: torch.Tensor, configs: list) -> torch.Tensor:
    """(R, U, t) fused scores of candidates ``rows`` under each of ``configs``."""
    values, present, ranks = cands.values[rows], cands.present[rows], cands.ranks[rows]
    dtype, device = values.dtype, values.device
    name = spec.name
    if name in WEIGHTED:
        w = torch.tensor(configs, dtype=dtype, device=device)  # (t, N)
        weighted = values @ w.T
        if name == "wmnz":
            return values.sum(2, keepdim=True) * (present.to(dtype) @ w.T)
        if name == "mixed":
            return weighted * torch.sqrt(present.sum(2, keepdim=True).to(dtype))
        return weighted
    count = present.sum(2).to(dtype)
    out = []
    for p in configs:
        if name == "rrf":
            out.append((1.0 / (p + ranks + 1.0)).sum(2))  # absent: rank inf, value 0
        elif name == "rbc":
            out.append(torch.where(present, (1.0 - p) * torch.pow(torch.tensor(float(p), dtype=dtype, device=device), ranks), 0.0).sum(2))
        elif name == "gmnz":
            out.append(values.sum(2) * count.pow(float(p)))
        else:  # logn_isr
            out.append((1.0 / (ranks + 1.0) ** 2).sum(2) * torch.log(count + float(p)))
    return torch.stack(out, 2)


def _means(qrels, union_ids: pa.Array, space, cands: Candidates, spec, configs, measure, conv) -> list[float]:
    """Mean of ``measure`` for each configuration, over the convention's topics."""
    device = cands.keys.device
    candidate_run = Run(union_ids, space, cands.keys, torch.zeros(cands.keys.shape, dtype=torch.float64, device=device), "candidates")
    # Keys descend along each row and scores are equal: the ranking is the candidates' column order.
    ranked = form_ranking(qrels, candidate_run, complete=conv.complete)
    topics = ranked.num_topics
    if topics == 0:
        raise UsageError("the runs answer no query of the qrels: nothing to optimise")
    at = pc.index_in(pa.array(ranked.query_ids, pa.string()), value_set=union_ids).to_numpy(zero_copy_only=False)
    row_of = torch.from_numpy(np.where(np.isnan(at.astype(np.float64)), -1, at).astype(np.int64)).to(device)
    width = cands.keys.shape[1]
    grades = torch.full((topics, width), NOT_JUDGED, dtype=ranked.grades.dtype, device=device)
    grades[:, : ranked.grades.shape[1]] = ranked.grades  # NOT_JUDGED pads a column past the run's depth
    totals = torch.zeros(len(configs), dtype=torch.float64, device=device)
    counts = torch.zeros(len(configs), dtype=torch.float64, device=device)
    per_config = max(1, BATCH_ELEMENTS // max(topics * width, 1))
    topic_step = max(1, BATCH_ELEMENTS // max(width * min(per_config, len(configs)), 1))
    not_judged = ranked.grades.new_full((), NOT_JUDGED)
    for t_lo in range(0, topics, topic_step):
        t_hi = min(t_lo + topic_step, topics)
        rows = row_of[t_lo:t_hi]
        in_run = rows >= 0
        keys = torch.where(in_run[:, None], cands.keys[rows.clamp(min=0)], -1)
        for c_lo in range(0, len(configs), per_config):
            chunk = configs[c_lo : c_lo + per_config]
            scores = _config_scores(spec, cands, rows.clamp(min=0), chunk)  # (R, U, t)
            scores = scores.permute(2, 0, 1).masked_fill((keys < 0)[None], -torch.inf)
            order = torch.sort(scores, dim=2, descending=True, stable=True).indices  # ties: key descending
            t = len(chunk)
            g = grades[t_lo:t_hi][None].expand(t, -1, -1).gather(2, order).reshape(t * (t_hi - t_lo), width)
            g = torch.where(keys[None].expand(t, -1, -1).gather(2, order).reshape(g.shape) >= 0, g, not_judged)
            ranking = RankedJudgments(
                query_ids=list(ranked.query_ids[t_lo:t_hi]) * t,
                grades=g,
                num_ret=(keys >= 0).sum(1).repeat(t),
                ideal=ranked.ideal[t_lo:t_hi].repeat(t, 1),
                in_run=ranked.in_run[t_lo:t_hi].repeat(t),
                run_queries_not_in_qrels=0,
            )
            values, defined = compute_measures(ranking, [measure])[measure]
            mask = defined if conv.omit_undefined else torch.ones_like(defined)
            values = torch.where(mask, values.to(torch.float64), 0.0).reshape(t, -1)
            totals[c_lo : c_lo + t] += values.sum(1)
            counts[c_lo : c_lo + t] += mask.reshape(t, -1).sum(1)
    means = (totals / counts).cpu().tolist()  # one host read; 0 / 0 = NaN: no query defines it
    return [float(m) for m in means]
