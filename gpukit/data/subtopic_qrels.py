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
from typing import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from gpukit.data.qrels_jg import JudgmentGroups
from gpukit.data.arrow_numpy import numpy_values, string_array
from gpukit.data.string_coding import string_codes
from gpukit.data.text_table import Column, read_table
from gpukit.errors import InputFormatError

_COLUMNS = (Column("query_id", "id"), Column("subtopic", "id"), Column("doc_id", "id"), Column("grade", "int"))


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
class SubtopicQrels:
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
        rows = [(q, s, d, g) for q, subs in judgments.items() for s, docs in subs.items() for d, g in docs.items()]
        if not rows:
            raise InputFormatError(source, None, "empty subtopic qrels: no judgments")
        q, s, d, g = zip(*rows)
        return cls.from_arrays(q, s, d, g, source=source)

    @classmethod
    def from_arrays(cls, query_ids: Sequence, subtopics: Sequence, doc_ids: Sequence, grades: Sequence,
                    source: str = "<arrays>") -> "SubtopicQrels":
        """Build from four parallel sequences (one row per judgment)."""
        q, s, d = (string_array(v) for v in (query_ids, subtopics, doc_ids))
        r = np.asarray(grades)
        if not (len(q) == len(s) == len(d) == len(r)):
            raise InputFormatError(source, None, "query_ids, subtopics, doc_ids and grades differ in length")
        if len(r) == 0:
            raise InputFormatError(source, None, "empty subtopic qrels: no judgments")
        if r.dtype.kind not in "iub" and not (r.dtype.kind == "f" and np.all(np.isfinite(r) & (r == np.round(r)))):
            raise InputFormatError(source, None, f"grades must be integers, got {r.dtype} values")
        return cls._build(q, s, d, r.astype(np.int64), source, None)

    @classmethod
    def _build(cls, q, sub, doc, grades: np.ndarray, source: str,
               line_of: Callable[[int], int | None] | None) -> "SubtopicQrels":
        def line(row: int) -> int | None:
            return line_of(row) if line_of is not None else None

        big = np.flatnonzero(np.abs(grades) >= 2**31 - 1)
        if len(big):
            raise InputFormatError(source, line(int(big[0])), f"grade {int(grades[big[0]])} out of range "
                                   "(|grade| must be below 2**31 - 1)")
        q_codes, q_vocab = string_codes(q)
        s_codes, s_vocab = string_codes(sub)
        d_codes, d_vocab = string_codes(doc)
        rank = _subtopic_order(s_vocab)
        s_vocab = s_vocab.take(pa.array(np.argsort(rank)))
        q_codes, d_codes = q_codes.astype(np.int64), d_codes.astype(np.int64)
        s_codes = rank[s_codes.astype(np.int64)]
        order = np.lexsort((d_codes, s_codes, q_codes))
        key = np.stack([q_codes[order], s_codes[order], d_codes[order]])
        same = np.flatnonzero((key[:, 1:] == key[:, :-1]).all(0))
        if len(same):
            a, b = sorted((int(order[same[0]]), int(order[same[0] + 1])))
            where = f"lines {line(a)} and {line(b)}" if line_of is not None else f"rows {a} and {b}"
            qid, sid, did = q_vocab[int(key[0, same[0]])], s_vocab[int(key[1, same[0]])], d_vocab[int(key[2, same[0]])]
            raise InputFormatError(source, line(b), f"query {qid.as_py()!r} subtopic {sid.as_py()!r} judges doc "
                                   f"{did.as_py()!r} twice ({where})")
        return cls(q_vocab, s_vocab, key[0].copy(), key[1].copy(), d_vocab.take(pa.array(key[2])),
                   np.ascontiguousarray(grades[order]), source)

    def __len__(self) -> int:
        return len(self.grades)

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def as_judgment_groups(self) -> JudgmentGroups:
        """The same rows with each subtopic as a judgment group: one ordinary
        ranking row per (query, subtopic) (see gpukit.diversity_ranking)."""
        return JudgmentGroups(self.query_ids, self.subtopic_ids, self.query_codes, self.subtopic_codes,
                              self.doc_ids, self.grades, self.source)

    def to_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{query_id: {subtopic: {doc_id: grade}}}``."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        qids, subs = self.query_ids.to_pylist(), self.subtopic_ids.to_pylist()
        for q, s, d, g in zip(self.query_codes.tolist(), self.subtopic_codes.tolist(), self.doc_ids.to_pylist(),
                              self.grades.tolist()):
            out.setdefault(qids[q], {}).setdefault(subs[s], {})[d] = g
        return out

    def __repr__(self) -> str:
        return f"SubtopicQrels({self.source!r}, queries={self.num_queries}, judgments={len(self)})"
