"""Evaluation against preference judgments and judgment groups.

``evaluate_prefs`` reproduces ``trec_eval -R prefs`` / ``-R qrels_prefs``
(the ``all_prefs`` measures), ``evaluate_judgment_groups`` ``trec_eval -R
qrels_jg`` (``map_avgjg``, ``P_avgjg``, ``Rprec_mult_avgjg``). Both return
the usual :class:`~gpukit.report.Report`; the default convention is
``"trec_eval"``, whose numbers these measures were defined by.

Example::

    prefs = gpukit.data.prefs.Prefs.from_trec("prefs.test")
    report = gpukit.evaluate_prefs(prefs, gpukit.Run.from_trec("run"), "all_prefs")
"""
from __future__ import annotations

from typing import Iterable

import torch

from gpukit.conventions import Convention, get_convention
from gpukit.data.prefs import Prefs
from gpukit.data.qrels_jg import JudgmentGroups
from gpukit.data.run import Run
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import GpukitError
from gpukit.evaluation import check_ranking_inputs, report_of
from gpukit.families import families
from gpukit.measures import Measure, MeasureLike, parse_measures
from gpukit.prefs_ranking import form_judgment_group_ranking, form_prefs_ranking
from gpukit.report import Report

__all__ = ["evaluate_judgment_groups", "evaluate_prefs"]


def _names(measures: Iterable[MeasureLike] | MeasureLike, nicknames: tuple[str, ...]) -> list[MeasureLike]:
    """Expand trec_eval's -m nickname of these families (``all_prefs``,
    ``prefs``, ``qrels_jg``) to its measures, in trec_eval's order."""
    items = [measures] if isinstance(measures, (str, Measure)) else list(measures)
    out: list[MeasureLike] = []
    for item in items:
        if isinstance(item, str) and item in nicknames:
            out.extend(f.trec[0].name for f in families() if item in f.trec_groups)
        else:
            out.append(item)
    return out


def _convention(convention: str | Convention, complete: bool | None) -> Convention:
    if isinstance(convention, Convention):
        return convention if complete is None else Convention(convention.name, complete, convention.omit_undefined)
    return get_convention(convention, complete)


def _place(run: Run, device: DeviceLike) -> tuple[Run, torch.device]:
    target = run.device if device is None else resolve_device(device)
    return (run if run.device == target else run.to(target)), target


def _check_depth(max_depth: int | None) -> None:
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1):
        raise GpukitError(f"max_depth must be a positive integer, got {max_depth!r}")


def evaluate_prefs(
    prefs: Prefs,
    run: Run,
    measures: Iterable[MeasureLike] | MeasureLike = "all_prefs",
    *,
    device: DeviceLike = None,
    convention: str | Convention = "trec_eval",
    complete: bool | None = None,
    max_depth: int | None = None,
) -> Report:
    """Evaluate a run against preference judgments (``trec_eval -R prefs``).

    Args:
        prefs: :meth:`Prefs.from_trec <gpukit.data.prefs.Prefs.from_trec>`
            (``-R prefs``), :meth:`~gpukit.data.prefs.Prefs.from_qrels_file`
            or :meth:`~gpukit.data.prefs.Prefs.from_qrels` (``-R qrels_prefs``).
        run: the run; ranked by score descending, ties by docno ascending
            (trec_eval's rule for these measures).
        measures: preference measures (``"PrefsSimp"``, ``"prefs_simp"``...),
            or trec_eval's nicknames ``"all_prefs"`` / ``"prefs"``.
        device: where to compute (``None``: the run's device).
        convention: ``"trec_eval"`` (default: zero denominators score 0) or
            ``"gpukit"`` (such queries are omitted).
        complete: also score preference queries the run lacks (``-c``).
        max_depth: only the top ``max_depth`` documents count (``-M``).
    """
    _check_depth(max_depth)
    conv = _convention(convention, complete)
    parsed = parse_measures(_names(measures, ("all_prefs", "prefs")))
    check_ranking_inputs(parsed, "prefs")
    run, target = _place(run, device)
    ranking = form_prefs_ranking(prefs, run, complete=conv.complete, max_depth=max_depth)
    return report_of(ranking, parsed, conv, run.name, target, max_depth=max_depth, score_dtype=torch.float64)


def evaluate_judgment_groups(
    groups: JudgmentGroups,
    run: Run,
    measures: Iterable[MeasureLike] | MeasureLike = "qrels_jg",
    *,
    device: DeviceLike = None,
    convention: str | Convention = "trec_eval",
    complete: bool | None = None,
    max_depth: int | None = None,
    relevance_level: int | None = None,
    score_dtype: torch.dtype = torch.float64,
) -> Report:
    """Evaluate a run against several judgment groups per query (``trec_eval -R qrels_jg``).

    Args:
        groups: :meth:`JudgmentGroups.from_trec <gpukit.data.qrels_jg.JudgmentGroups.from_trec>`.
        measures: ``"APAvgJG"``, ``"PAvgJG@10"``, ``"RprecMultAvgJG(mult=0.2)"``,
            trec_eval names (``map_avgjg``, ``P_avgjg.5,10``), or the nickname
            ``"qrels_jg"``.
        relevance_level: grade counted as relevant where a measure does not
            state ``rel=`` (``trec_eval -l``).
        Other arguments as :func:`evaluate_prefs`; ties are broken by docno
        descending here, as in trec_eval's other measures.
    """
    _check_depth(max_depth)
    conv = _convention(convention, complete)
    parsed = parse_measures(_names(measures, ("qrels_jg",)), rel=relevance_level)
    check_ranking_inputs(parsed, "judgment_groups")
    run, target = _place(run, device)
    ranking = form_judgment_group_ranking(groups, run, complete=conv.complete, max_depth=max_depth, score_dtype=score_dtype)
    return report_of(ranking, parsed, conv, run.name, target, max_depth=max_depth, score_dtype=score_dtype)
