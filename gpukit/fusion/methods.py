"""The fusion methods: what each run gives a document, and how runs combine.

A method is two steps. First each run gives each document it ranks a value
``v``: its (normalised) score, or a function of its 0-based rank ``i`` in
that run (n documents in the run's row for the query). Then the values of
the runs that rank a document (the set P, |P| = c, out of N runs) are
combined (ranx's definitions; ``w`` are the runs' weights):

======================  ===============================  =============================
method                  value v of a ranked document     combination
======================  ===============================  =============================
``sum`` (CombSUM)       score                            sum over P
``mnz`` (CombMNZ)       score                            c * sum over P
``anz`` (CombANZ)       score                            sum over P / c
``gmnz`` (CombGMNZ)     score                            c ** gamma * sum over P
``max``/``min``/``med`` score                            max / min / median over P
``wsum``                score                            sum over P of w * v
``wmnz``                score                            (sum over P of v) * (sum over P of w)
``mixed``               score                            sqrt(c) * sum over P of w * v
``rrf``                 1 / (k + i + 1), k = 60          sum over P
``isr``                 1 / (i + 1) ** 2                 c * sum over P
``log_isr``             1 / (i + 1) ** 2                 log(c) * sum over P
``logn_isr``            1 / (i + 1) ** 2                 log(c + sigma) * sum, sigma = 0.01
``rbc``                 (1 - phi) * phi ** i             sum over P
``bordafuse``           n_c - i; unranked: (n_c - n + 1)/2  sum over all N runs
``w_bordafuse``         as bordafuse                     sum over all runs of w * v
``mapfuse``             map_r / (i + 1)                  sum over P
``posfuse``             probs_r[i] (0 past its end)      sum over P
``probfuse``            probs_r[s] / (s + 1), s = i // ceil(n / S)  sum over P
``segfuse``             probs_r[s] * (score + 1), segments 0-5-15-35-...-5115  sum over P
``slidefuse``           mean of probs_r[i - w .. i + w] within the row  sum over P
``bayesfuse``           log_odds_r[i]; unranked: log(0.001 / 0.999)  sum over all N runs
======================  ===============================  =============================

n_c is the number of candidates of the query (documents some run ranks);
``map_r``, ``probs_r``, ``log_odds_r`` are per-run parameters (from
training on judged queries, as ranx's ``*_train``).

Ranks follow gpukit's ranking order: score descending, ties by doc id
descending (trec_eval's). Condorcet fusion is not offered: ranx's sorts
candidates, in set order, with a comparison that is not transitive when the
runs' majorities form a cycle, so it has no order to reproduce.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from gpukit.errors import UsageError

_REQUIRED = object()

#: Parameters holding one entry (a number or a table) per run.
PER_RUN_PARAMS = ("map_scores", "probs", "log_odds")


@dataclass(frozen=True)
class MethodSpec:
    """How one method values and combines documents.

    Attributes:
        name: canonical name (ranx's).
        value: ``"score"`` (the normalised score), ``"rank"`` (a function of
            the rank), ``"rank_score"`` (both: segfuse) or ``"borda"``
            (needs the query's candidate count: bordafuse).
        combine: ``"sum"``, ``"wsum"``, ``"mnz"``, ``"anz"``, ``"gmnz"``,
            ``"log_mnz"``, ``"logn_mnz"``, ``"wmnz"``, ``"mixed"``, ``"max"``,
            ``"min"`` or ``"med"`` (see :mod:`gpukit.fusion.combine`).
        weighted: takes one weight per run.
        params: (name, default) pairs; ``_REQUIRED`` marks one without default.
    """

    name: str
    value: str
    combine: str
    weighted: bool = False
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def rank_based(self) -> bool:
        return self.value != "score"

    @property
    def per_run(self) -> bool:
        """Whether each run values its documents with its own table (``map_scores``, ``probs``, ``log_odds``)."""
        return any(name in PER_RUN_PARAMS for name, _ in self.params)


METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in (
        MethodSpec("sum", "score", "sum"),
        MethodSpec("mnz", "score", "mnz"),
        MethodSpec("anz", "score", "anz"),
        MethodSpec("gmnz", "score", "gmnz", params=(("gamma", _REQUIRED),)),
        MethodSpec("max", "score", "max"),
        MethodSpec("min", "score", "min"),
        MethodSpec("med", "score", "med"),
        MethodSpec("wsum", "score", "wsum", weighted=True),
        MethodSpec("wmnz", "score", "wmnz", weighted=True),
        MethodSpec("mixed", "score", "mixed", weighted=True),
        MethodSpec("rrf", "rank", "sum", params=(("k", 60),)),
        MethodSpec("isr", "rank", "mnz"),
        MethodSpec("log_isr", "rank", "log_mnz"),
        MethodSpec("logn_isr", "rank", "logn_mnz", params=(("sigma", 0.01),)),
        MethodSpec("rbc", "rank", "sum", params=(("phi", _REQUIRED),)),
        MethodSpec("bordafuse", "borda", "sum"),
        MethodSpec("w_bordafuse", "borda", "wsum", weighted=True),
        MethodSpec("mapfuse", "rank", "sum", params=(("map_scores", _REQUIRED),)),
        MethodSpec("posfuse", "rank", "sum", params=(("probs", _REQUIRED),)),
        MethodSpec("probfuse", "rank", "sum", params=(("probs", _REQUIRED),)),
        MethodSpec("segfuse", "rank_score", "sum", params=(("probs", _REQUIRED),)),
        MethodSpec("slidefuse", "rank", "sum", params=(("probs", _REQUIRED), ("w", _REQUIRED))),
        MethodSpec("bayesfuse", "rank", "sum", params=(("log_odds", _REQUIRED),)),
    )
}

_ALIASES = {
    "combsum": "sum", "comb_sum": "sum", "combmnz": "mnz", "comb_mnz": "mnz", "combanz": "anz",
    "comb_anz": "anz", "combgmnz": "gmnz", "comb_gmnz": "gmnz", "combmax": "max", "comb_max": "max",
    "combmin": "min", "comb_min": "min", "combmed": "med", "comb_med": "med", "weighted_sum": "wsum",
    "borda": "bordafuse", "weighted_bordafuse": "w_bordafuse", "reciprocal_rank": "rrf",
}

#: ranx's segfuse segment bounds: 0, then 10 * 2 ** (k - 1) - 5 for k = 1..10.
SEGFUSE_BOUNDS = (0,) + tuple(10 * 2 ** (k - 1) - 5 for k in range(1, 11))

#: bayesfuse's log-odds of a run that does not rank the document (ranx's floor).
BAYES_MIN_LOG_ODDS = math.log(0.001 / 0.999)


def method_spec(method: str) -> MethodSpec:
    """The spec of ``method`` (ranx names and CombXXX spellings accepted)."""
    if not isinstance(method, str):
        raise UsageError(f"method must be a name, got {type(method).__name__}")
    key = method.strip().lower()
    key = _ALIASES.get(key, key)
    if key in ("condorcet", "w_condorcet", "weighted_condorcet"):
        raise UsageError(f"fusion method {method!r} is not offered: Condorcet's pairwise majorities can form cycles, and ranx's order then depends on set order")
    if key not in METHODS:
        raise UsageError(f"unknown fusion method {method!r}; choose one of {', '.join(METHODS)}")
    return METHODS[key]


def resolve_params(spec: MethodSpec, params: Mapping[str, Any], n_runs: int) -> dict[str, Any]:
    """The method's parameters: defaults filled in, unknown or missing ones an error,
    per-run ones (``map_scores``, ``probs``, ``log_odds``) checked to have one entry per run."""
    known = dict(spec.params)
    unknown = sorted(set(params) - set(known))
    if unknown:
        allowed = ", ".join(known) or "none"
        raise UsageError(f"fusion method {spec.name!r} takes no parameter {unknown[0]!r} (parameters: {allowed})")
    out: dict[str, Any] = {}
    for name, default in spec.params:
        value = params.get(name, default)
        if value is _REQUIRED:
            raise UsageError(f"fusion method {spec.name!r} needs the parameter {name!r}")
        out[name] = value
    for name in PER_RUN_PARAMS:
        if name in out:
            per_run = out[name]
            if len(per_run) != n_runs:
                raise UsageError(f"{name} has {len(per_run)} entries for {n_runs} runs")
    if "k" in out and not out["k"] >= 0:
        raise UsageError(f"rrf's k must be >= 0, got {out['k']!r}")
    if "sigma" in out and not 0.0 <= out["sigma"] <= 1.0:
        raise UsageError(f"logn_isr's sigma must be in [0, 1], got {out['sigma']!r}")
    if "w" in out and (isinstance(out["w"], bool) or not isinstance(out["w"], (int, np.integer)) or out["w"] < 0):
        raise UsageError(f"slidefuse's w must be a non-negative integer, got {out['w']!r}")
    return out


def resolve_weights(spec: MethodSpec, weights: Sequence[float] | None, n_runs: int) -> list[float] | None:
    """One float weight per run for a weighted method (default: 1 / N each);
    weights given to an unweighted method, or the wrong number, are an error."""
    if not spec.weighted:
        if weights is not None:
            raise UsageError(f"fusion method {spec.name!r} takes no weights")
        return None
    if weights is None:
        return [1.0 / n_runs] * n_runs
    weights = [float(w) for w in weights]
    if len(weights) != n_runs:
        raise UsageError(f"{len(weights)} weights for {n_runs} runs")
    if not all(math.isfinite(w) for w in weights):
        raise UsageError(f"weights must be finite numbers, got {weights}")
    return weights


def _table(per_run: Sequence[Any], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-run 1-D arrays as an (N, L + 1) float64 table, zero padded (one zero
    column at least, read past an array's end), and their lengths."""
    arrays = [np.asarray(a, dtype=np.float64).reshape(-1) for a in per_run]
    width = max(len(a) for a in arrays) + 1
    table = np.zeros((len(arrays), width))
    for i, a in enumerate(arrays):
        table[i, : len(a)] = a
    return torch.from_numpy(table).to(device), torch.tensor([len(a) for a in arrays], device=device)


def prepare(spec: MethodSpec, params: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """Parameters as the tensors :func:`run_values` reads (per-run tables on ``device``)."""
    out = dict(params)
    if "probs" in params:
        out["probs"] = _table(params["probs"], device)
    if "log_odds" in params:
        out["log_odds"] = _table(params["log_odds"], device)
    return out


def run_values(spec: MethodSpec, params: dict[str, Any], run: int, scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """(R, K) values that run ``run`` gives its ranked documents (0 on padding):
    ``scores`` are its normalised scores, columns its ranks (rows in ranking
    order). Not for ``"borda"`` methods, whose values need the candidates.
    Without per-run parameters (``spec.per_run`` False) the values do not
    depend on ``run``: (R, N, K) rows of N runs at once give (R, N, K) values."""
    if spec.value == "score":
        return scores
    dtype = torch.float64
    rank = torch.arange(scores.shape[-1], device=scores.device, dtype=dtype).expand_as(scores)
    n = valid.sum(-1, keepdim=True)
    name = spec.name
    if name == "rrf":
        out = 1.0 / (params["k"] + rank + 1.0)
    elif name in ("isr", "log_isr", "logn_isr"):
        out = 1.0 / (rank + 1.0) ** 2
    elif name == "rbc":
        phi = float(params["phi"])
        out = (1.0 - phi) * torch.pow(torch.tensor(phi, dtype=dtype, device=scores.device), rank)
    elif name == "mapfuse":
        out = float(params["map_scores"][run]) / (rank + 1.0)
    elif name == "posfuse":
        table, lengths = params["probs"]
        out = table[run][rank.long().clamp(max=table.shape[1] - 1)]
        out = out.masked_fill(rank >= lengths[run], 0.0)
    elif name == "probfuse":
        table, lengths = params["probs"]
        segments = lengths[run].clamp(min=1)
        size = torch.div(n + segments - 1, segments, rounding_mode="floor").clamp(min=1)  # ceil(n / S)
        seg = torch.div(rank.long(), size, rounding_mode="floor").clamp(max=table.shape[1] - 1)
        out = table[run][seg] / (seg.to(dtype) + 1.0)
    elif name == "segfuse":
        table, lengths = params["probs"]
        bounds = torch.tensor(SEGFUSE_BOUNDS[1:], device=scores.device, dtype=dtype)
        seg = torch.bucketize(rank, bounds, right=True)
        prob = table[run][seg.clamp(max=table.shape[1] - 1)]
        prob = prob.masked_fill((seg >= lengths[run]) | (seg >= len(bounds)), 0.0)
        out = prob * (scores + 1.0)
    elif name == "slidefuse":
        table, lengths = params["probs"]
        w = int(params["w"])
        cumulative = torch.cat([table.new_zeros(1), torch.cumsum(table[run][: int(lengths[run])], 0)])
        length = cumulative.numel() - 1
        low = (rank - w).clamp(min=0)
        high = torch.minimum(rank + w, (n - 1).to(dtype))
        total = cumulative[(high + 1).long().clamp(max=length)] - cumulative[low.long().clamp(max=length)]
        out = total / (high - low + 1.0)
    elif name == "bayesfuse":
        table, lengths = params["log_odds"]
        out = table[run][rank.long().clamp(max=table.shape[1] - 1)]
    else:  # pragma: no cover - every rank method is listed above
        raise UsageError(f"no values for method {name!r}")
    return out.masked_fill(~valid, 0.0)
