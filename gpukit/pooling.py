"""Depth-k pools of runs, and how well judgments cover a run.

``pool(runs, depth=k)``: the union over runs of each query's top ``k``
documents, the set TREC sends to assessors (trectools' ``TrecPoolMaker``
``strategy="topX"``). A run's top ``k`` is its first ``k`` documents in
trec_eval's ranking order: score descending, ties by docno descending,
the order gpukit stores and evaluates. (trectools sorts a run file by score
descending and docno *ascending*, so where scores tie across rank ``k`` its
pool can hold other documents.) The result is a :class:`Pool`: the pairs as
a :class:`~gpukit.Qrels` whose every grade is -1 (trec_eval's "in the pool,
not judged": neither relevant nor non-relevant, until assessed), each run's
contribution (its pairs in the pool) and the pairs only that run brought.

``coverage(run, qrels, depth=k)``: per query of the run, how many of its top
``k`` documents are judged (a qrels line with grade >= 0: trectools drops
negative grades when it reads qrels, trec_eval counts them as unjudged;
against a :class:`Pool`, every pooled pair counts), their fraction of ``k``
(gpukit's and ir_measures' Judged@k: trectools' ``TrecRun.check_qrel_coverage``
and ``TrecPool.check_coverage`` give the counts), the unjudged ones per ``k``
(trectools' ``get_unjudged``, trec_eval's unj@k) and the documents left to
judge.

Both work on the host with Arrow joins and group-bys over the top ``k``
lines (no per-query Python loop); a run on a device is read back once.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import UsageError
from gpukit.io.arrow_numpy import arrow_indices, numpy_values, pc

#: The grade of a pooled, not yet judged pair (trec_eval: in the pool, unjudged).
POOLED = -1


def _depth(depth: int) -> int:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise UsageError(f"depth must be a positive integer, got {depth!r}")
    return int(depth)


def top_lines(run: Run, depth: int) -> pa.Table:
    """The top ``depth`` documents of each query of ``run``: a table of
    ``query_id``, ``doc_id``, ``row`` (the run row) and ``rank`` (from 1), in
    row then rank order."""
    q_rows, ids, ranks = [], [], []
    for block in run.row_blocks():
        keys = block.doc_codes[:, :depth].cpu().numpy()
        rows = np.arange(run.num_queries) if block.rows is None else block.rows.cpu().numpy()
        valid = keys >= 0  # documents first, padding last
        counts = valid.sum(1)
        q_rows.append(np.repeat(rows.astype(np.int64), counts))
        ids.append(run.doc_space.ids_of(keys[valid]))
        ranks.append(np.tile(np.arange(1, keys.shape[1] + 1, dtype=np.int64), len(rows))[valid.reshape(-1)])
    row = np.concatenate(q_rows)
    order = np.argsort(row, kind="stable")
    doc_ids = pa.concat_arrays([a.cast(pa.string()) for a in ids]).take(arrow_indices(order))
    row = row[order]
    return pa.table({
        "query_id": run.query_ids.cast(pa.string()).take(arrow_indices(row)),
        "doc_id": doc_ids,
        "row": arrow_indices(row),
        "rank": arrow_indices(np.concatenate(ranks)[order]),
    })


@dataclass(frozen=True, eq=False)
class Pool:
    """A depth-``k`` pool (see the module docstring).

    Attributes:
        depth: k.
        run_names: the pooled runs' names, in the order given.
        qrels: the pooled (query, document) pairs, each once, grade -1.
        contributed: per run, its pairs in the pool (its top-k lines).
        unique: per run, the pooled pairs that no other run has in its top k.
        sole_run: (len(qrels),) int64 aligned with the qrels' rows: the only
            run that has the pair in its top k, -1 when several do.
    """

    depth: int
    run_names: tuple[str, ...]
    qrels: Qrels
    contributed: tuple[int, ...]
    unique: tuple[int, ...]
    sole_run: np.ndarray

    def __len__(self) -> int:
        return len(self.qrels)

    def sizes(self) -> dict[str, int]:
        """Pooled documents per query."""
        counts = np.bincount(self.qrels.query_codes, minlength=self.qrels.num_queries)
        return dict(zip(self.qrels.query_id_list(), counts.tolist()))

    def to_dict(self) -> dict[str, set[str]]:
        """``{query_id: {doc_id, ...}}``, the shape of trectools' ``TrecPool.pool``."""
        return {q: set(docs) for q, docs in self.qrels.to_dict().items()}

    def unique_to(self, run: int) -> dict[str, list[str]]:
        """``{query_id: [doc_id, ...]}``: the pairs only run number ``run`` brought (docno order)."""
        rows = np.flatnonzero(self.sole_run == run)
        qids = self.qrels.query_ids.take(arrow_indices(self.qrels.query_codes[rows])).to_pylist()
        dids = self.qrels.doc_space.ids_of(self.qrels.doc_codes[rows]).to_pylist()
        out: dict[str, list[str]] = {}
        for q, d in zip(qids, dids):
            out.setdefault(q, []).append(d)
        return out

    def save(self, path: str | os.PathLike) -> None:
        """Write the pool as TREC qrels lines ``qid 0 docno -1`` (``.gz``: gzip; ``"-"``: stdout)."""
        self.qrels.save(path)

    def summary(self) -> str:
        """A few lines: the pool's size and each run's contribution."""
        width = max(len(n) for n in self.run_names)
        lines = [f"depth-{self.depth} pool: {len(self)} documents over {self.qrels.num_queries} queries"]
        lines += [f"{name:<{width}}  contributed {c:>8}  unique {u:>8}"
                  for name, c, u in zip(self.run_names, self.contributed, self.unique)]
        return "\n".join(lines)


