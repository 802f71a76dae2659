"""Judgments in several judgment groups (trec_eval ``-R qrels_jg``).

A qrels_jg file has lines ``qid jg docno rel``: an ordinary qrels whose
second column names the judgment group (JG, e.g. a user) that made the
judgment. Each JG of a query is a complete set of judgments; measures such
as ``map_avgjg`` score the run against each JG and average over the JGs of
the query (trec_eval's get_qrels_jg.c). A (query, JG, docno) given twice is
an error naming both lines; rel is an integer grade, negative = in the pool
but unjudged, as in ordinary qrels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import pyarrow as pa

from gpukit.judgments.grouped import GroupedJudgments
from gpukit.io.text_table import Column
from gpukit.judgments import JudgmentsKind

_QRELS_JG_COLUMNS = (Column("query_id", "id"), Column("jg", "id"), Column("doc_id", "id"), Column("grade", "int"))


def _duplicate(query: str, jg: str, doc: str, where: str) -> str:
    return f"duplicate judgment for query {query!r} JG {jg!r} doc {doc!r} ({where})"


@dataclass(frozen=True, eq=False, repr=False)
class JudgmentGroups(GroupedJudgments, JudgmentsKind):
    """Judgments per (query, JG), one row per (query, JG, document).

    Attributes:
        query_ids, jg_ids: byte-wise sorted vocabularies of the distinct ids.
        query_codes, jg_codes: int64 codes per row; rows sorted by (query, JG, doc).
        doc_ids: the document id of each row (``pa.StringArray``).
        grades: int64 grade per row.
        source: where the judgments came from.
    """

    query_ids: pa.Array
    jg_ids: pa.Array
    query_codes: np.ndarray
    jg_codes: np.ndarray
    doc_ids: pa.Array
    grades: np.ndarray
    source: str = "<qrels_jg>"

    # Its kind (see gpukit.judgments.JudgmentsKind).
    kind: ClassVar[str] = "judgment_groups"
    _COLUMNS = _QRELS_JG_COLUMNS
    _WHAT, _GROUP_NAME = "qrels_jg", "jgs"
    _duplicate = staticmethod(_duplicate)
    default_measures: ClassVar[tuple[str, ...] | None] = ("qrels_jg",)
    default_convention: ClassVar[str] = "trec_eval"

    @staticmethod
    def nicknames() -> dict[str, Sequence[str]]:
        from gpukit.judgments import trec_nickname

        return {"qrels_jg": trec_nickname("qrels_jg", "judgment_groups")}

    def form_ranking(self, run, *, complete: bool, max_depth: int | None = None, score_dtype=None):
        import torch

        from gpukit.judgments.prefs_ranking import form_judgment_group_ranking

        return form_judgment_group_ranking(self, run, complete=complete, max_depth=max_depth, score_dtype=score_dtype or torch.float64)
