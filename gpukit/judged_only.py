"""Rankings reduced to their judged documents: trec_eval's ``-J``, ir_measures' ``judged_only``.

A measure with ``judged_only=True`` (:attr:`gpukit.Measure.judged_only`) is
computed on each ranking with its unjudged documents removed (absent from
the qrels, or with a negative grade, trec_eval's "in the pool, unjudged"),
the others keeping their order and moving up: a judged document at rank 5
below two unjudged ones is at rank 3. The number retrieved becomes the
number of judged documents retrieved; the judgments themselves (R, the
ideal ranking) are unchanged. ``max_depth`` applies first, as trec_eval
applies ``-M`` before ``-J``.

One stable sort per ranking (judged first), on the ranking's device.
"""
from __future__ import annotations

import torch

from gpukit.ranking import NOT_JUDGED, RankedJudgments, RankingParts


def keep_ranked(r: RankedJudgments, keep: torch.Tensor) -> RankedJudgments:
    """Each ranking reduced to the documents where ``keep`` holds, in order."""
    order = torch.sort((~keep).to(torch.int8), dim=1, stable=True).indices
    grades = r.grades.gather(1, order).masked_fill(~keep.gather(1, order), NOT_JUDGED)
    return RankedJudgments(r.query_ids, grades, keep.sum(1).to(torch.int64), r.ideal, r.in_run, r.run_queries_not_in_qrels)


def judged_only_ranking(r: RankedJudgments) -> RankedJudgments:
    """``r`` with the unjudged documents (grade < 0, or not in the qrels) removed."""
    return keep_ranked(r, r.grades >= 0)


def judged_only_parts(ranking: RankedJudgments | RankingParts) -> RankedJudgments | RankingParts:
    """:func:`judged_only_ranking` of a ranking, or of each part of one."""
    if isinstance(ranking, RankingParts):
        return RankingParts(ranking.query_ids, ranking.in_run, ranking.run_queries_not_in_qrels,
                            tuple((positions, judged_only_ranking(r)) for positions, r in ranking.parts))
    return judged_only_ranking(ranking)
