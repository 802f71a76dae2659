"""gpukit's streaming update vs torchmetrics and sentence-transformers on the same data.

    python bench/compare_streaming.py [--queries 1024] [--candidates 100000] [--dim 64] [--repeats 3] [--device cpu]

``--device`` (default cpu) is where the data lives and every implementation
runs; the data is generated on the CPU (same values on every device) and
moved there once, untimed. torchmetrics and sentence-transformers are
optional: one that is not installed is skipped with a line saying so.

Data: Q random unit query vectors and N unit document vectors (dim d); the
score of a (query, candidate) pair is their dot product (= cosine), a dense
(Q, N) float32 matrix; each query has 20 relevant candidates (binary, as
sentence-transformers' evaluator only takes relevant sets).

Timed, median of ``--repeats`` runs, one batch = all Q queries:

* gpukit           ``RetrievalEvaluator(["nDCG@10"]).update(scores, targets)`` + ``compute()``
* gpukit+score     the same plus computing ``scores = queries @ docs.T``
* torchmetrics     ``RetrievalNormalizedDCG(top_k=10)``: ``update(preds, target, indexes)``
                   on the flattened (Q*N,) data + ``compute()`` (its update only stores;
                   compute groups by query and loops in Python)
* sentence-transformers  ``InformationRetrievalEvaluator.compute_all_metrics`` with
                   precomputed embeddings (a stub model returns the query vectors),
                   so it times its scoring (matmul), top-k and Python metric loops;
                   compare it with gpukit+score. It computes several measures
                   (accuracy, P, R, MRR, nDCG, MAP @k) in one pass.

All report nDCG@10; the script prints them so the comparison is of equal work.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from typing import Callable

import torch

from gpukit.pipelines import RetrievalEvaluator

RELEVANT = 20


def median_time(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    fn()  # warm-up (allocator, lazy imports)
    times, value = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), value


def make_data(queries: int, candidates: int, dim: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.nn.functional.normalize(torch.randn(queries, dim, generator=g), dim=1)
    d = torch.nn.functional.normalize(torch.randn(candidates, dim, generator=g), dim=1)
    targets = torch.zeros(queries, candidates, dtype=torch.int64)
    # Relevant documents are the ones most similar to a perturbed query, so nDCG is not ~0.
    noisy = torch.nn.functional.normalize(q + 0.8 * torch.randn(queries, dim, generator=g) / dim**0.5, dim=1)
    relevant = torch.topk(noisy @ d.T, RELEVANT, dim=1).indices
    targets.scatter_(1, relevant, 1)
    return q, d, targets


def gpukit_update(scores: torch.Tensor, targets: torch.Tensor) -> float:
    evaluator = RetrievalEvaluator(["nDCG@10"], device=scores.device)
    evaluator.update(scores, targets)
    return evaluator.compute()["nDCG@10"]


def torchmetrics_ndcg(scores: torch.Tensor, targets: torch.Tensor) -> float:
    from torchmetrics.retrieval import RetrievalNormalizedDCG

    metric = RetrievalNormalizedDCG(top_k=10)
    rows, n = scores.shape
    indexes = torch.arange(rows, device=scores.device).repeat_interleave(n)
    metric.update(scores.flatten(), targets.flatten(), indexes=indexes)
    return float(metric.compute())


class _StubModel:
    """Returns precomputed query vectors; sentence-transformers calls encode_query."""

    def __init__(self, queries: torch.Tensor) -> None:
        self.queries = queries

    def encode_query(self, sentences, **_kwargs) -> torch.Tensor:
        assert len(sentences) == self.queries.shape[0]
        return self.queries


def sentence_transformers_evaluator(q: torch.Tensor, d: torch.Tensor, targets: torch.Tensor):
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    qids = [f"q{i}" for i in range(q.shape[0])]
    dids = [f"d{j}" for j in range(d.shape[0])]
    rows, cols = targets.nonzero(as_tuple=True)
    relevant: dict[str, set[str]] = {}
    for r, c in zip(rows.tolist(), cols.tolist()):
        relevant.setdefault(qids[r], set()).add(dids[c])
    evaluator = InformationRetrievalEvaluator(
        queries={qid: qid for qid in qids}, corpus={did: "" for did in dids}, relevant_docs=relevant,
        mrr_at_k=[10], ndcg_at_k=[10], accuracy_at_k=[10], precision_recall_at_k=[10], map_at_k=[10],
        score_functions={"dot": lambda a, b: a @ b.T}, write_csv=False,
    )
    model = _StubModel(q)
    return lambda: evaluator.compute_all_metrics(model, corpus_embeddings=d)["dot"]["ndcg@k"][10]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=1024)
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", action="append", default=[], choices=["torchmetrics", "sentence-transformers"])
    parser.add_argument("--device", default="cpu", help="where the data lives and everything runs (default cpu)")
    args = parser.parse_args(argv)
    for name, module in (("torchmetrics", "torchmetrics"), ("sentence-transformers", "sentence_transformers")):
        if name not in args.skip and importlib.util.find_spec(module) is None:
            print(f"skipped: {name} (not installed)")
            args.skip.append(name)

    device = torch.device(args.device)
    q, d, targets = (t.to(device) for t in make_data(args.queries, args.candidates, args.dim))
    scores = q @ d.T
    print(f"data: {args.queries} queries x {args.candidates} candidates, dim {args.dim}, "
          f"{RELEVANT} relevant per query, device {device}, CPU threads {torch.get_num_threads()}")
    rows: list[tuple[str, float, float]] = []
    t, v = median_time(lambda: gpukit_update(scores, targets), args.repeats)
    rows.append(("gpukit update+compute", t, v))
    t, v = median_time(lambda: gpukit_update(q @ d.T, targets), args.repeats)
    rows.append(("gpukit scoring+update+compute", t, v))
    if "torchmetrics" not in args.skip:
        t, v = median_time(lambda: torchmetrics_ndcg(scores, targets), args.repeats)
        rows.append(("torchmetrics RetrievalNormalizedDCG", t, v))
    if "sentence-transformers" not in args.skip:
        t, v = median_time(sentence_transformers_evaluator(q, d, targets), args.repeats)
        rows.append(("sentence-transformers IR evaluator", t, v))

    base = rows[0][1]
    base_scored = rows[1][1]
    print(f"{'implementation':<38} {'median s':>9} {'nDCG@10':>9} {'x gpukit':>9}")
    for name, seconds, value in rows:
        reference = base_scored if name.startswith("sentence") else base
        print(f"{name:<38} {seconds:9.3f} {value:9.5f} {seconds / reference:9.1f}")
    print("ratios: torchmetrics vs 'gpukit update+compute'; sentence-transformers vs 'gpukit scoring+update+compute'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
