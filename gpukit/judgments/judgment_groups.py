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

import os
from dataclasses import dataclass
from typing import Callable, ClassVar, Mapping, Sequence

import numpy as np
import pyarrow as pa

from gpukit.io.arrow_numpy import numpy_values
from gpukit.judgments.grouped import build_grouped, checked_columns, grouped_dict, nested_columns
from gpukit.io.text_table import Column, read_table
from gpukit.judgments import JudgmentsKind

_QRELS_JG_COLUMNS = (Column("query_id", "id"), Column("jg", "id"), Column("doc_id", "id"), Column("grade", "int"))


def _duplicate(query: str, jg: str, doc: str, where: str) -> str:
    return f"duplicate judgment for query {query!r} JG {jg!r} doc {doc!r} ({where})"


@dataclass(frozen=True, eq=False)
class JudgmentGroups(JudgmentsKind):
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

    @classmethod
    def from_trec(cls, path: str | os.PathLike) -> "JudgmentGroups":
        """Read a trec_eval qrels_jg file ``qid jg docno rel`` (``-R qrels_jg``)."""
        table = read_table(path, _QRELS_JG_COLUMNS, "qrels_jg")
        cols = table.columns
        return cls._build(cols["query_id"], cols["jg"], cols["doc_id"], numpy_values(cols["grade"]), table.source, table.line_of)

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, Mapping[str, int]]], source: str = "<dict>") -> "JudgmentGroups":
        """Build from ``{query_id: {jg: {doc_id: grade}}}``."""
        return cls.from_arrays(*nested_columns(judgments, source, "qrels_jg"), source=source)

    @classmethod
    def from_arrays(cls, query_ids: Sequence, jgs: Sequence, doc_ids: Sequence, grades: Sequence,
                    source: str = "<arrays>") -> "JudgmentGroups":
        """Build from four parallel sequences (one row per judgment)."""
        return cls._build(*checked_columns(query_ids, jgs, doc_ids, grades, "jgs", source, "qrels_jg"), source, None)

    @classmethod
    def _build(cls, q, jg, doc, grades, source: str, line_of: Callable[[int], int | None] | None) -> "JudgmentGroups":
        rows = build_grouped(q, jg, doc, grades, source, line_of, _duplicate)
        return cls(rows.query_ids, rows.group_ids, rows.query_codes, rows.group_codes, rows.doc_ids, rows.grades, source)

    def __len__(self) -> int:
        return len(self.grades)

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def to_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{query_id: {jg: {doc_id: grade}}}``."""
        return grouped_dict(self.query_ids, self.jg_ids, self.query_codes, self.jg_codes, self.doc_ids, self.grades)

    def __repr__(self) -> str:
        return f"JudgmentGroups({self.source!r}, queries={self.num_queries}, judgments={len(self)})"
