"""sentence-transformers' InformationRetrievalEvaluator against gpukit's subclass, same embeddings, one process.

    python bench/compare_st_evaluator.py scifact   [--repeats 5] [--device cpu]
    python bench/compare_st_evaluator.py synthetic [--queries 1024] [--docs 100000] [--dim 384] [--repeats 5]
    python bench/compare_st_evaluator.py {st|gpukit}   # one evaluator, SciFact, whole process (start-up included)

Both evaluators get a table encoder (fixed vectors looked up by text), so
encoding costs the same under both and is out of the figure: the corpus
embeddings are computed once and passed as ``corpus_embeddings``, the
queries are looked up. What is timed is ``compute_all_metrics``: the search
(similarity, top-k, ties by corpus id) and the measures, with the
evaluators' default k lists and cosine similarity. Median of ``--repeats``
calls each, the two evaluators alternating, after one warm-up call each;
every output value must agree to 1e-9 (checked, else exit 1). Printed: both
medians, their ratio and the median of the per-round ratios (each round
runs both back to back, so it is the steadier figure on a shared machine).

* scifact: SciFact test (300 queries, 5,183 documents, its qrels); fixed
  random 384-d document vectors, a query's vector is the mean of its relevant
  documents' plus noise (:data:`NOISE`) (the all-MiniLM-L6-v2 scores need minutes of CPU
  encoding; tests/compat/test_sentence_transformers.py checks the numbers
  with the real model).
* synthetic: ``--queries`` x ``--docs``, 5 relevant documents a query, the
  same kind of vectors.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from sentence_transformers import util  # noqa: E402

import gpukit.datasets  # noqa: E402
from gpukit.compat.sentence_transformers import (  # noqa: E402
    GpukitInformationRetrievalEvaluator,
    InformationRetrievalEvaluator,  # sentence-transformers' own class
)


#: Query noise per dimension: nDCG@10 well inside (0, 1) at each scale.
NOISE = {"scifact": 4.0, "synthetic": 0.7}


class TableModel:
    """Looks vectors up by text: what the evaluators use of a SentenceTransformer."""

    similarity_fn_name = "cosine"
    similarity = staticmethod(util.cos_sim)

    def __init__(self, rows: dict[str, int], table: torch.Tensor) -> None:
        self.rows, self.table = rows, table
        self.model_card_data = SimpleNamespace(set_evaluation_metrics=lambda *a: None)

    def encode(self, texts, **kwargs) -> torch.Tensor:
        return self.table[torch.tensor([self.rows[t] for t in texts], device=self.table.device)]

    encode_query = encode_document = encode


def build(queries: dict, corpus: dict, relevant: dict, dim: int, device: str, noise: float, seed: int = 0):
    """Document vectors N(0, 1); a query's vector: mean of its relevant documents' + N(0, noise^2)."""
    g = torch.Generator().manual_seed(seed)
    ids = list(corpus)
    docs = torch.randn(len(ids), dim, generator=g)
    row = {d: i for i, d in enumerate(ids)}
    qvecs = torch.stack([docs[[row[d] for d in relevant[q] if d in row] or [0]].mean(0) for q in queries])
    qvecs += noise * torch.randn(qvecs.shape, generator=g)
    texts = {**{corpus[d]: i for i, d in enumerate(ids)}, **{queries[q]: len(ids) + j for j, q in enumerate(queries)}}
    model = TableModel(texts, torch.cat([docs, qvecs]).to(device))
    return model, docs.to(device)


def scifact_data():
    data = gpukit.datasets.load_scifact()
    qrels = data.qrels.to_dict()
    corpus = {d: gpukit.datasets.document_text(doc) for d, doc in data.corpus.items()}
    queries = {q: data.queries[q] for q in qrels}
    relevant = {q: {d for d, g in docs.items() if g >= 1} for q, docs in qrels.items()}
    return queries, corpus, relevant


def synthetic_data(n_queries: int, n_docs: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed + 1)
    corpus = {f"d{j}": f"doc {j}" for j in range(n_docs)}
    queries = {f"q{i}": f"query {i}" for i in range(n_queries)}
    picks = torch.randint(0, n_docs, (n_queries, 5), generator=g).tolist()
    relevant = {f"q{i}": {f"d{j}" for j in picks[i]} for i in range(n_queries)}
    return queries, corpus, relevant


def flat(result: dict) -> dict:
    return {(k, key, at): float(v) for k, measures in result.items() for key, per in measures.items() for at, v in per.items()}


def compare(queries, corpus, relevant, dim: int, device: str, repeats: int, noise: float) -> int:
    model, corpus_embeddings = build(queries, corpus, relevant, dim, device, noise)
    kwargs = dict(show_progress_bar=False, score_functions={"cosine": util.cos_sim}, write_csv=False)
    evaluators = {"sentence-transformers": InformationRetrievalEvaluator(queries, corpus, relevant, **kwargs),
                  "gpukit": GpukitInformationRetrievalEvaluator(queries, corpus, relevant, **kwargs)}
    times: dict[str, list[float]] = {name: [] for name in evaluators}
    results = {}
    for r in range(repeats + 1):  # round 0 warms up and is not counted
        for name in (list(evaluators) if r % 2 else list(evaluators)[::-1]):
            started = time.perf_counter()
            results[name] = flat(evaluators[name].compute_all_metrics(model, corpus_embeddings=corpus_embeddings))
            if r:
                times[name].append(time.perf_counter() - started)
    theirs, ours = results["sentence-transformers"], results["gpukit"]
    worst = max(abs(ours[key] - theirs[key]) for key in theirs)
    st, gk = statistics.median(times["sentence-transformers"]), statistics.median(times["gpukit"])
    print(f"{len(queries)} queries x {len(corpus)} documents, dim {dim}, device {device}, "
          f"CPU threads {torch.get_num_threads()}, {repeats} repeats")
    print(f"sentence-transformers {st:8.3f} s  (min {min(times['sentence-transformers']):.3f})")
    print(f"gpukit                {gk:8.3f} s  (min {min(times['gpukit']):.3f})")
    paired = statistics.median(a / b for a, b in zip(times["sentence-transformers"], times["gpukit"]))
    print(f"sentence-transformers / gpukit: {st / gk:.2f}x (medians), {paired:.2f}x (median of paired rounds); "
          f"{len(theirs)} values, max |diff| {worst:.2g}; "
          f"ndcg@10 {theirs[('cosine', 'ndcg@k', 10)]:.6f}")
    return 0 if ours.keys() == theirs.keys() and worst <= 1e-9 else 1


def whole_process(which: str, device: str = "cpu") -> None:
    """One evaluator through ``__call__`` (queries and corpus looked up), for a whole-process timing."""
    queries, corpus, relevant = scifact_data()
    model, _ = build(queries, corpus, relevant, 384, device, NOISE['scifact'])
    cls = GpukitInformationRetrievalEvaluator if which == "gpukit" else InformationRetrievalEvaluator
    evaluator = cls(queries, corpus, relevant, name="scifact", show_progress_bar=False)
    print(evaluator(model)[evaluator.primary_metric])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("st", "gpukit"):
        whole_process(*argv)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", choices=["scifact", "synthetic"])
    parser.add_argument("--queries", type=int, default=1024)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    data = scifact_data() if args.data == "scifact" else synthetic_data(args.queries, args.docs)
    return compare(*data, args.dim, args.device, args.repeats, NOISE[args.data])


if __name__ == "__main__":
    sys.exit(main())
