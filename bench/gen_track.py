"""A synthetic TREC ad hoc track: one graded qrels file and many runs over one collection.

``write_track(dir, n_topics, n_runs, depth=1000, seed=0, gzip_runs=False)``
writes, deterministically for a given seed,

* ``qrels.track<T>.s<seed>.txt``: ``topic 0 docno grade``, about 1,000
  judgments per topic (800..1,200), grades 0/1/2 (mostly 0, as in pooled
  TREC judgments), each topic's lines sorted by docno as NIST ships them;
* ``run<NN>.track<T>x<K>.s<seed>.txt[.gz]``: ``topic Q0 docno rank score tag``,
  ``depth`` distinct documents per topic, written as real systems write
  them (TREC 2003 Robust runs, e.g. ``303\tQ0\tLA071090-0047\t0\t49.19109429178723\tInexpC2``):
  tab-separated (every fourth run with single spaces, every seventh with
  mixed tabs and runs of spaces), ranks from 0 or 1, scores printed at
  full precision (``repr``) or, in every third run, to 4 decimals (so some
  ties occur), and every fifth run unsorted (each topic's lines by docno,
  as some systems print them).

Every file draws its document ids from one collection vocabulary of
``max(250_000, 2,000 x topics)`` ids in the styles of TREC disks 4 and 5
(``FT931-3945``, ``LA010189-0001``, ``FBIS3-10082``, ``FR940104-0-00001``:
9 to 16 bytes, so longer than the 8 bytes gpukit packs into a key). As in a
real track, the runs retrieve largely the same documents per topic (from a
topic neighbourhood of the collection), and the pool covers the top of
every run plus other documents. Topics are ``301``, ``302``, ...

Command line: ``python bench/gen_track.py DIR --topics 100 --runs 20 [--gzip]``.
Nothing is written into the repository: pass a temporary directory.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil

import numpy as np

_NEIGHBOURHOOD = 4_000  # distinct collection documents a topic's runs draw from
_POOL_MIN, _POOL_MAX = 800, 1_200
_GRADE_P = np.array([0.82, 0.12, 0.06])


def collection_size(n_topics: int) -> int:
    return max(250_000, 2_000 * n_topics)


def collection_ids(n_docs: int, seed: int = 0) -> np.ndarray:
    """``n_docs`` distinct doc ids (object array of str) in four TREC styles, 9..16 bytes."""
    rng = np.random.default_rng(seed + 7919)
    style = rng.choice(4, size=n_docs, p=[0.25, 0.25, 0.25, 0.25])
    serial = np.arange(n_docs)
    out = np.empty(n_docs, dtype=object)
    for i in range(n_docs):
        s, k = int(style[i]), int(serial[i])
        if s == 0:  # FT931-3945: FT, year+month digit, '-', number
            out[i] = f"FT9{k % 5 + 1}{k % 4}-{k // 20 + 1:04d}"
        elif s == 1:  # LA010189-0001: LA, MMDDYY, '-', 4 digits
            out[i] = f"LA{(k % 12) + 1:02d}{(k // 12) % 28 + 1:02d}8{(k // 336) % 10}-{k // 3360:04d}"
        elif s == 2:  # FBIS3-10082
            out[i] = f"FBIS{k % 2 + 3}-{k // 2 + 1:05d}"
        else:  # FR940104-0-00001
            out[i] = f"FR94{(k % 12) + 1:02d}{(k // 12) % 28 + 1:02d}-{(k // 336) % 3}-{k // 1008:05d}"
    # The patterns above are injective per style (serial k is recoverable), so ids are distinct.
    return out


def _topic_docs(rng: np.random.Generator, n_docs: int) -> np.ndarray:
    """The neighbourhood of collection positions one topic's runs retrieve from."""
    return rng.choice(n_docs, size=_NEIGHBOURHOOD, replace=False)


