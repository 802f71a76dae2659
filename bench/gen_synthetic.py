"""Synthetic TREC qrels + run files for benchmarks (shared by every bench).

``write_synthetic(dir, n_queries, depth, seed)`` writes

* ``run.<Q>x<K>.s<seed>.txt``: ``qid Q0 docno rank score tag``, ``depth``
  distinct documents per query, grouped by query and ranked by score
  descending (as retrieval systems write them); scores have 4 decimals so
  that ties occur, as in real runs;
* ``qrels.<Q>x<K>.s<seed>.txt``: ``qid 0 docno grade`` with 10..30 (about
  20) judged documents per query, grades 0..3; about half of the judged
  documents are retrieved (biased towards the top ranks) and the rest are
  not, so recall and AP are non-trivial.

Documents come from a corpus of ``max(100_000, Q * K // 4)`` ids
(``D<number>``, capped at 10M) and query ids are ``<number>`` strings (so
numeric file order is not the byte order of the ids, as in real files).
Everything is vectorised (NumPy + Arrow's CSV writer), in slices of queries,
so that even 1M x 100 lines are written in well under a minute and with
bounded memory. Nothing is written into the repository: pass a temporary
directory.

Command line: ``python bench/gen_synthetic.py DIR --queries 10000 --depth 100``.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

_JUDGED_MIN, _JUDGED_MAX = 10, 30
_GRADE_P = np.array([0.45, 0.25, 0.18, 0.12])
_SLICE = 20_000  # queries per write slice


def corpus_size(n_queries: int, depth: int) -> int:
    return int(min(10_000_000, max(100_000, n_queries * depth // 4)))


def _query_ids(first: int, count: int) -> pa.Array:
    # 1000, 1001, ...: decimal strings whose byte order differs from numeric order.
    return pc.cast(pa.array(np.arange(1000 + first, 1000 + first + count, dtype=np.int64)), pa.string())


def _doc_ids(codes: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise("D", pc.cast(pa.array(codes), pa.string()), "")


def _write(table: pa.Table, fh) -> None:
    opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(table, fh, write_options=opts)


def _slice_data(rng: np.random.Generator, first: int, count: int, depth: int, n_docs: int):
    """Run and qrels columns for queries first..first+count-1."""
    span = depth + _JUDGED_MAX
    base = rng.integers(0, n_docs, size=count)
    step = rng.integers(1, max(2, n_docs // span), size=count)
    # Distinct docs per query: base + j*step (mod n_docs) with j*step < n_docs.
    j = np.arange(depth, dtype=np.int64)
    docs = (base[:, None] + j[None, :] * step[:, None]) % n_docs
    raw = rng.random((count, depth))
    scores = np.round(-np.sort(-raw * 20.0, axis=1) + 5.0, 4)
    qids = _query_ids(first, count)
    q_idx = np.repeat(np.arange(count, dtype=np.int32), depth)
    run = pa.table(
        {
            "qid": qids.take(pa.array(q_idx)),
            "q0": pa.array(np.full(count * depth, "Q0", dtype=object), pa.string()),
            "doc": _doc_ids(docs.ravel()),
            "rank": pa.array(np.tile(np.arange(1, depth + 1, dtype=np.int32), count)),
            "score": pa.array(scores.ravel()),
            "tag": pa.array(np.full(count * depth, "synthetic", dtype=object), pa.string()),
        }
    )
    # Judgments: n_j per query; half at retrieved positions (biased to the top), half unretrieved.
    n_j = rng.integers(_JUDGED_MIN, _JUDGED_MAX + 1, size=count)
    n_in = np.minimum(n_j // 2, depth)
    q_rows, positions = [], []
    for_in = rng.random((count, depth)) ** 2  # smaller keys (top ranks) more likely to be picked
    for_in = for_in * (1.0 + np.arange(depth)[None, :] / depth)
    picked = np.argsort(for_in, axis=1)
    width = int(n_in.max()) if count else 0
    take = np.arange(width)[None, :] < n_in[:, None]
    q_rows.append(np.nonzero(take)[0])
    positions.append(picked[:, :width][take])
    n_out = n_j - n_in
    width = int(n_out.max()) if count else 0
    take = np.arange(width)[None, :] < n_out[:, None]
    rows, cols = np.nonzero(take)
    q_rows.append(rows)
    positions.append(depth + cols)
    q_rows_a, pos_a = np.concatenate(q_rows), np.concatenate(positions)
    order = np.lexsort((rng.random(len(q_rows_a)), q_rows_a))  # grouped by query, docs shuffled
    q_rows_a, pos_a = q_rows_a[order], pos_a[order]
    qdocs = (base[q_rows_a] + pos_a * step[q_rows_a]) % n_docs
    grades = rng.choice(4, size=len(q_rows_a), p=_GRADE_P)
    qrels = pa.table(
        {
            "qid": qids.take(pa.array(q_rows_a)),
            "it": pa.array(np.zeros(len(q_rows_a), dtype=np.int8)),
            "doc": _doc_ids(qdocs),
            "grade": pa.array(grades.astype(np.int8)),
        }
    )
    return run, qrels


def write_synthetic(
    dir: str | os.PathLike, n_queries: int, depth: int, seed: int = 0, *, gzip_run: bool = False
) -> tuple[str, str]:
    """Write a synthetic qrels and run pair into ``dir``; return their paths.

    Files already present (same size and seed) are reused, so benches can
    share them within one temporary directory.
    """
    os.makedirs(dir, exist_ok=True)
    stem = f"{n_queries}x{depth}.s{seed}"
    qrels_path = os.path.join(dir, f"qrels.{stem}.txt")
    run_path = os.path.join(dir, f"run.{stem}.txt" + (".gz" if gzip_run else ""))
    if os.path.exists(qrels_path) and os.path.exists(run_path):
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    n_docs = corpus_size(n_queries, depth)
    tmp_run, tmp_qrels = run_path + ".part", qrels_path + ".part"
    with open(tmp_run, "wb") as raw_run, open(tmp_qrels, "wb") as fq:
        fr = gzip.GzipFile(fileobj=raw_run, mode="wb", compresslevel=1) if gzip_run else raw_run
        try:
            for first in range(0, n_queries, _SLICE):
                count = min(_SLICE, n_queries - first)
                run, qrels = _slice_data(rng, first, count, depth, n_docs)
                _write(run, fr)
                _write(qrels, fq)
        finally:
            if gzip_run:
                fr.close()
    shutil.move(tmp_run, run_path)
    shutil.move(tmp_qrels, qrels_path)
    return qrels_path, run_path


def write_run_over_qrels(
    dir: str | os.PathLike, qrels_path: str, depth: int = 1000, n_docs: int = 8_841_823, seed: int = 0
) -> str:
    """A synthetic run for an existing qrels (e.g. TREC DL, which ships none).

    Each judged query ranks its judged documents (relevant ones more likely
    near the top) mixed with random corpus ids (``D<n>`` style ids cannot
    collide with MS MARCO's numeric ids), ``depth`` documents per query.
    """
    import pandas as pd  # only for reading the small qrels file

    os.makedirs(dir, exist_ok=True)
    out = os.path.join(dir, f"run.{os.path.basename(qrels_path)}.{depth}.s{seed}.txt")
    if os.path.exists(out):
        return out
    rng = np.random.default_rng(seed)
    q = pd.read_csv(qrels_path, sep=r"\s+", header=None, names=["qid", "it", "doc", "grade"], dtype=str)
    q["grade"] = q["grade"].astype(int)
    lines = []
    for qid, group in q.groupby("qid", sort=False):
        judged = group["doc"].to_numpy()
        grades = group["grade"].to_numpy()
        keep = judged[rng.random(len(judged)) < 0.7][:depth]
        k_grades = grades[np.isin(judged, keep)][: len(keep)]
        n_rand = depth - len(keep)
        rand = np.array([f"D{x}" for x in rng.choice(n_docs, size=n_rand, replace=False)], dtype=object)
        docs = np.concatenate([keep.astype(object), rand])
        key = np.concatenate([k_grades * 2.0 + rng.random(len(keep)) * 4.0, rng.random(n_rand) * 5.0])
        order = np.argsort(-key, kind="stable")
        scores = np.round(np.sort(key)[::-1] + 10.0, 4)
        for rank, (doc, score) in enumerate(zip(docs[order], scores), start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {score:.4f} synthetic\n")
    with open(out + ".part", "w") as fh:
        fh.writelines(lines)
    shutil.move(out + ".part", out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gzip", action="store_true", help="gzip the run file")
    a = ap.parse_args()
    print(*write_synthetic(a.dir, a.queries, a.depth, a.seed, gzip_run=a.gzip))


if __name__ == "__main__":
    main()
