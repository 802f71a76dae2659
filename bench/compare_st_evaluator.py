"""sentence-transformers' InformationRetrievalEvaluator vs gpukit's subclass at SciFact scale.

    python bench/compare_st_evaluator.py {st|gpukit} [device]

SciFact test (300 queries, 5,183 documents, its qrels) with fixed random
384-d embeddings standing in for all-MiniLM-L6-v2 (a lookup-table encoder):
encoding costs the same under both evaluators, so this times what differs,
the search and the measures (plus imports, as a whole process). Prints the
primary metric.
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from sentence_transformers import util  # noqa: E402
from gpukit.compat.sentence_transformers import InformationRetrievalEvaluator  # noqa: E402  (ST's own class)

import gpukit.datasets  # noqa: E402


class TableModel:
    """Random document vectors; a query's vector is its relevant documents' mean plus noise."""

    def __init__(self, corpus: dict, queries: dict, relevant: dict, device: str) -> None:
        g = torch.Generator().manual_seed(0)
        ids = list(corpus)
        docs = torch.randn(len(ids), 384, generator=g)
        row = {d: i for i, d in enumerate(ids)}
        qvecs = [docs[[row[d] for d in relevant[q] if d in row] or [0]].mean(0) + 0.3 * torch.randn(384, generator=g) * 10 for q in queries]
        self.rows = {**{corpus[d]: i for i, d in enumerate(ids)}, **{queries[q]: len(ids) + j for j, q in enumerate(queries)}}
        table = torch.cat([docs, torch.stack(qvecs)]).to(device)
        self.table, self.similarity_fn_name, self.similarity = table, "cosine", util.cos_sim
        self.model_card_data = SimpleNamespace(set_evaluation_metrics=lambda *a: None)

    def encode(self, texts, **kwargs):
        return self.table[torch.tensor([self.rows[t] for t in texts], device=self.table.device)]

    encode_query = encode_document = encode


def main(which: str, device: str = "cpu") -> None:
    data = gpukit.datasets.load_scifact()
    qrels = data.qrels.to_dict()
    corpus = {d: gpukit.datasets.document_text(doc) for d, doc in data.corpus.items()}
    queries = {q: data.queries[q] for q in qrels}
    relevant = {q: {d for d, g in docs.items() if g >= 1} for q, docs in qrels.items()}
    model = TableModel(corpus, queries, relevant, device)
    if which == "gpukit":
        from gpukit.compat.sentence_transformers import GpukitInformationRetrievalEvaluator as cls
    else:
        cls = InformationRetrievalEvaluator
    evaluator = cls(queries, corpus, relevant, name="scifact")
    print(evaluator(model)[evaluator.primary_metric])


if __name__ == "__main__":
    main(*sys.argv[1:])