def write_track(
    dir: str | os.PathLike, n_topics: int, n_runs: int, depth: int = 1000, seed: int = 0, *, gzip_runs: bool = False
) -> tuple[str, list[str]]:
    """Write the qrels and ``n_runs`` runs into ``dir``; return (qrels path, run paths).

    Files already present (same arguments) are reused.
    """
    os.makedirs(dir, exist_ok=True)
    suffix = ".gz" if gzip_runs else ""
    qrels_path = os.path.join(dir, f"qrels.track{n_topics}.s{seed}.txt")
    run_paths = [os.path.join(dir, f"run{r:02d}.track{n_topics}x{depth}.s{seed}.txt{suffix}") for r in range(n_runs)]
    if all(os.path.exists(p) for p in [qrels_path, *run_paths]):
        return qrels_path, run_paths
    rng = np.random.default_rng(seed)
    n_docs = collection_size(n_topics)
    ids = collection_ids(n_docs, seed)
    topics = [str(301 + t) for t in range(n_topics)]
    hoods = [_topic_docs(rng, n_docs) for _ in topics]
    # Per topic, an underlying "true" score of each neighbourhood document; runs are noisy views of it.
    truth = [rng.normal(size=_NEIGHBOURHOOD) for _ in topics]

    qrels_lines = []
    for t, topic in enumerate(topics):
        n_pool = int(rng.integers(_POOL_MIN, _POOL_MAX + 1))
        # Pool: mostly the best documents by truth (what the runs rank high), plus random others.
        best = np.argsort(-truth[t])[: int(n_pool * 0.7)]
        rest = np.setdiff1d(np.arange(_NEIGHBOURHOOD), best)
        others = rng.choice(rest, size=n_pool - len(best), replace=False)
        pool = np.concatenate([best, others])
        z = truth[t][pool]
        grades = rng.choice(3, size=len(pool), p=_GRADE_P)
        grades = np.where(z > 1.5, np.maximum(grades, rng.integers(0, 3, size=len(pool))), grades)
        docs = ids[hoods[t][pool]]
        order = np.argsort(docs.astype(str), kind="stable")
        qrels_lines.extend(f"{topic} 0 {docs[i]} {int(grades[i])}\n" for i in order)
    _write_text(qrels_path, qrels_lines, gzip_file=False)

    for r, path in enumerate(run_paths):
        if os.path.exists(path):
            continue
        noise = 0.6 + 0.05 * r  # later runs are a little worse
        sep = "  \t " if r % 7 == 6 else " " if r % 4 == 3 else "\t"
        first_rank = r % 2
        lines = []
        for t, topic in enumerate(topics):
            view = truth[t] + rng.normal(scale=noise, size=_NEIGHBOURHOOD)
            top = np.argsort(-view, kind="stable")[:depth]
            raw = (view[top] * 3.0 + 20.0).tolist()
            texts = [f"{v:.4f}" for v in raw] if r % 3 == 2 else [repr(v) for v in raw]
            docs = ids[hoods[t][top]]
            rows = [sep.join((topic, "Q0", d, str(k), v, f"sys{r:02d}")) + "\n" for k, (d, v) in enumerate(zip(docs, texts), start=first_rank)]
            if r % 5 == 4:
                rows = [rows[i] for i in np.argsort(docs.astype(str), kind="stable")]
            lines.extend(rows)
        _write_text(path, lines, gzip_file=gzip_runs)
    return qrels_path, run_paths


def _write_text(path: str, lines: list[str], gzip_file: bool) -> None:
    tmp = path + ".part"
    data = "".join(lines).encode("utf-8")
    if gzip_file:
        with gzip.open(tmp, "wb", compresslevel=6) as fh:
            fh.write(data)
    else:
        with open(tmp, "wb") as fh:
            fh.write(data)
    shutil.move(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gzip", action="store_true", help="gzip the run files")
    a = ap.parse_args()
    qrels, runs = write_track(a.dir, a.topics, a.runs, a.depth, a.seed, gzip_runs=a.gzip)
    print(qrels, *runs)


if __name__ == "__main__":
    main()
