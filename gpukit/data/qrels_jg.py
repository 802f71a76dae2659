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
from typing import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from gpukit.data.arrow_numpy import numpy_values, string_array
from gpukit.data.string_coding import string_codes
from gpukit.data.text_table import Column, read_table
from gpukit.errors import InputFormatError

_QRELS_JG_COLUMNS = (Column("query_id", "id"), Column("jg", "id"), Column("doc_id", "id"), Column("grade", "int"))


@dataclass(frozen=True, eq=False)
class JudgmentGroups:
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

    @classmethod
    def from_trec(cls, path: str | os.PathLike) -> "JudgmentGroups":
        """Read a trec_eval qrels_jg file ``qid jg docno rel`` (``-R qrels_jg``)."""
        table = read_table(path, _QRELS_JG_COLUMNS, "qrels_jg")
        cols = table.columns
        return cls._build(cols["query_id"], cols["jg"], cols["doc_id"], numpy_values(cols["grade"]), table.source, table.line_of)

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, Mapping[str, int]]], source: str = "<dict>") -> "JudgmentGroups":
        """Build from ``{query_id: {jg: {doc_id: grade}}}``."""
        rows = [(q, g, d, r) for q, groups in judgments.items() for g, docs in groups.items() for d, r in docs.items()]
        if not rows:
            raise InputFormatError(source, None, "empty qrels_jg: no judgments")
        q, g, d, r = zip(*rows)
        return cls.from_arrays(q, g, d, r, source=source)

    @classmethod
    def from_arrays(cls, query_ids: Sequence, jgs: Sequence, doc_ids: Sequence, grades: Sequence,
                    source: str = "<arrays>") -> "JudgmentGroups":
        """Build from four parallel sequences (one row per judgment)."""
        q, g, d = (string_array(v) for v in (query_ids, jgs, doc_ids))
        r = np.asarray(grades)
        if not (len(q) == len(g) == len(d) == len(r)):
            raise InputFormatError(source, None, "query_ids, jgs, doc_ids and grades differ in length")
        if len(r) == 0:
            raise InputFormatError(source, None, "empty qrels_jg: no judgments")
        if r.dtype.kind == "f" and not np.all(np.isfinite(r) & (r == np.round(r))):
            row = int(np.argmax(~(np.isfinite(r) & (r == np.round(r)))))
            raise InputFormatError(source, None, f"row {row}: grade {r[row]!r} is not an integer")
        if r.dtype.kind not in "iubf":
            raise InputFormatError(source, None, f"grades must be integers, got dtype {r.dtype}")
        return cls._build(q, g, d, r.astype(np.int64), source, None)

    @classmethod
    def _build(cls, q, jg, doc, grades, source: str, line_of: Callable[[int], int | None] | None) -> "JudgmentGroups":
        def both(a: int, b: int) -> str:
            return f"lines {line_of(a)} and {line_of(b)}" if line_of is not None else f"rows {a} and {b}"

        out_of_range = np.flatnonzero(np.abs(grades) >= 2**31 - 1)
        if len(out_of_range):
            row = int(out_of_range[0])
            raise InputFormatError(source, line_of(row) if line_of else None, f"grade {int(grades[row])} out of range (|grade| must be below 2**31 - 1)")
        q_codes, q_vocab = string_codes(q)
        g_codes, g_vocab = string_codes(jg)
        d_codes, d_vocab = string_codes(doc)
        q_codes, g_codes, d_codes = (c.astype(np.int64) for c in (q_codes, g_codes, d_codes))
        order = np.lexsort((d_codes, g_codes, q_codes))
        qs, gs, ds = q_codes[order], g_codes[order], d_codes[order]
        dup = np.flatnonzero((qs[1:] == qs[:-1]) & (gs[1:] == gs[:-1]) & (ds[1:] == ds[:-1]))
        if len(dup):
            a, b = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
            raise InputFormatError(
                source, line_of(b) if line_of else None,
                f"duplicate judgment for query {q_vocab[int(qs[dup[0]])].as_py()!r} JG {g_vocab[int(gs[dup[0]])].as_py()!r} "
                f"doc {d_vocab[int(ds[dup[0]])].as_py()!r} ({both(a, b)})",
            )
        return cls(q_vocab, g_vocab, qs, gs, d_vocab.take(pa.array(ds)), np.ascontiguousarray(grades[order]), source)

    def __len__(self) -> int:
        return len(self.grades)

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def to_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{query_id: {jg: {doc_id: grade}}}``."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        qids, jgs = self.query_ids.to_pylist(), self.jg_ids.to_pylist()
        for q, g, d, r in zip(self.query_codes.tolist(), self.jg_codes.tolist(), self.doc_ids.to_pylist(), self.grades.tolist()):
            out.setdefault(qids[q], {}).setdefault(jgs[g], {})[d] = r
        return out

    def __repr__(self) -> str:
        return f"JudgmentGroups({self.source!r}, queries={self.num_queries}, judgments={len(self)})"
