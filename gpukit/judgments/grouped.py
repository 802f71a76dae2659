"""Judgments keyed by (query, group, document): the building shared by
judgment-group qrels (:mod:`gpukit.judgments.judgment_groups`, group = JG) and subtopic
qrels (:mod:`gpukit.judgments.subtopics`, group = subtopic).

Both are four parallel columns ``query, group, doc, grade``; building them
means checking the grades (integers, ``|grade| < 2**31 - 1``), coding the
three id columns, sorting the rows by (query, group, doc) and refusing a
(query, group, doc) given twice, naming both lines (or rows).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Callable, ClassVar, Mapping, Sequence

import numpy as np
import pyarrow as pa

from gpukit.io.arrow_numpy import numpy_values, string_array
from gpukit.io.string_coding import string_codes
from gpukit.io.text_table import Column, read_table
from gpukit.errors import InputFormatError

#: ``(query id, group id, doc id, "lines a and b" / "rows a and b") -> problem text``.
DuplicateMessage = Callable[[str, str, str, str], str]


@dataclass(frozen=True)
class GroupedRows:
    """The coded, sorted rows: vocabularies, int64 codes and grades in (query, group, doc) order."""

    query_ids: pa.Array
    group_ids: pa.Array
    query_codes: np.ndarray
    group_codes: np.ndarray
    doc_ids: pa.Array
    grades: np.ndarray


def nested_columns(judgments: Mapping[str, Mapping[str, Mapping[str, int]]], source: str, what: str) -> tuple[tuple, tuple, tuple, tuple]:
    """``{query: {group: {doc: grade}}}`` as four parallel tuples; empty is an error."""
    rows = [(q, g, d, r) for q, groups in judgments.items() for g, docs in groups.items() for d, r in docs.items()]
    if not rows:
        raise InputFormatError(source, None, f"empty {what}: no judgments")
    q, g, d, r = zip(*rows)
    return q, g, d, r


def checked_columns(
    query_ids: Sequence, groups: Sequence, doc_ids: Sequence, grades: Sequence, group_name: str, source: str, what: str
) -> tuple[pa.Array, pa.Array, pa.Array, np.ndarray]:
    """Four parallel sequences as string arrays and int64 grades, or an error naming the row."""
    q, g, d = (string_array(v) for v in (query_ids, groups, doc_ids))
    r = np.asarray(grades)
    if not (len(q) == len(g) == len(d) == len(r)):
        raise InputFormatError(source, None, f"query_ids, {group_name}, doc_ids and grades differ in length")
    if len(r) == 0:
        raise InputFormatError(source, None, f"empty {what}: no judgments")
    if r.dtype.kind == "f" and not np.all(np.isfinite(r) & (r == np.round(r))):
        row = int(np.argmax(~(np.isfinite(r) & (r == np.round(r)))))
        raise InputFormatError(source, None, f"row {row}: grade {r[row].item()!r} is not an integer")
    if r.dtype.kind not in "iubf":
        raise InputFormatError(source, None, f"grades must be integers, got dtype {r.dtype}")
    return q, g, d, r.astype(np.int64)


def build_grouped(
    q: pa.Array,
    group: pa.Array,
    doc: pa.Array,
    grades: np.ndarray,
    source: str,
    line_of: Callable[[int], int | None] | None,
    duplicate: DuplicateMessage,
    group_rank: Callable[[pa.Array], np.ndarray] | None = None,
) -> GroupedRows:
    """Code, sort and check the rows.

    ``group_rank(vocabulary)`` gives each byte-sorted group id its position
    in the group order (default: byte order). ``line_of(row)`` maps an input
    row to its file line (None: rows are named instead).
    """
    def line(row: int) -> int | None:
        return line_of(row) if line_of is not None else None

    big = np.flatnonzero(np.abs(grades) >= 2**31 - 1)
    if len(big):
        row = int(big[0])
        raise InputFormatError(source, line(row), f"grade {int(grades[row])} out of range (|grade| must be below 2**31 - 1)")
    q_codes, q_vocab = string_codes(q)
    g_codes, g_vocab = string_codes(group)
    d_codes, d_vocab = string_codes(doc)
    q_codes, g_codes, d_codes = (c.astype(np.int64) for c in (q_codes, g_codes, d_codes))
    if group_rank is not None:
        rank = group_rank(g_vocab)
        g_vocab = g_vocab.take(pa.array(np.argsort(rank)))
        g_codes = rank[g_codes]
    order = np.lexsort((d_codes, g_codes, q_codes))
    qs, gs, ds = q_codes[order], g_codes[order], d_codes[order]
    dup = np.flatnonzero((qs[1:] == qs[:-1]) & (gs[1:] == gs[:-1]) & (ds[1:] == ds[:-1]))
    if len(dup):
        first = int(dup[0])
        a, b = sorted((int(order[first]), int(order[first + 1])))
        where = f"lines {line(a)} and {line(b)}" if line_of is not None else f"rows {a} and {b}"
        ids = (q_vocab[int(qs[first])].as_py(), g_vocab[int(gs[first])].as_py(), d_vocab[int(ds[first])].as_py())
        raise InputFormatError(source, line(b), duplicate(*ids, where))
    return GroupedRows(q_vocab, g_vocab, qs, gs, d_vocab.take(pa.array(ds)), np.ascontiguousarray(grades[order]))


def grouped_dict(query_ids: pa.Array, group_ids: pa.Array, query_codes: np.ndarray, group_codes: np.ndarray,
                 doc_ids: pa.Array, grades: np.ndarray) -> dict[str, dict[str, dict[str, int]]]:
    """``{query_id: {group: {doc_id: grade}}}`` of coded rows."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    qids, gids = query_ids.to_pylist(), group_ids.to_pylist()
    for q, g, d, r in zip(query_codes.tolist(), group_codes.tolist(), doc_ids.to_pylist(), grades.tolist()):
        out.setdefault(qids[q], {}).setdefault(gids[g], {})[d] = r
    return out


