"""Diversity judgments: qrels with subtopics (TREC Web track diversity, ndeval).

A subtopic qrels file has lines ``qid subtopic docno grade``: the grade of a
document for one subtopic (intent, aspect, nugget) of the query. A document
judged for some subtopics of a query and absent for the others is
non-relevant to those others; a document absent for every subtopic of the
query is unjudged. ``grade`` is an integer; measures count a document
relevant to a subtopic when its grade there is at least ``rel`` (ndeval is
binary: grades above 1 count as 1, negative grades -- "in the pool but
unjudged", gpukit's qrels convention -- count as non-relevant).

A (query, subtopic, docno) given twice is an error naming both lines (ndeval
would silently count it twice in the subtopic's relevant total).

Subtopics of a query are ordered numerically when every subtopic id is a
non-negative integer (ndeval indexes them by number: that order fixes the
order of the floating-point sums over subtopics and so the greedy ideal's
tie-breaks), byte-wise otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import pyarrow as pa

from gpukit.judgments.grouped import GroupedJudgments
from gpukit.judgments.judgment_groups import JudgmentGroups
from gpukit.io.text_table import Column
from gpukit.judgments import JudgmentsKind

_COLUMNS = (Column("query_id", "id"), Column("subtopic", "id"), Column("doc_id", "id"), Column("grade", "int"))


def _duplicate(query: str, subtopic: str, doc: str, where: str) -> str:
    return f"query {query!r} subtopic {subtopic!r} judges doc {doc!r} twice ({where})"


def _subtopic_order(vocab: pa.Array) -> np.ndarray:
    """Rank of each subtopic id of the (byte-sorted) vocabulary: numeric order when all are digits."""
    ids = vocab.to_pylist()
    if ids and all(s.isascii() and s.isdigit() for s in ids):
        order = np.array(sorted(range(len(ids)), key=lambda i: int(ids[i])), dtype=np.int64)
        rank = np.empty(len(ids), dtype=np.int64)
        rank[order] = np.arange(len(ids))
        return rank
    return np.arange(len(ids), dtype=np.int64)


@dataclass(frozen=True, eq=False, repr=False)
class SubtopicQrels(GroupedJudgments, JudgmentsKind):
    """Judgments per (query, subtopic), one row per (query, subtopic, document).

    Attributes:
        query_ids: byte-wise sorted distinct query ids.
        subtopic_ids: distinct subtopic ids, in subtopic order (numeric when
            all are integers, else byte-wise).
        query_codes, subtopic_codes: int64 codes per row; rows sorted by
            (query, subtopic, doc).
        doc_ids: the document id of each row (``pa.StringArray``).
        grades: int64 grade per row.
        source: where the judgments came from.
    """

    query_ids: pa.Array
    subtopic_ids: pa.Array
    query_codes: np.ndarray
    subtopic_codes: np.ndarray
    doc_ids: pa.Array
    grades: np.ndarray
    source: str = "<subtopic qrels>"

    # Its kind (see gpukit.judgments.JudgmentsKind).
    kind: ClassVar[str] = "subtopics"
    _COLUMNS = _COLUMNS
    _WHAT, _GROUP_NAME = "subtopic qrels", "subtopics"
    _duplicate = staticmethod(_duplicate)
    _group_rank = staticmethod(_subtopic_order)
    default_measures: ClassVar[tuple[str, ...] | None] = ("ndeval",)

    @staticmethod
    def nicknames() -> dict[str, Sequence[str]]:
        from gpukit.families.diversity import NDEVAL_MEASURES

        return {"ndeval": NDEVAL_MEASURES}

    def form_ranking(self, run, *, complete: bool, max_depth: int | None = None, score_dtype=None):
        import torch

        from gpukit.judgments.subtopic_ranking import form_subtopic_ranking

        return form_subtopic_ranking(self, run, complete=complete, max_depth=max_depth, score_dtype=score_dtype or torch.float64)

    def as_judgment_groups(self) -> JudgmentGroups:
        """The same rows with each subtopic as a judgment group: one ordinary
        ranking row per (query, subtopic) (see gpukit.judgments.subtopic_ranking)."""
        return JudgmentGroups(self.query_ids, self.subtopic_ids, self.query_codes, self.subtopic_codes,
                              self.doc_ids, self.grades, self.source)
