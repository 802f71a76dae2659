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

import os
from dataclasses import dataclass
from typing import Callable, ClassVar, Mapping, Sequence

import numpy as np
import pyarrow as pa

from gpukit.judgments.grouped import build_grouped, checked_columns, grouped_dict, nested_columns
from gpukit.judgments.judgment_groups import JudgmentGroups
from gpukit.io.arrow_numpy import numpy_values
from gpukit.io.text_table import Column, read_table
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


@dataclass(frozen=True, eq=False)
class SubtopicQrels(JudgmentsKind):
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
    default_measures: ClassVar[tuple[str, ...] | None] = ("ndeval",)

    @staticmethod
    def nicknames() -> dict[str, Sequence[str]]:
        from gpukit.families.diversity import NDEVAL_MEASURES

        return {"ndeval": NDEVAL_MEASURES}

    def form_ranking(self, run, *, complete: bool, max_depth: int | None = None, score_dtype=None):
        import torch

        from gpukit.judgments.subtopic_ranking import form_subtopic_ranking

        return form_subtopic_ranking(self, run, complete=complete, max_depth=max_depth, score_dtype=score_dtype or torch.float64)

    @classmethod
    def from_trec(cls, path: str | os.PathLike) -> "SubtopicQrels":
        """Read a diversity qrels file ``qid subtopic docno grade`` (plain or gzip; ``-``: stdin).

        Malformed lines (too few fields, a grade that is not an integer) and a
        repeated (query, subtopic, docno) are errors naming the file and line.
        """
        table = read_table(path, _COLUMNS, "subtopic qrels")
        cols = table.columns
        return cls._build(cols["query_id"], cols["subtopic"], cols["doc_id"], numpy_values(cols["grade"]),
                          table.source, table.line_of)

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, Mapping[str, int]]], source: str = "<dict>") -> "SubtopicQrels":
        """Build from ``{query_id: {subtopic: {doc_id: grade}}}``."""
        return cls.from_arrays(*nested_columns(judgments, source, "subtopic qrels"), source=source)

    @classmethod
    def from_arrays(cls, query_ids: Sequence, subtopics: Sequence, doc_ids: Sequence, grades: Sequence,
                    source: str = "<arrays>") -> "SubtopicQrels":
        """Build from four parallel sequences (one row per judgment)."""
        return cls._build(*checked_columns(query_ids, subtopics, doc_ids, grades, "subtopics", source, "subtopic qrels"), source, None)

    @classmethod
    def _build(cls, q, sub, doc, grades: np.ndarray, source: str,
               line_of: Callable[[int], int | None] | None) -> "SubtopicQrels":
        rows = build_grouped(q, sub, doc, grades, source, line_of, _duplicate, group_rank=_subtopic_order)
        return cls(rows.query_ids, rows.group_ids, rows.query_codes, rows.group_codes, rows.doc_ids, rows.grades, source)

    def __len__(self) -> int:
        return len(self.grades)

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def as_judgment_groups(self) -> JudgmentGroups:
        """The same rows with each subtopic as a judgment group: one ordinary
        ranking row per (query, subtopic) (see gpukit.judgments.subtopic_ranking)."""
        return JudgmentGroups(self.query_ids, self.subtopic_ids, self.query_codes, self.subtopic_codes,
                              self.doc_ids, self.grades, self.source)

    def to_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{query_id: {subtopic: {doc_id: grade}}}``."""
        return grouped_dict(self.query_ids, self.subtopic_ids, self.query_codes, self.subtopic_codes, self.doc_ids, self.grades)

    def __repr__(self) -> str:
        return f"SubtopicQrels({self.source!r}, queries={self.num_queries}, judgments={len(self)})"