class GroupedJudgments:
    """The readers and accessors a (query, group, doc) judgments dataclass
    shares; its fields are, in order, the query and group vocabularies, their
    int64 codes per row, the doc ids, the grades and the source (what
    :class:`GroupedRows` holds). A class states its file columns, the words
    its errors use, its duplicate message and the order of its group ids."""

    _COLUMNS: ClassVar[tuple[Column, ...]]
    _WHAT: ClassVar[str]  # the format, in errors ("qrels_jg")
    _GROUP_NAME: ClassVar[str]  # the group column's argument, in errors ("jgs")
    _duplicate: ClassVar[DuplicateMessage]
    _group_rank: ClassVar[Callable[[pa.Array], np.ndarray] | None] = None

    @classmethod
    def from_trec(cls, path: str | os.PathLike):
        """Read a whitespace file ``qid group docno grade`` (plain or gzip;
        ``-``: stdin). Malformed lines (too few fields, a grade that is not an
        integer) and a repeated (query, group, docno) are errors naming the
        file and line."""
        table = read_table(path, cls._COLUMNS, cls._WHAT)
        q, group, doc, grade = (table.columns[c.name] for c in cls._COLUMNS)
        return cls._build(q, group, doc, numpy_values(grade), table.source, table.line_of)

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, Mapping[str, int]]], source: str = "<dict>"):
        """Build from ``{query_id: {group: {doc_id: grade}}}``."""
        return cls.from_arrays(*nested_columns(judgments, source, cls._WHAT), source=source)

    @classmethod
    def from_arrays(cls, query_ids: Sequence, groups: Sequence, doc_ids: Sequence, grades: Sequence, source: str = "<arrays>"):
        """Build from four parallel sequences (one row per judgment)."""
        return cls._build(*checked_columns(query_ids, groups, doc_ids, grades, cls._GROUP_NAME, source, cls._WHAT), source, None)

    @classmethod
    def _build(cls, q, group, doc, grades: np.ndarray, source: str, line_of: Callable[[int], int | None] | None):
        rows = build_grouped(q, group, doc, grades, source, line_of, cls._duplicate, group_rank=cls._group_rank)
        return cls(rows.query_ids, rows.group_ids, rows.query_codes, rows.group_codes, rows.doc_ids, rows.grades, source)

    def __len__(self) -> int:
        return len(self.grades)

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def to_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{query_id: {group: {doc_id: grade}}}``."""
        return grouped_dict(*(getattr(self, f.name) for f in fields(self)[:6]))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r}, queries={self.num_queries}, judgments={len(self)})"
