"""Runs and qrels in other file formats: MS MARCO tsv, JSON lines, Parquet; and writing.

The methods :meth:`Run.from_msmarco`, :meth:`Run.from_jsonl`,
:meth:`Run.from_parquet`, :meth:`Qrels.from_jsonl`, :meth:`Qrels.from_parquet`,
:meth:`Run.save` / :meth:`Run.to_trec` and :meth:`Qrels.save` /
:meth:`Qrels.to_trec` delegate here. Each reader gives the same container
as :meth:`Run.from_dict` / :meth:`Qrels.from_dict` of the same data, with
the same checks: NaN scores, duplicate (query, document) pairs (named by
both lines where the format has lines), grades out of range.

Formats and schemas:

* MS MARCO run: ``qid<TAB>docid<TAB>rank``, score ``-rank`` (:mod:`gpukit.io.msmarco`).
* JSON lines: ``{"query_id": str|int, "doc_id": str|int, "score": number}``
  per line for a run, ``{"query_id", "doc_id", "relevance": integer}`` for
  qrels (:mod:`gpukit.io.jsonl`).
* Parquet: columns ``query_id``, ``doc_id``, ``score`` / ``relevance``
  (:mod:`gpukit.io.parquet`).
* TREC (writing): :mod:`gpukit.io.trec_writer`.
"""
from __future__ import annotations

import os
from typing import Callable

import numpy as np
import pyarrow as pa

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Dedup, Run
from gpukit.errors import InputFormatError, UsageError
from gpukit.io import trec_writer
from gpukit.io.arrow_numpy import numpy_values
from gpukit.io.doc_space import doc_keys
from gpukit.io.string_coding import string_codes

#: Formats ``save`` writes.
SAVE_FORMATS = ("trec",)

RUN_FIELDS = {"query_id": "id", "doc_id": "id", "score": "float"}
QRELS_FIELDS = {"query_id": "id", "doc_id": "id", "relevance": "int"}


# ------------------------------------------------------------------ reading
def run_from_msmarco(path: str | os.PathLike, name: str | None, dedup: Dedup) -> Run:
    from gpukit.io.msmarco import read_msmarco_run

    return Run.from_table(read_msmarco_run(path), name, dedup)


def run_from_jsonl(path: str | os.PathLike, name: str | None, dedup: Dedup) -> Run:
    from gpukit.io.jsonl import read_jsonl

    table = read_jsonl(path, RUN_FIELDS, "run")
    c = table.columns
    run_name = name if name is not None else os.path.basename(table.source)
    return _run_of_columns(c["query_id"], c["doc_id"], c["score"], run_name, dedup, table.source, table.line_of)


def run_from_parquet(path, name: str | None, dedup: Dedup, query_col: str, doc_col: str, score_col: str) -> Run:
    from gpukit.io.parquet import read_parquet

    c = read_parquet(path, {"q": (query_col, "id"), "d": (doc_col, "id"), "s": (score_col, "float")}, "run")
    source = os.fspath(path)
    run_name = name if name is not None else os.path.basename(source)
    return _run_of_columns(c["q"], c["d"], c["s"], run_name, dedup, source, None)


def qrels_from_jsonl(path: str | os.PathLike) -> Qrels:
    from gpukit.io.jsonl import read_jsonl

    table = read_jsonl(path, QRELS_FIELDS, "qrels")
    c = table.columns
    return _qrels_of_columns(c["query_id"], c["doc_id"], c["relevance"], table.source, table.line_of)


def qrels_from_parquet(path, query_col: str, doc_col: str, grade_col: str) -> Qrels:
    from gpukit.io.parquet import read_parquet

    c = read_parquet(path, {"q": (query_col, "id"), "d": (doc_col, "id"), "g": (grade_col, "int")}, "qrels")
    return _qrels_of_columns(c["q"], c["d"], c["g"], os.fspath(path), None)


def _where(line_of: Callable[[int], int | None] | None, row: int) -> tuple[int | None, str]:
    """(line for the error, text naming the row where the format has no lines)."""
    return (line_of(row), "") if line_of is not None else (None, f"row {row}: ")


def _run_of_columns(q: pa.Array, d: pa.Array, s: pa.Array, name: str, dedup: Dedup, source: str,
                    line_of: Callable[[int], int | None] | None) -> Run:
    """:meth:`Run.from_arrays` of parsed columns, errors naming lines (``line_of``) or rows."""
    if len(q) == 0:
        raise InputFormatError(source, None, "empty run: no retrieved documents")
    scores = numpy_values(s).astype(np.float64, copy=False)
    nan = np.flatnonzero(np.isnan(scores))
    if len(nan):
        line, row = _where(line_of, int(nan[0]))
        raise InputFormatError(source, line, f"{row}score is NaN")
    q_codes, q_vocab = string_codes(q)
    d_codes, d_space = doc_keys(d, radix=True)
    return Run._from_flat(q_codes, q_vocab, d_codes, d_space, scores, name, dedup, source, line_of)


def _qrels_of_columns(q: pa.Array, d: pa.Array, g: pa.Array, source: str, line_of: Callable[[int], int | None] | None) -> Qrels:
    """:meth:`Qrels.from_arrays` of parsed columns, errors naming lines (``line_of``) or rows."""
    if len(q) == 0:
        raise InputFormatError(source, None, "empty qrels: no judgments")
    q_codes, q_vocab = string_codes(q)
    d_codes, d_space = doc_keys(d, radix=True)
    grades = numpy_values(g).astype(np.int64, copy=False)
    return Qrels._from_codes(q_codes, q_vocab, d_codes, d_space, grades, source, line_of)


# ------------------------------------------------------------------ writing
def _check_format(format: str) -> None:
    if format not in SAVE_FORMATS:
        raise UsageError(f"format must be one of {', '.join(map(repr, SAVE_FORMATS))}, got {format!r}")


def _tag(run: Run, tag: str | None) -> str:
    if tag is None:
        if not run.name or any(ch <= " " for ch in run.name):
            raise UsageError(f"the run's name {run.name!r} is not a valid run tag (one word); pass tag=")
        return run.name
    return trec_writer.check_tag(tag)


def save_run(run: Run, path: str | os.PathLike, format: str = "trec", tag: str | None = None) -> None:
    """:meth:`Run.save`."""
    _check_format(format)
    trec_writer.write_slices(path, trec_writer.run_slices(run, _tag(run, tag)))


def run_to_trec(run: Run, tag: str | None = None) -> str:
    """:meth:`Run.to_trec`."""
    return trec_writer.to_text(trec_writer.run_slices(run, _tag(run, tag)))


def save_qrels(qrels: Qrels, path: str | os.PathLike, format: str = "trec") -> None:
    """:meth:`Qrels.save`."""
    _check_format(format)
    trec_writer.write_slices(path, trec_writer.qrels_slices(qrels))


def qrels_to_trec(qrels: Qrels) -> str:
    """:meth:`Qrels.to_trec`."""
    return trec_writer.to_text(trec_writer.qrels_slices(qrels))
