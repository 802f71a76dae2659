"""MS MARCO run files: ``qid<TAB>docid<TAB>rank`` lines (no torch).

The MS MARCO passage and document leaderboards take runs of three columns,
without scores. gpukit ranks by score (descending, ties by docno
descending, as trec_eval), so each line gets the score ``-rank``: rank 1
scores -1, rank 2 scores -2, ..., and the ranking is the file's ranks
whatever the order of its lines. Two documents given the same rank for a
query tie, and trec_eval's tie-break (docno descending) orders them. A
rank is an integer (ASCII digits, optional ``-``); ranks beyond 2**53 lose
their order in float64.

The text is read by the TREC readers' machinery (:mod:`gpukit.io.text_table`):
the same separators (tabs or spaces), comments, gzip and errors naming the
file and line.
"""
from __future__ import annotations

import os

import pyarrow as pa

from gpukit.io.arrow_numpy import pc
from gpukit.io.text_table import Column, ParsedTable, read_table

MSMARCO_RUN_COLUMNS = (Column("query_id", "id"), Column("doc_id", "id"), Column("rank", "int"))


def read_msmarco_run(path: str | os.PathLike) -> ParsedTable:
    """The parsed text of an MS MARCO run, with a ``score`` column of ``-rank``
    in place of the rank (see the module docstring), for :meth:`gpukit.Run.from_table`."""
    table = read_table(path, MSMARCO_RUN_COLUMNS, "MS MARCO run (qid docid rank)")
    rank = table.columns.pop("rank")
    table.columns["score"] = pc.negate(pc.cast(rank, pa.float64(), safe=False))
    return table
