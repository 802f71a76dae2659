"""Per-query score dicts ``{system: {measure: (Q,) scores}}``: from runs, and aligned on common queries.

Shared by the comparisons with a baseline (:mod:`gpukit.stats.compare`) and
the all-pairs comparison (:mod:`gpukit.stats.tukey`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

from gpukit.device import DeviceLike, resolve_device
from gpukit.stats._common import StatsError, as_float64

Scores = Mapping[str, Mapping[str, Any]]


def name_runs(runs: Mapping[str, Any] | Iterable[Any]) -> dict[str, Any]:
    """``{name: run}`` as given, or runs named by ``run.name`` (which must differ)."""
    if isinstance(runs, Mapping):
        return dict(runs)
    runs = list(runs)
    names = [r.name for r in runs]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise StatsError(f"runs share the names {duplicated}; pass a {{name: run}} mapping instead")
    return dict(zip(names, runs))


def evaluate_runs(qrels: Any, named: Mapping[str, Any], measures: Iterable[Any] | Any, device: DeviceLike,
                  **evaluate_options: Any) -> tuple[dict[str, dict[str, torch.Tensor]], list[str], torch.device]:
    """Every run evaluated (one :func:`gpukit.evaluate` each) on one device: the
    per-query scores (CPU), the query ids they are aligned with, and the device.

    Raises:
        StatsError: when the runs were scored on different topic sets.
    """
    # Deferred: keeps gpukit.stats importable on its own.
    from gpukit.evaluation import evaluate

    dev = resolve_device(device, next(iter(named.values())).device)
    reports = {name: evaluate(qrels, run, measures, device=dev, **evaluate_options) for name, run in named.items()}
    first_name, first = next(iter(reports.items()))
    for name, report in reports.items():
        if report.query_ids != first.query_ids:
            raise StatsError(
                f"runs {first_name!r} and {name!r} were scored on different topic sets; "
                "use a convention that scores every qrels query (the default 'gpukit')"
            )
    scores = {
        name: {str(res.measure): res.per_query.cpu() for res in (report[m] for m in report.measures)}
        for name, report in reports.items()
    }
    return scores, first.query_ids, dev


def shared_measures(scores: Scores, reference: str) -> list[str]:
    """The measures of ``scores[reference]``, which every system must have, in the same order."""
    measures = list(scores[reference])
    for s in scores:
        if list(scores[s]) != measures:
            raise StatsError(f"system {s!r} has measures {list(scores[s])}, {reference!r} has {measures}")
    return measures


def common_queries(scores: Scores, systems: Sequence[str], measure: str,
                   query_ids: Sequence[str] | None) -> tuple[torch.Tensor, list[str]]:
    """``(S, Q')`` float64 CPU scores of ``measure`` (rows in ``systems`` order) on the
    queries where it is evaluated (non-NaN), and their ids (default ``"0".."Q-1"``).

    Omission depends on the qrels only under the default convention, so the
    evaluated queries must be the same for every system (checked).
    """
    matrix = torch.stack([as_float64(scores[s][measure]).cpu() for s in systems])
    ids = list(query_ids) if query_ids is not None else [str(i) for i in range(matrix.shape[1])]
    if len(ids) != matrix.shape[1]:
        raise StatsError(f"{measure}: {matrix.shape[1]} scores per system but {len(ids)} query ids")
    evaluated = ~torch.isnan(matrix)
    for i in range(1, len(systems)):
        if not torch.equal(evaluated[i], evaluated[0]):
            raise StatsError(
                f"{measure}: systems {systems[0]!r} and {systems[i]!r} were evaluated on different "
                "queries; paired tests need the same queries (use the same qrels and convention)"
            )
    keep = evaluated[0]
    return matrix[:, keep], [q for q, k in zip(ids, keep.tolist()) if k]
