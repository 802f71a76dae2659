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

from gpukit.conventions import Convention
from gpukit.data.prefs import Prefs
from gpukit.data.qrels_jg import JudgmentGroups
from gpukit.data.run import Run
from gpukit.device import DeviceLike
from gpukit.evaluation import evaluate_formed
from gpukit.families import families
from gpukit.measures import MeasureLike
from gpukit.prefs_ranking import form_judgment_group_ranking, form_prefs_ranking
from gpukit.report import Report

__all__ = ["evaluate_judgment_groups", "evaluate_prefs"]


def _nicknames(*names: str) -> dict[str, list[str]]:
    """trec_eval's -m nicknames of these families (``all_prefs``, ``prefs``,
    ``qrels_jg``) and their measures, in trec_eval's order."""
    return {name: [f.trec[0].name for f in families() if name in f.trec_groups] for name in names}


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
    return evaluate_formed(
        lambda placed, complete_: form_prefs_ranking(prefs, placed, complete=complete_, max_depth=max_depth),
        run, measures, "prefs", nicknames=_nicknames("all_prefs", "prefs"), device=device, convention=convention,
        complete=complete, max_depth=max_depth, relevance_level=None, score_dtype=torch.float64,
    )


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
    return evaluate_formed(
        lambda placed, complete_: form_judgment_group_ranking(groups, placed, complete=complete_, max_depth=max_depth, score_dtype=score_dtype),
        run, measures, "judgment_groups", nicknames=_nicknames("qrels_jg"), device=device, convention=convention,
        complete=complete, max_depth=max_depth, relevance_level=relevance_level, score_dtype=score_dtype,
    )
