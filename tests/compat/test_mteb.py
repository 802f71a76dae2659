"""gpukit.compat.mteb: MTEB's IndexEncoderSearchProtocol on ExactIndex/FaissIndex.

The protocol methods are checked directly against a brute-force ranking
written here (similarity per MTEB: cosine, dot, -euclidean distance; ties by
position), in full-corpus and reranking mode; where mteb is installed, also
against its own FAISS backend.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from gpukit.compat.mteb import GpukitSearchIndex
from gpukit.errors import IndexUsageError


def _similarity(name: str, q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    q, d = q.double(), d.double()
    if name == "cosine":
        return (q / q.norm(dim=1, keepdim=True)) @ (d / d.norm(dim=1, keepdim=True)).T
    if name == "dot":
        return q @ d.T
    return -torch.cdist(q, d)


def _brute(name, q, d, k):
    sims = _similarity(name, q, d)
    out_s, out_i = [], []
    for row in sims.tolist():
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))[:k]
        out_s.append([row[j] for j in order]), out_i.append(order)
    return out_s, out_i


def _data(seed=0, n=50, dim=8, queries=6):
    g = torch.Generator().manual_seed(seed)
    docs = torch.randint(-3, 4, (n, dim), generator=g).float()  # small integers: exact ties
    docs[7] = docs[3]  # a duplicate document: tied scores
    return docs, torch.randint(-3, 4, (queries, dim), generator=g).float(), [f"doc{i}" for i in range(n)]


@pytest.mark.parametrize("backend", ["exact", "faiss"])
@pytest.mark.parametrize("similarity", ["cosine", "dot", "euclidean"])
def test_full_corpus_search_equals_brute_force(similarity, backend):
    if backend == "faiss":
        pytest.importorskip("faiss")
    docs, queries, ids = _data()
    model = SimpleNamespace(mteb_model_meta=SimpleNamespace(similarity_fn_name=SimpleNamespace(value=similarity)))
    index = GpukitSearchIndex(model, backend=backend, device="cpu")
    index.add_documents(docs[:20].numpy(), ids[:20])  # two calls, numpy then torch
    index.add_documents(docs[20:], ids[20:])
    scores, positions = index.search(queries, 10, similarity_fn=None)
    want_s, want_i = _brute(similarity, queries, docs, 10)
    assert np.allclose(scores, want_s, atol=1e-4)
    if backend == "exact" and similarity != "cosine":
        assert positions == want_i  # integer dot products and distances are exact in fp32: ties by position
    else:  # fp32 cosine rounds ties apart, and FAISS orders ties its own way: check each returned score
        got = _similarity(similarity, queries, docs).gather(1, torch.tensor(positions))
        assert np.allclose(got.tolist(), want_s, atol=1e-4)
    assert len(index.search(queries, 500)[1][0]) == 50  # top_k capped at the corpus size
    index.clear()
    with pytest.raises(IndexUsageError):
        index.search(queries, 3)


@pytest.mark.parametrize("similarity", ["cosine", "dot", "euclidean"])
def test_reranking_returns_positions_within_each_candidate_list(similarity):
    docs, queries, ids = _data(1)
    index = GpukitSearchIndex(similarity=similarity, device="cpu")
    index.add_documents(docs, ids)
    top_ranked = {f"q{i}": [ids[j] for j in range(i, 50, 3)] for i in range(5)}
    top_ranked["q5"] = []
    scores, local = index.search(queries, 4, None, top_ranked=top_ranked, query_idx_to_id={i: f"q{i}" for i in range(6)})
    for i in range(5):
        cand = list(range(i, 50, 3))
        want_s, want_i = _brute(similarity, queries[i : i + 1], docs[cand], 4)
        assert np.allclose(scores[i], want_s[0], atol=1e-4)
        if similarity != "cosine":  # exact ties only without fp32 normalisation
            assert local[i] == want_i[0]
    assert scores[5] == [] and local[5] == []


def test_bad_arguments():
    with pytest.raises(IndexUsageError):
        GpukitSearchIndex(similarity="manhattan")
    with pytest.raises(IndexUsageError):
        GpukitSearchIndex(similarity="dot", backend="hnsw")
    index = GpukitSearchIndex(similarity="dot", device="cpu")
    with pytest.raises(IndexUsageError):
        index.add_documents(torch.ones(3, 4), ["a", "b"])
    index.add_documents(torch.ones(3, 4), ["a", "b", "c"])
    with pytest.raises(IndexUsageError):
        index.search(torch.ones(1, 4), 2, None, top_ranked={"q": ["a"]})


def test_mteb_protocol_and_faiss_backend_where_installed():
    mteb = pytest.importorskip("mteb")
    from mteb.models.search_encoder_index.search_indexes.faiss_search_index import (
        FaissSearchIndex,
    )

    docs, queries, ids = _data(2)
    ours = GpukitSearchIndex(similarity="dot", device="cpu")
    model = SimpleNamespace(mteb_model_meta=SimpleNamespace(similarity_fn_name=mteb.models.model_meta.ScoringFunction.DOT_PRODUCT))
    theirs = FaissSearchIndex(model)
    for backend in (ours, theirs):
        backend.add_documents(docs + torch.rand(docs.shape, generator=torch.Generator().manual_seed(0)), ids)
    a, b = ours.search(queries, 5, None), theirs.search(queries, 5, None)
    assert a[1] == b[1] and np.allclose(a[0], b[0], atol=1e-4)


def _mteb():
    return pytest.importorskip("mteb")


@pytest.mark.parametrize("similarity,function", [("cosine", "cos_sim"), ("dot", "dot_score")])
def test_scores_are_mtebs_similarity_bit_for_bit(similarity, function):
    """With the corpus and the queries in one block (as MTEB scores them: one
    similarity call per corpus chunk), every returned score is the float32 that
    mteb.similarity_functions gives, not merely close: a cosine vector
    normalised twice moves by an ulp, and near-tied documents then swap."""
    _mteb()
    from mteb import similarity_functions

    g = torch.Generator().manual_seed(3)
    docs, queries = torch.randn(3000, 96, generator=g), torch.randn(200, 96, generator=g)
    index = GpukitSearchIndex(similarity=similarity, device="cpu")
    index.add_documents(docs.numpy(), [f"d{i}" for i in range(len(docs))])
    scores, positions = index.search(queries.numpy(), 500)
    want = getattr(similarity_functions, function)(queries, docs).gather(1, torch.tensor(positions))
    assert torch.equal(torch.tensor(scores), want)


def test_satisfies_mtebs_protocol_as_mteb_defines_it():
    _mteb()
    import inspect
    from typing import Protocol, runtime_checkable

    from mteb.models.search_encoder_index.search_backend_protocol import (
        IndexEncoderSearchProtocol,
    )

    @runtime_checkable
    class Checkable(IndexEncoderSearchProtocol, Protocol):  # mteb's protocol is not runtime-checkable itself
        pass

    index = GpukitSearchIndex(similarity="cosine", device="cpu")
    assert isinstance(index, Checkable) and not isinstance(object(), Checkable)
    for method in ("add_documents", "search", "clear"):
        theirs = inspect.signature(getattr(IndexEncoderSearchProtocol, method)).parameters
        ours = inspect.signature(getattr(GpukitSearchIndex, method)).parameters
        assert list(ours) == list(theirs), method  # same names in the same order: mteb passes some by keyword
        assert all(ours[n].default is not inspect.Parameter.empty for n in theirs if theirs[n].default is not inspect.Parameter.empty)


@pytest.fixture(scope="module")
def scifact_mteb():
    """mteb's retrieval evaluation of SciFact (bundled, offline) with a hashed-words encoder."""
    mteb = _mteb()
    from mteb_encoder import HashedWords

    import gpukit.datasets
    from gpukit.compat.mteb import local_task

    return mteb, local_task(gpukit.datasets.load_scifact()), HashedWords()


