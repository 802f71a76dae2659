"""Relevance judgments (qrels) as integer-coded arrays.

A ``Qrels`` holds one row per judged (query, document) pair, sorted by query
code then document key: query codes index a byte-wise sorted vocabulary, and
document keys keep the ids' byte order (packed ids or vocabulary positions,
see :mod:`gpukit.io.doc_space`). Grades are integers; a negative grade means "in the pool but not
judged" (trec_eval's convention): it is neither relevant nor non-relevant.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, TypeVar

import numpy as np
import pyarrow as pa

from gpukit.io.doc_space import DocSpace, Vocabulary, doc_keys
from gpukit.io.nested_mapping import FlatMapping, flatten
from gpukit.io.arrow_numpy import numpy_values, pandas_columns, string_array
from gpukit.io.string_coding import CodeRuns, string_codes, string_codes_or_runs
from gpukit.io.text_table import Column, ParsedTable, read_table
from gpukit.errors import InputFormatError, echo
from gpukit.judgments import JudgmentsKind

#: The largest grade magnitude (ranking tensors are int32, -2**31 marks "not judged").
MAX_ABS_GRADE = 2**31 - 2

T = TypeVar("T")

#: Values kept per Qrels by :meth:`Qrels.derived` (one per topic set and device in practice).
DERIVED_ENTRIES = 32

_TREC_QRELS_COLUMNS = (Column("query_id", "id"), Column("iteration", "skip"), Column("doc_id", "id"), Column("grade", "int"))


@dataclass(frozen=True, eq=False)
class Qrels(JudgmentsKind):
    """Judgments: sorted vocabularies plus parallel code/grade arrays.

    Attributes:
        query_ids: distinct query ids, byte-wise sorted (``pa.StringArray``).
        doc_space: how document keys map to ids.
        query_codes: int64 codes into ``query_ids``.
        doc_codes: int64 document keys in ``doc_space``; rows sorted by
            (query_code, doc key), no duplicate pairs.
        grades: int64 grades aligned with the codes.
        source: where the judgments came from (file name or "<dict>").
    """

    query_ids: pa.Array
    doc_space: DocSpace
    query_codes: np.ndarray
    doc_codes: np.ndarray
    grades: np.ndarray
    source: str = "<qrels>"
    # Values computed from the judgments alone (see derived()); never part of equality.
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _derived_counts: dict = field(default_factory=lambda: {"hits": 0, "misses": 0}, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ build
    # Its kind (see gpukit.judgments.JudgmentsKind).
    kind: ClassVar[str] = "qrels"

    def form_ranking(self, run, *, complete: bool, max_depth: int | None = None, score_dtype=None):
        import torch

        from gpukit.ranking import form_ranking_parts

        return form_ranking_parts(self, run, complete=complete, max_depth=max_depth, score_dtype=score_dtype or torch.float64)

    @classmethod
    def from_trec(cls, path: str | os.PathLike) -> "Qrels":
        """Read a TREC qrels file ``qid iter docno grade`` (plain or gzip).

        Lines starting with ``#`` are comments. A repeated (query, doc) pair is
        an error naming both lines. A grade is ASCII digits with an optional
        leading ``-`` and at most ``MAX_ABS_GRADE`` in magnitude; anything else
        (``+1``, ``0x1``, ``1e3``, ``1.0``) is an error naming its line.
        ``path`` ``"-"`` reads standard input.
        """
        table = read_table(path, _TREC_QRELS_COLUMNS, "qrels")
        return cls._from_table(table)

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike) -> "Qrels":
        """Read JSON lines ``{"query_id": ..., "doc_id": ..., "relevance": ...}``
        (plain or gzip; see :mod:`gpukit.io.jsonl`)."""
        from gpukit.data.file_formats import qrels_from_jsonl

        return qrels_from_jsonl(path)

    @classmethod
    def from_parquet(cls, path: str | os.PathLike, query_col: str = "query_id", doc_col: str = "doc_id",
                     grade_col: str = "relevance") -> "Qrels":
        """Read judgments from a Parquet file with columns ``query_id``,
        ``doc_id``, ``relevance`` (see :mod:`gpukit.io.parquet`)."""
        from gpukit.data.file_formats import qrels_from_parquet

        return qrels_from_parquet(path, query_col, doc_col, grade_col)

    @classmethod
    def _from_table(cls, table: ParsedTable) -> "Qrels":
        # A qrels file lists each topic's judgments together: its query ids stay runs (no code per line).
        q_codes, q_vocab = string_codes_or_runs(table.columns.pop("query_id"))
        if isinstance(q_codes, CodeRuns) and not q_codes.each_code_once():
            q_codes = q_codes.per_row()
        d_codes, d_space = doc_keys(table.columns.pop("doc_id"), radix=True)
        grades = numpy_values(table.columns.pop("grade"))
        return cls._from_codes(q_codes, q_vocab, d_codes, d_space, grades, table.source, table.line_of)

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, int]], source: str = "<dict>") -> "Qrels":
        """Build from ``{query_id: {doc_id: grade}}`` (pytrec_eval / ranx shape).

        Ids that are not strings are read as ``str(id)`` (``1`` and ``"1"``
        are then one id; a pair given under both is a duplicate judgment, an
        error). Grades are integers (integral floats and bools accepted); a
        query with an empty dict has no judgments. Flattened in one pass
        (:func:`gpukit.io.nested_mapping.flatten`).
        """
        return cls.from_flat_mapping(flatten(judgments, source, strict=False, grades=True), source)

    @classmethod
    def from_flat_mapping(cls, flat: FlatMapping, source: str = "<dict>") -> "Qrels":
        """Build from a flattened ``{query_id: {doc_id: grade}}`` (see :meth:`from_dict`)."""
        g = flat.values
        if not len(g):
            raise InputFormatError(source, None, "empty qrels: no judgments")
        if g.dtype.kind == "f":
            bad = np.flatnonzero(~np.isfinite(g) | (g != np.round(g)) | (np.abs(g) > MAX_ABS_GRADE))
            if len(bad):
                qid, did = flat.where(int(bad[0]))
                raise InputFormatError(source, None, f"query {echo(qid)} doc {echo(did)}: grade {float(g[bad[0]])!r} is not an integer"
                                       f" of at most {MAX_ABS_GRADE} in magnitude")
        q_codes, q_vocab = flat.sorted_query_codes()
        d_codes, d_space = doc_keys(flat.doc_ids, radix=True)
        return cls._from_codes(q_codes, q_vocab, d_codes, d_space, g.astype(np.int64), source, None)

    @classmethod
    def from_arrays(cls, query_ids, doc_ids, grades, source: str = "<arrays>") -> "Qrels":
        """Build from three parallel sequences (lists, NumPy or Arrow arrays)."""
        q = string_array(query_ids)
        d = string_array(doc_ids)
        g = np.asarray(grades)
        if len(q) != len(d) or len(q) != len(g):
            raise InputFormatError(source, None, "query_ids, doc_ids and grades differ in length")
        if g.dtype.kind == "f":
            if not np.all(np.isfinite(g)) or not np.all(g == np.round(g)):
                row = int(np.argmax(~np.isfinite(g) | (g != np.round(g))))
                raise InputFormatError(source, None, f"row {row}: grade {g[row]!r} is not an integer")
        elif g.dtype.kind not in "iub":
            raise InputFormatError(source, None, f"grades must be integers, got dtype {g.dtype}")
        if len(g) == 0:
            raise InputFormatError(source, None, "empty qrels: no judgments")
        q_codes, q_vocab = string_codes(q)
        d_codes, d_space = doc_keys(d, radix=True)
        return cls._from_codes(q_codes, q_vocab, d_codes, d_space, g.astype(np.int64), source, None)

    @classmethod
    def from_pandas(
        cls, df, query_col: str = "query_id", doc_col: str = "doc_id", grade_col: str = "relevance", source: str = "<pandas>"
    ) -> "Qrels":
        """Build from a pandas DataFrame with one row per judgment.

        Column names default to ir_measures' (``query_id``, ``doc_id``,
        ``relevance``); for ranx's pass ``query_col="q_id"``. Ids may be
        strings, categoricals or integers (read as their decimal text, as
        ``from_dict`` does with ``str``); grades must be integers (or
        integral floats). Goes through Arrow, without a Python row loop; the
        result equals :meth:`from_dict` of the same data.
        """
        roles = {"query_col": query_col, "doc_col": doc_col, "grade_col": grade_col}
        cols = pandas_columns(df, roles, "Qrels.from_pandas", source, ids=("query_col", "doc_col"))
        grade = cols["grade_col"]
        if not (pa.types.is_integer(grade.type) or pa.types.is_floating(grade.type) or pa.types.is_boolean(grade.type)):
            raise InputFormatError(source, None, f"Qrels.from_pandas: column {grade_col!r} must hold integer grades, got {grade.type}")
        grades = grade.to_numpy(zero_copy_only=False)
        return cls.from_arrays(cols["query_col"], cols["doc_col"], grades, source=source)

    @classmethod
    def _from_codes(cls, q_codes, q_vocab, d_codes, d_space, grades, source, line_of) -> "Qrels":
        # Rankings hold grades as int32 with -2**31 reserved for "not judged" and
        # need |grade| < 2**31 - 1 (the ideal-ranking sort packs 2**31 - 1 - grade);
        # checked once here, with the line, so a wider grade is never a later error.
        out_of_range = np.flatnonzero((grades > MAX_ABS_GRADE) | (grades < -MAX_ABS_GRADE))
        if len(out_of_range):
            row = int(out_of_range[0])
            raise InputFormatError(
                source, line_of(row) if line_of else None,
                f"grade {int(grades[row])} out of range (|grade| must be at most {MAX_ABS_GRADE})" + ("" if line_of else f" (row {row})"),
            )
        if isinstance(q_codes, CodeRuns) and isinstance(d_space, Vocabulary):
            q_codes = q_codes.per_row()
        if not isinstance(q_codes, CodeRuns):
            q_codes = q_codes.astype(np.int64, copy=False)
        order, q_sorted = _pair_order(q_codes, d_codes, max(len(q_vocab), 1), d_space)
        d_sorted = np.ascontiguousarray(d_codes[order], dtype=np.int64)
        dup = np.flatnonzero((q_sorted[1:] == q_sorted[:-1]) & (d_sorted[1:] == d_sorted[:-1]))
        if len(dup):
            first, second = int(order[dup[0]]), int(order[dup[0] + 1])
            qid = q_vocab[int(q_sorted[dup[0]])].as_py()
            did = d_space.ids_of(np.array([d_codes[first]]))[0].as_py()
            where = f" (lines {line_of(first)} and {line_of(second)})" if line_of else f" (rows {first} and {second})"
            raise InputFormatError(
                source,
                line_of(second) if line_of else None,
                f"duplicate judgment for query {echo(qid)} doc {echo(did)}{where}",
            )
        return cls(
            query_ids=q_vocab,
            doc_space=d_space,
            query_codes=q_sorted,
            doc_codes=d_sorted,
            grades=np.ascontiguousarray(grades[order], dtype=np.int64),
            source=source,
        )

    # ------------------------------------------------------------ derived data
    def derived(self, key: tuple, make: Callable[[], T]) -> T:
        """``make()``, computed once per ``key`` for these judgments and then reused.

        A Qrels never changes after it is built, so what is computed from it
        alone (ideal grades of a topic set, join tables, the vocabulary's
        lookup keys) serves every run evaluated against it: ``gpukit eval
        QRELS RUN1 ... RUN20`` builds it once. ``key`` must name everything
        else the value depends on (topic set, device, ...). At most
        ``DERIVED_ENTRIES`` values are kept (oldest dropped first).
        """
        if key in self._derived:
            self._derived_counts["hits"] += 1
            return self._derived[key]
        self._derived_counts["misses"] += 1
        value = make()
        while len(self._derived) >= DERIVED_ENTRIES:
            del self._derived[next(iter(self._derived))]
        self._derived[key] = value
        return value

    def cache_info(self) -> dict[str, Any]:
        """Hits, misses and entries of :meth:`derived` (to check that reuse happens)."""
        return {**self._derived_counts, "entries": len(self._derived)}

    # ----------------------------------------------------------------- access
    def __len__(self) -> int:
        return len(self.grades)

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def query_id_list(self) -> list[str]:
        return self.query_ids.to_pylist()

    @property
    def doc_ids(self) -> pa.Array:
        """The distinct judged document ids, byte-wise sorted."""
        return self.doc_space.distinct_ids(self.doc_codes)

    def save(self, path: str | os.PathLike, format: str = "trec") -> None:
        """Write ``qid 0 docno grade`` lines to ``path`` (``.gz``: gzip; ``"-"``:
        standard output), read back by :meth:`from_trec` as these judgments."""
        from gpukit.data.file_formats import save_qrels

        save_qrels(self, path, format)

    def to_trec(self) -> str:
        """The text :meth:`save` writes, as a string."""
        from gpukit.data.file_formats import qrels_to_trec

        return qrels_to_trec(self)

    def to_dict(self) -> dict[str, dict[str, int]]:
        """The pytrec_eval / ranx shape ``{query_id: {doc_id: grade}}``."""
        qids = self.query_ids.to_pylist()
        dids = self.doc_space.ids_of(self.doc_codes).to_pylist()
        out: dict[str, dict[str, int]] = {}
        for q, d, g in zip(self.query_codes.tolist(), dids, self.grades.tolist()):
            out.setdefault(qids[q], {})[d] = g
        return out

    def __repr__(self) -> str:
        return f"Qrels({self.source!r}, queries={self.num_queries}, judgments={len(self)})"


def _pair_order(q: np.ndarray | CodeRuns, keys: np.ndarray, n_queries: int, space: DocSpace) -> tuple[np.ndarray, np.ndarray]:
    """(stable order of rows by (query code, doc key), the query codes in that order).

    ``q``: int64 codes per row, or the runs of a column whose every query is
    one run (not with a vocabulary).

    Vocabulary codes are small enough to pack with the query into one int64.
    Packed keys use 63 bits, so rows are ordered by query first (by whole
    groups when each query's rows are contiguous, see :func:`_query_order`),
    then within each query by key: usually a no-op (qrels list a topic's
    documents in order), else one row-wise stable argsort of a padded
    (queries, judgments) table, or a lexsort when one topic is very large.
    """
    if isinstance(space, Vocabulary):
        n_docs = space.bound
        order = _stable_order(q * n_docs + keys, n_queries * n_docs)[0]
        return order, q[order]
    if isinstance(q, CodeRuns):
        by_q, qs = _group_order(q.starts, q.codes, q.num_rows)
    else:
        by_q, qs = _query_order(q, n_queries)
    ks = keys[by_q]
    if not np.any((qs[1:] == qs[:-1]) & (ks[1:] < ks[:-1])):
        return by_q, qs
    n = len(qs)
    counts = np.bincount(qs, minlength=n_queries)
    width = int(counts.max())
    if n_queries * width > 4 * n + (1 << 20):
        order = np.lexsort((ks, qs))  # stable: equal pairs keep their order in by_q, which is file order
        return by_q[order], qs
    starts = np.cumsum(counts) - counts
    # Rows are grouped by query (ascending), so row i goes to slot i - start + query * width.
    slot = np.arange(n, dtype=np.int64)
    slot += np.repeat(np.arange(n_queries, dtype=np.int64) * width - starts, counts)
    table = np.full(n_queries * width, np.iinfo(np.int64).max, dtype=np.int64)  # 0x7FFF.. is never a packed or radix key
    table[slot] = ks
    del slot, ks
    # NumPy's row-wise argsort of short int64 rows is ~2x torch's stable sort here.
    perm = np.argsort(table.reshape(n_queries, width), axis=1, kind="stable")
    del table
    return by_q[(starts[:, None] + perm)[perm < counts[:, None]]], qs


def _query_order(q: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(stable order of rows by query code, the sorted codes).

    A qrels file lists each topic's judgments together, though not always
    with the topics in byte order (``1000`` before ``999``): then only the
    groups are ordered (one sort of one code per topic) and the rows follow
    their group, a linear pass instead of a sort of every row.
    """
    n = len(q)
    if n:
        starts = np.flatnonzero(q[1:] != q[:-1]) + 1
        starts = np.concatenate([np.zeros(1, dtype=np.int64), starts])
        group_q = q[starts]
        # Every query in one contiguous group (more groups than queries: some query is split).
        if len(starts) <= n_queries and int(np.bincount(group_q, minlength=n_queries).max()) <= 1:
            return _group_order(starts, group_q, n)
    return _stable_order(q, n_queries)


def _group_order(starts: np.ndarray, group_q: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_query_order` of ``n`` rows in groups of one query each
    (group ``g`` starts at row ``starts[g]`` and holds query ``group_q[g]``):
    only the groups are sorted, the rows follow their group."""
    lengths = np.diff(np.append(starts, n))
    by_code = np.argsort(group_q, kind="stable")
    lengths, starts = lengths[by_code], starts[by_code]
    order = np.arange(n, dtype=np.int64)
    order += np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return order, np.repeat(group_q[by_code].astype(np.int64), lengths)


def _stable_order(keys: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """(stable argsort of non-negative ``keys`` < ``bound``, the sorted keys).

    One direct sort of ``key << rowbits | row`` when both fit in 64 bits (a
    cache-friendly sort of plain integers, unlike an indirect argsort).
    """
    n = len(keys)
    if n and bool((keys[1:] >= keys[:-1]).all()):  # already in order (qrels grouped by topic): no sort
        return np.arange(n, dtype=np.int64), keys.astype(np.int64, copy=True)
    rowbits = max(1, (n - 1).bit_length())
    if n == 0 or (max(bound - 1, 1)).bit_length() + rowbits > 64:
        order = np.argsort(keys, kind="stable")
        return order, keys[order]
    packed = keys.astype(np.uint64) << np.uint64(rowbits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    order = (packed & np.uint64((1 << rowbits) - 1)).astype(np.int64)
    packed >>= np.uint64(rowbits)
    return order, packed.astype(np.int64)