def pool(runs: Sequence[Run], depth: int = 100) -> Pool:
    """The depth-``depth`` pool of ``runs`` (see the module docstring)."""
    depth = _depth(depth)
    runs = list(runs)
    if not runs:
        raise UsageError("pool needs at least one run")
    tables = []
    for i, run in enumerate(runs):
        top = top_lines(run, depth).select(["query_id", "doc_id"])
        tables.append(top.append_column("run", pa.array(np.full(top.num_rows, i, dtype=np.int64))))
    lines = pa.concat_tables(tables)
    # A run holds a document once per query, so each pair's min == max run
    # tells that exactly one run has it in its top k.
    pairs = lines.group_by(["query_id", "doc_id"], use_threads=False).aggregate([("run", "min"), ("run", "max")])
    qrels = Qrels.from_arrays(pairs.column("query_id"), pairs.column("doc_id"), np.full(pairs.num_rows, POOLED, np.int64),
                              source=f"<depth-{depth} pool>")
    # Align the pairs' runs with the qrels' rows (the qrels are sorted) by a join on the ids.
    at = pa.table({
        "query_id": qrels.query_ids.take(arrow_indices(qrels.query_codes)),
        "doc_id": qrels.doc_space.ids_of(qrels.doc_codes).cast(pa.string()),
        "position": arrow_indices(np.arange(len(qrels))),
    })
    joined = at.join(pairs, keys=["query_id", "doc_id"], join_type="inner", use_threads=False)
    position = numpy_values(joined.column("position"))
    low, high = numpy_values(joined.column("run_min")), numpy_values(joined.column("run_max"))
    sole = np.full(len(qrels), -1, dtype=np.int64)
    sole[position] = np.where(low == high, low, -1)
    contributed = tuple(t.num_rows for t in tables)
    unique = tuple(np.bincount(sole[sole >= 0], minlength=len(runs)).tolist())
    return Pool(depth, tuple(r.name for r in runs), qrels, contributed, unique, sole)


@dataclass(frozen=True, eq=False)
class Coverage:
    """How many of a run's top-``k`` documents the qrels hold (see the module docstring).

    Attributes:
        depth: k.
        query_ids: the run's queries, in run row order.
        retrieved: (Q,) int64, min(k, documents retrieved) per query.
        judged: (Q,) int64, of those, the judged documents (grade >= 0, or pooled).
    """

    depth: int
    query_ids: list[str]
    retrieved: np.ndarray
    judged: np.ndarray
    _missing_rows: np.ndarray  # run row of each top-k line the qrels lack, row then rank order
    _missing_docs: pa.Array  # and its document

    def unjudged_docs(self) -> dict[str, list[str]]:
        """``{query_id: [doc_id, ...]}``: each query's top-k documents the
        qrels lack, in rank order (every query of the run, [] when covered)."""
        out: dict[str, list[str]] = {q: [] for q in self.query_ids}
        for r, d in zip(self._missing_rows.tolist(), self._missing_docs.to_pylist()):
            out[self.query_ids[r]].append(d)
        return out

    @property
    def unjudged(self) -> np.ndarray:
        """(Q,) int64: top-k documents the qrels lack, per query."""
        return self.retrieved - self.judged

    def judged_at_k(self) -> np.ndarray:
        """(Q,) float64: judged / k per query (a ranking shorter than k counts its missing ranks as unjudged)."""
        return self.judged / self.depth

    def unjudged_at_k(self) -> np.ndarray:
        """(Q,) float64: unjudged / k per query (trec_eval's unj@k and trectools' UNJ@k: missing ranks count as judged)."""
        return self.unjudged / self.depth


def coverage(run: Run, qrels: Qrels | Pool, depth: int = 10) -> Coverage:
    """How well ``qrels`` (grades >= 0), or a pool's pairs, cover ``run``'s top ``depth`` (see the module docstring)."""
    depth = _depth(depth)
    judgments = qrels.qrels if isinstance(qrels, Pool) else qrels
    kept = np.arange(len(judgments)) if isinstance(qrels, Pool) else np.flatnonzero(judgments.grades >= 0)
    top = top_lines(run, depth)
    held = pa.table({
        "query_id": judgments.query_ids.take(arrow_indices(judgments.query_codes[kept])),
        "doc_id": judgments.doc_space.ids_of(judgments.doc_codes[kept]).cast(pa.string()),
        "held": pa.array(np.ones(len(kept), dtype=bool)),
    })
    marked = top.join(held, keys=["query_id", "doc_id"], join_type="left outer", use_threads=False)
    marked = marked.sort_by([("row", "ascending"), ("rank", "ascending")])
    rows = numpy_values(marked.column("row"))
    is_held = pc.fill_null(marked.column("held"), False).to_numpy(zero_copy_only=False).astype(bool)
    n = run.num_queries
    retrieved = np.bincount(rows, minlength=n).astype(np.int64)
    judged = np.bincount(rows[is_held], minlength=n).astype(np.int64)
    missing_docs = marked.column("doc_id").filter(pa.array(~is_held)).combine_chunks()
    return Coverage(depth, run.query_id_list(), retrieved, judged, rows[~is_held], missing_docs)
