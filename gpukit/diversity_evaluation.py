"""``gpukit.evaluate_diversity``: intent-aware measures against subtopic judgments.

Reproduces ndeval (TREC Web track diversity; ir_measures' pyndeval
provider): alpha-nDCG@k, alpha-DCG@k, ERR-IA@k, nERR-IA@k, NRBP, nNRBP,
P-IA@k, AP-IA (MAP-IA) and StRecall@k (strec). Returns the usual
:class:`~gpukit.report.Report`.

The run is ranked as everywhere in gpukit (score descending, ties by docno
descending: ``ndeval -traditional``; ndeval's default reads the rank column
instead, and pyndeval breaks ties by docno ascending). ``complete`` is
ndeval's ``-c``, ``max_depth`` its ``-M``. ndeval's defaults: alpha = beta =
0.5, cutoffs 5, 10 and 20 (``"ndeval"`` expands to its 21 measures).

Example::

    qrels = gpukit.data.subtopic_qrels.SubtopicQrels.from_trec("qrels.diversity")
    report = gpukit.evaluate_diversity(qrels, gpukit.Run.from_trec("run"), ["alpha_nDCG@20", "ERR_IA@20"])
"""
from __future__ import annotations

from typing import Iterable

import torch

from gpukit.conventions import Convention
from gpukit.data.run import Run
from gpukit.data.subtopic_qrels import SubtopicQrels
from gpukit.device import DeviceLike
from gpukit.diversity_ranking import form_subtopic_ranking
from gpukit.evaluation import evaluate_formed
from gpukit.measures import MeasureLike
from gpukit.report import Report

__all__ = ["NDEVAL_MEASURES", "evaluate_diversity"]

#: ndeval's output columns, in its order (the ``"ndeval"`` nickname).
NDEVAL_MEASURES: tuple[str, ...] = tuple(
    [f"{f}@{k}" for f in ("ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG") for k in (5, 10, 20)]
    + ["NRBP", "nNRBP", "AP_IA"]
    + [f"{f}@{k}" for f in ("P_IA", "StRecall") for k in (5, 10, 20)]
)


def evaluate_diversity(
    subtopic_qrels: SubtopicQrels,
    run: Run,
    measures: Iterable[MeasureLike] | MeasureLike = "ndeval",
    *,
    device: DeviceLike = None,
    convention: str | Convention = "gpukit",
    complete: bool | None = None,
    max_depth: int | None = None,
    relevance_level: int | None = None,
    score_dtype: torch.dtype = torch.float64,
) -> Report:
    """Evaluate a run against judgments per subtopic.

    Args:
        subtopic_qrels: :meth:`SubtopicQrels.from_trec
            <gpukit.data.subtopic_qrels.SubtopicQrels.from_trec>` (lines
            ``qid subtopic docno grade``) or ``from_dict``.
        run: the run to score.
        measures: ``"alpha_nDCG@20"``, ``"ERR_IA(alpha=0.7)@10"``, ``"NRBP"``,
            ndeval's spellings (``"alpha-nDCG@20"``, ``"MAP-IA"``,
            ``"strec@10"``), or ``"ndeval"`` for ndeval's 21 measures.
        device: where to compute (``None``: the run's device).
        convention: ``"gpukit"`` (default: a query without a relevant
            subtopic is omitted) or ``"trec_eval"`` (ndeval's numbers: such a
            query scores 0 and stays in the mean).
        complete: also score judged queries the run lacks (ndeval ``-c``).
        max_depth: only the top ``max_depth`` documents count (ndeval ``-M``).
        relevance_level: the grade counted as relevant where a measure does
            not state ``rel=`` (default 1; ndeval treats every grade >= 1 as 1).
        score_dtype: precision in which scores are compared for sorting.
    """
    return evaluate_formed(
        lambda placed, complete_: form_subtopic_ranking(subtopic_qrels, placed, complete=complete_, max_depth=max_depth, score_dtype=score_dtype),
        run, measures, "subtopics", nicknames={"ndeval": NDEVAL_MEASURES}, device=device, convention=convention,
        complete=complete, max_depth=max_depth, relevance_level=relevance_level, score_dtype=score_dtype,
    )
