"""Preference judgments (trec_eval ``-R prefs`` and ``-R qrels_prefs``).

A preference file has lines ``qid jg jsg docno rel_level``: within one
judgment sub-group (JSG) of a judgment group (JG), a document with a higher
``rel_level`` is preferred to every document with a lower one; the JSGs of a
JG together express one (transitive, consistent) partial order; different
JGs (users) may disagree. ``rel_level > 0`` marks a document relevant in that
JG and ``0`` non-relevant (trec_eval's get_prefs.c).

``-R qrels_prefs`` reads an ordinary qrels file ``qid iter docno rel`` as
preferences: the second column is the JG and every JG has one JSG, so each
grade is one equivalence class (trec_eval's get_qrels_prefs.c).

Rows are kept sorted by (query, JG, JSG, docno), every id byte-wise. The
checks trec_eval makes (or should make) on the data alone are made here,
naming the file and line: a repeated (query, JG, JSG, docno), a document
both non-relevant (0) and relevant (> 0) within one JG, and a negative level
in a JG of several JSGs (trec_eval's format says levels are non-negative;
qrels_prefs grades such as -1 are kept: they form the lowest class, as in
trec_eval). Inconsistent (cyclic) JGs are found when the ranking is formed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, ClassVar, Sequence

import numpy as np
import pyarrow as pa

from gpukit.io.arrow_numpy import numpy_values, string_array
from gpukit.io.string_coding import string_codes
from gpukit.io.text_table import Column, read_table
from gpukit.errors import InputFormatError
from gpukit.judgments import JudgmentsKind

_PREFS_COLUMNS = (
    Column("query_id", "id"),
    Column("jg", "id"),
    Column("jsg", "id"),
    Column("doc_id", "id"),
    Column("level", "float"),
)
_QRELS_PREFS_COLUMNS = (Column("query_id", "id"), Column("jg", "id"), Column("doc_id", "id"), Column("level", "float"))


@dataclass(frozen=True, eq=False)
class Prefs(JudgmentsKind):
    """Preference judgments, one row per (query, JG, JSG, document).

    Attributes:
        query_ids, jg_ids, jsg_ids, doc_ids: byte-wise sorted vocabularies
            (``pa.StringArray``) of the distinct ids.
        query_codes, jg_codes, jsg_codes, doc_codes: int64 codes per row;
            rows sorted by (query, JG, JSG, doc).
        levels: float64 ``rel_level`` per row.
        source: where the judgments came from.
        line_of: row -> 1-based line of the file (None when not from a file).
    """

    query_ids: pa.Array
    jg_ids: pa.Array
    jsg_ids: pa.Array
    doc_ids: pa.Array
    query_codes: np.ndarray
    jg_codes: np.ndarray
    jsg_codes: np.ndarray
    doc_codes: np.ndarray
    levels: np.ndarray
    source: str = "<prefs>"
    line_of: Callable[[int], int | None] | None = None

    # ------------------------------------------------------------------ build
    # Its kind (see gpukit.judgments.JudgmentsKind).
    kind: ClassVar[str] = "prefs"
    default_measures: ClassVar[tuple[str, ...] | None] = ("all_prefs",)
    default_convention: ClassVar[str] = "trec_eval"

    @staticmethod
    def nicknames() -> dict[str, Sequence[str]]:
        from gpukit.judgments import trec_nickname

        return {name: trec_nickname(name, "prefs") for name in ("all_prefs", "prefs")}

    def form_ranking(self, run, *, complete: bool, max_depth: int | None = None, score_dtype=None):
        from gpukit.judgments.prefs_ranking import form_prefs_ranking

        return form_prefs_ranking(self, run, complete=complete, max_depth=max_depth)

    @classmethod
    def from_trec(cls, path: str | os.PathLike) -> "Prefs":
        """Read a trec_eval prefs file ``qid jg jsg docno rel_level`` (``-R prefs``)."""
        table = read_table(path, _PREFS_COLUMNS, "prefs")
        cols = table.columns
        jsg = cols.pop("jsg")
        return cls._build(cols["query_id"], cols["jg"], jsg, cols["doc_id"], numpy_values(cols["level"]),
                          table.source, table.line_of)

    @classmethod
    def from_qrels_file(cls, path: str | os.PathLike) -> "Prefs":
        """Read an ordinary qrels file as preferences (``-R qrels_prefs``).

        The second column (trec_eval's "iteration") is the judgment group; each
        JG has one sub-group, so documents of a higher grade are preferred to
        those of a lower one.
        """
        table = read_table(path, _QRELS_PREFS_COLUMNS, "qrels")
        cols = table.columns
        n = table.num_rows
        return cls._build(cols["query_id"], cols["jg"], pa.array(["0"] * n, pa.string()), cols["doc_id"],
                          numpy_values(cols["level"]), table.source, table.line_of)

    @classmethod
    def from_qrels(cls, qrels, jg: str = "0") -> "Prefs":
        """Preferences from a :class:`~gpukit.judgments.qrels.Qrels` (``-R qrels_prefs``):
        one JG (``jg``) per query, one class per grade. (A Qrels keeps no
        iteration column; :meth:`from_qrels_file` reads it as the JG.)"""
        qids = qrels.query_ids.take(pa.array(qrels.query_codes)).to_pylist()
        docs = qrels.doc_space.ids_of(qrels.doc_codes)
        n = len(qids)
        return cls.from_arrays(qids, [jg] * n, ["0"] * n, docs, qrels.grades.astype(np.float64), source=qrels.source)

    @classmethod
    def from_arrays(cls, query_ids: Sequence, jgs: Sequence, jsgs: Sequence, doc_ids: Sequence, levels: Sequence,
                    source: str = "<arrays>") -> "Prefs":
        """Build from five parallel sequences (one row per preference line)."""
        arrays = [string_array(v) for v in (query_ids, jgs, jsgs, doc_ids)]
        lv = np.asarray(levels, dtype=np.float64)
        if any(len(a) != len(lv) for a in arrays):
            raise InputFormatError(source, None, "query_ids, jgs, jsgs, doc_ids and levels differ in length")
        if len(lv) == 0:
            raise InputFormatError(source, None, "empty prefs: no judgments")
        for name, a in zip(("query_ids", "jgs", "jsgs", "doc_ids"), arrays):
            if a.null_count or any(not s or any(ch.isspace() for ch in s) for s in a.to_pylist()):
                raise InputFormatError(source, None, f"{name}: ids must be non-empty and contain no whitespace")
        return cls._build(*arrays, lv, source, None)

    @classmethod
    def _build(cls, q, jg, jsg, doc, levels, source, line_of) -> "Prefs":
        def where(row: int) -> int | None:
            return line_of(row) if line_of is not None else None

        def both(a: int, b: int) -> str:
            return f"lines {line_of(a)} and {line_of(b)}" if line_of is not None else f"rows {a} and {b}"

        bad = np.flatnonzero(~np.isfinite(levels))
        if len(bad):
            raise InputFormatError(source, where(int(bad[0])), f"rel_level {levels[bad[0]]!r} is not a finite number")
        q_codes, q_vocab = string_codes(q)
        g_codes, g_vocab = string_codes(jg)
        s_codes, s_vocab = string_codes(jsg)
        d_codes, d_vocab = string_codes(doc)
        q_codes, g_codes, s_codes, d_codes = (c.astype(np.int64) for c in (q_codes, g_codes, s_codes, d_codes))
        order = np.lexsort((d_codes, s_codes, g_codes, q_codes))
        qs, gs, ss, ds = q_codes[order], g_codes[order], s_codes[order], d_codes[order]
        lv = levels[order]
        same_jg = (qs[1:] == qs[:-1]) & (gs[1:] == gs[:-1])
        dup = np.flatnonzero(same_jg & (ss[1:] == ss[:-1]) & (ds[1:] == ds[:-1]))
        if len(dup):
            a, b = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
            raise InputFormatError(
                source, where(b),
                f"document {d_vocab[int(ds[dup[0]])].as_py()!r} is given twice in query "
                f"{q_vocab[int(qs[dup[0]])].as_py()!r} JG {g_vocab[int(gs[dup[0]])].as_py()!r} JSG "
                f"{s_vocab[int(ss[dup[0]])].as_py()!r} ({both(a, b)})",
            )
        # JGs with several JSGs: a partial order (trec_eval's preference array).
        jg_start = np.flatnonzero(np.r_[True, ~same_jg])
        jg_of_row = np.cumsum(np.r_[True, ~same_jg]) - 1
        new_jsg = np.r_[True, ~same_jg | (ss[1:] != ss[:-1])]
        jsgs_per_jg = np.add.reduceat(new_jsg.astype(np.int64), jg_start)
        multi = jsgs_per_jg[jg_of_row] > 1
        neg = np.flatnonzero(multi & (lv < 0))
        if len(neg):
            r = int(order[neg[0]])
            raise InputFormatError(
                source, where(r),
                f"rel_level {lv[neg[0]]:g} is negative in JG {g_vocab[int(gs[neg[0]])].as_py()!r} of query "
                f"{q_vocab[int(qs[neg[0]])].as_py()!r}, which has several JSGs (levels must be >= 0)",
            )
        # A document non-relevant (0) in one JSG and relevant (> 0) in another of the same JG.
        by_doc = np.lexsort((lv, ds, gs, qs))
        same_doc = (qs[by_doc][1:] == qs[by_doc][:-1]) & (gs[by_doc][1:] == gs[by_doc][:-1]) & (ds[by_doc][1:] == ds[by_doc][:-1])
        conflict = np.flatnonzero(same_doc & (lv[by_doc][:-1] == 0) & (lv[by_doc][1:] > 0))
        if len(conflict):
            i = conflict[0]
            a, b = sorted((int(order[by_doc[i]]), int(order[by_doc[i + 1]])))
            raise InputFormatError(
                source, where(b),
                f"document {d_vocab[int(ds[by_doc[i]])].as_py()!r} has rel_level 0 and a rel_level > 0 in JG "
                f"{g_vocab[int(gs[by_doc[i]])].as_py()!r} of query {q_vocab[int(qs[by_doc[i]])].as_py()!r} "
                f"({both(a, b)})",
            )
        rows = order

        def line_of_sorted(row: int) -> int | None:
            return line_of(int(rows[row])) if line_of is not None else None

        return cls(q_vocab, g_vocab, s_vocab, d_vocab, qs, gs, ss, ds, np.ascontiguousarray(lv), source,
                   line_of_sorted if line_of is not None else None)

    # ----------------------------------------------------------------- access
    def __len__(self) -> int:
        return len(self.levels)

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def to_rows(self) -> list[tuple[str, str, str, str, float]]:
        """(query, JG, JSG, doc, rel_level) per row, in stored order."""
        cols = [v.take(pa.array(c)).to_pylist() for v, c in (
            (self.query_ids, self.query_codes), (self.jg_ids, self.jg_codes),
            (self.jsg_ids, self.jsg_codes), (self.doc_ids, self.doc_codes))]
        return list(zip(*cols, self.levels.tolist()))

    def __repr__(self) -> str:
        return f"Prefs({self.source!r}, queries={self.num_queries}, lines={len(self)})"