def _search(wrapper, task, top_k):
    task.load_data()
    split = task.dataset["default"]["test"]
    where = dict(task_metadata=task.metadata, hf_split="test", hf_subset="default",
                 encode_kwargs={"batch_size": 512, "show_progress_bar": False})
    wrapper.index(split["corpus"], **where)
    return wrapper.search(split["queries"], top_k=top_k, **where)


def test_scifact_search_through_search_encoder_wrapper_equals_mtebs_default(scifact_mteb):
    """Per query: the same documents above the k-th score (ties and fp32 rounding
    may swap documents at the boundary), the same scores to fp32 precision."""
    mteb, task, model = scifact_mteb
    theirs = _search(mteb.models.SearchEncoderWrapper(model), task, 100)
    ours = _search(mteb.models.SearchEncoderWrapper(model, index_backend=GpukitSearchIndex(model, device="cpu")), task, 100)
    assert ours.keys() == theirs.keys() and len(theirs) == 300
    for qid, want in theirs.items():
        got = ours[qid]
        assert len(got) == len(want) == 100
        boundary = min(want.values())
        assert {d for d, s in want.items() if s > boundary + 1e-5} <= set(got), qid
        for d in set(got) & set(want):
            assert got[d] == pytest.approx(want[d], abs=1e-5)
        assert sorted(got.values()) == pytest.approx(sorted(want.values()), abs=1e-5)
        assert max(want.values()) > 0.1  # the encoder scores documents, not noise


def test_scifact_task_scores_equal_mtebs_default_backend(scifact_mteb):
    """The whole task (mteb's evaluate: search at its top_k 1000, then its
    pytrec_eval scoring; the means rounded to 5 decimals, mrr_at_* and nauc_*
    not): every score the same. This needs the search scores bit for bit
    (test_scores_are_mtebs_similarity_bit_for_bit): with scores an ulp off,
    near-tied documents swap and mrr_at_1000 moved by 8e-8, nauc_* by 1e-6.
    (MTEB's own test of its backends, tests/test_search_index/test_search_index.py,
    asks only main-score equality and pytest.approx per-document scores.)"""
    mteb, task, model = scifact_mteb
    from gpukit.compat.mteb import search_model

    encode = {"batch_size": 512, "show_progress_bar": False}
    theirs = task.evaluate(mteb.models.SearchEncoderWrapper(model), "test", encode_kwargs=encode)["default"]
    ours = task.evaluate(search_model(model, device="cpu"), "test", encode_kwargs=encode)["default"]
    assert ours == theirs
    assert 0.1 < theirs["ndcg_at_10"] < 0.5 and len(theirs) > 100
