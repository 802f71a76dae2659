"""An MTEB search backend on gpukit's indexes (MTEB's ``IndexEncoderSearchProtocol``; extra ``mteb``).

``GpukitSearchIndex`` has the protocol's three methods, so it can be given as
``SearchEncoderWrapper(model, index_backend=GpukitSearchIndex(model))``:

* ``add_documents(embeddings, idxs)``: appends to an
  :class:`~gpukit.index.ExactIndex` (default) or a
  :class:`~gpukit.index.FaissIndex` (``backend="faiss"``, ``spec=``) on
  ``device``; numpy or torch input.
* ``search(embeddings, top_k, similarity_fn, top_ranked=None, query_idx_to_id=None)``:
  full-corpus mode returns ``(scores, positions in the added corpus)``, at most
  ``top_k`` per query; reranking mode (``top_ranked``: query id -> candidate
  doc ids) scores only each query's candidates and returns positions *within
  that candidate list*, as MTEB's FAISS backend does.
* ``clear()``: forget every document.

Similarity comes from the model's ``mteb_model_meta.similarity_fn_name`` (or
``similarity=``): ``cosine`` and ``dot`` are scored as MTEB scores them;
``euclidean`` is ranked by gpukit's ``l2`` (-|q - x|^2) and returned as
-|q - x|, MTEB's euclidean similarity. Ties: score descending, then the
smaller position (corpus insertion order; candidate order when reranking).
``similarity_fn`` is not called: the index computes the same similarity.
The index needs no mteb import (the protocol is structural).

``search_model(model, **options)`` builds ``SearchEncoderWrapper(model,
index_backend=GpukitSearchIndex(model, **options))`` from a subclass that
reads the corpus ids once as a list: mteb 2.26 passes its ``datasets``
column to the per-hit id lookup of every index backend (its FAISS one too),
which costs about 0.1 ms a lookup, 30 s or more for SciFact's 300 x 1,000
hits. The ids and scores are mteb's either way.

``local_task(data)`` makes an mteb retrieval task of a BEIR collection
already on disk (:func:`gpukit.datasets.load_beir` /
:func:`~gpukit.datasets.load_scifact`), so a task runs with no network:
mteb's own ``load_data`` downloads from the Hugging Face Hub.
"""
from __future__ import annotations

from functools import cache
from typing import Any, Callable

import torch

from gpukit.device import DeviceLike
from gpukit.errors import IndexUsageError

__all__ = ["GpukitSearchIndex", "local_task", "search_model"]

#: MTEB ScoringFunction value -> gpukit index metric.
METRICS = {"cosine": "cosine", "dot": "ip", "euclidean": "l2"}


def _similarity_name(model: Any, similarity: str | None) -> str:
    if similarity is None:
        meta = getattr(model, "mteb_model_meta", None)
        value = getattr(meta, "similarity_fn_name", None)
        similarity = getattr(value, "value", value)
    if similarity not in METRICS:
        raise IndexUsageError(f"GpukitSearchIndex supports similarity {', '.join(METRICS)}; got {similarity!r}")
    return str(similarity)


class GpukitSearchIndex:
    """MTEB ``IndexEncoderSearchProtocol`` backend (see the module docstring)."""

    def __init__(self, model: Any = None, *, similarity: str | None = None, backend: str = "exact",
                 spec: str = "Flat", device: DeviceLike = "auto") -> None:
        if backend not in ("exact", "faiss"):
            raise IndexUsageError(f"backend must be 'exact' or 'faiss'; got {backend!r}")
        self.similarity = _similarity_name(model, similarity)
        self.metric = METRICS[self.similarity]
        self.backend, self.spec, self.device = backend, spec, device
        self.idxs: list[str] = []
        self.index: Any = None
        self._vectors: list[torch.Tensor] = []  # kept for reranking (candidate subsets)

    def _new_index(self, dim: int) -> Any:
        from gpukit.index import ExactIndex

        if self.backend == "exact":
            return ExactIndex(dim, metric=self.metric, device=self.device)
        from gpukit.index import FaissIndex

        # FAISS has no cosine metric: normalised vectors under inner product.
        return FaissIndex(dim, spec=self.spec, metric="ip" if self.metric == "cosine" else self.metric, device=self.device)

    def _prepare(self, embeddings: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(what the index is given, the vectors scored: normalised for cosine).

        Cosine vectors are normalised once, by ``F.normalize(x, p=2, dim=1)`` in
        float32 as MTEB's ``cos_sim`` does: ExactIndex normalises what it is
        given, and normalising twice moves about a third of SciFact's vectors
        by an ulp, so scores drift from MTEB's by up to 2e-7 and near-tied
        documents can swap. FAISS has no cosine metric: it gets the
        normalised vectors under inner product.
        """
        raw = torch.as_tensor(embeddings).detach().float()
        if raw.dim() != 2:
            raise IndexUsageError(f"embeddings must be (n, dim); got shape {tuple(raw.shape)}")
        if self.metric != "cosine":
            return raw, raw
        scored = torch.nn.functional.normalize(raw, p=2, dim=1)
        return (raw if self.backend == "exact" else scored), scored

    def add_documents(self, embeddings: Any, idxs: list[str]) -> None:
        """Append documents (embeddings (n, dim), ids of length n)."""
        given, vectors = self._prepare(embeddings)
        if vectors.shape[0] != len(idxs):
            raise IndexUsageError(f"{vectors.shape[0]} embeddings but {len(idxs)} ids")
        if self.index is None:
            self.index = self._new_index(vectors.shape[1])
        self.index.add(given.to(self.index.device))
        self._vectors.append(vectors.cpu())
        self.idxs.extend(idxs)

    def _scores(self, queries: torch.Tensor, docs: torch.Tensor) -> torch.Tensor:
        if self.metric == "l2":
            return -torch.cdist(queries, docs) ** 2
        return queries @ docs.T

    def _returned(self, scores: torch.Tensor) -> list[list[float]]:
        # MTEB's euclidean similarity is -distance; the index ranks by -distance^2.
        return (-torch.sqrt((-scores).clamp(min=0)) if self.metric == "l2" else scores).tolist()

    def search(self, embeddings: Any, top_k: int, similarity_fn: Callable | None = None, top_ranked: dict | None = None,
               query_idx_to_id: dict[int, str] | None = None) -> tuple[list[list[float]], list[list[int]]]:
        """Top ``top_k`` (scores, positions) per query; see the module docstring for reranking."""
        if self.index is None:
            raise IndexUsageError("no documents: call add_documents first")
        given, queries = self._prepare(embeddings)
        if top_ranked is None:
            scores, positions = self.index.search(given.to(self.index.device), min(top_k, self.index.ntotal))
            return self._returned(scores.cpu()), positions.cpu().tolist()
        if query_idx_to_id is None:
            raise IndexUsageError("query_idx_to_id is needed when reranking top_ranked documents")
        stored = torch.cat(self._vectors)
        position = {d: i for i, d in enumerate(self.idxs)}
        all_scores, all_idx = [], []
        for i in range(queries.shape[0]):
            candidates = top_ranked.get(query_idx_to_id[i]) or []
            if not candidates:
                all_scores.append([]), all_idx.append([])
                continue
            scores = self._scores(queries[i : i + 1], stored[[position[d] for d in candidates]])[0]
            # Stable sort: ties keep the candidate order.
            order = torch.sort(scores, descending=True, stable=True).indices[:top_k]
            all_scores.append(self._returned(scores[order]))
            all_idx.append(order.tolist())
        return all_scores, all_idx

    def clear(self) -> None:
        """Forget every document (MTEB calls this after each search)."""
        self.index, self.idxs, self._vectors = None, [], []


@cache
def _wrapper_class() -> type:
    from mteb.models import SearchEncoderWrapper

    class GpukitSearchEncoderWrapper(SearchEncoderWrapper):
        """``SearchEncoderWrapper`` that maps hit positions to ids through a list, not a ``datasets`` column."""

        def _sort_full_corpus_results(self, *, sub_corpus_ids: Any, **kwargs: Any) -> Any:
            return super()._sort_full_corpus_results(sub_corpus_ids=list(sub_corpus_ids), **kwargs)

    return GpukitSearchEncoderWrapper


def search_model(model: Any, *, corpus_chunk_size: int = 50_000, **options: Any) -> Any:
    """An mteb search model: ``model`` encodes, a :class:`GpukitSearchIndex` (``options``) searches.

    For ``mteb.evaluate(search_model(model, device="cuda"), tasks)`` or a task's
    ``evaluate``; needs mteb (``pip install gpukit[mteb]``).
    """
    return _wrapper_class()(model, corpus_chunk_size=corpus_chunk_size, index_backend=GpukitSearchIndex(model, **options))


def local_task(data: Any, name: str | None = None, main_score: str = "ndcg_at_10") -> Any:
    """An mteb ``AbsTaskRetrieval`` over ``data`` (a :class:`gpukit.datasets.BeirData`), split ``data.split``.

    Queries are the split's judged ones (``load_beir`` refuses a judged query
    without text); documents keep their ``title`` and ``text`` fields, which
    mteb joins as it does for its own tasks. Needs mteb and ``datasets``.
    """
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
    from mteb.abstasks.task_metadata import TaskMetadata

    task_name = name or f"{data.name}-local"
    qrels = data.qrels.to_dict()
    metadata = TaskMetadata(
        type="Retrieval", name=task_name, main_score=main_score, description=f"{data.name} {data.split}, read from local files",
        reference=None, dataset={"path": "local", "revision": "local"}, category="t2t", eval_splits=[data.split],
        eval_langs=["eng-Latn"], date=None, dialect=[], domains=[], task_subtypes=[], license="not specified",
        annotations_creators=None, modalities=["text"], sample_creation=None, bibtex_citation="")

    def load_data(self: Any, num_proc: int | None = None, **kwargs: Any) -> None:
        corpus = Dataset.from_list([{"id": d, "title": doc.get("title") or "", "text": doc.get("text") or ""}
                                    for d, doc in data.corpus.items()])
        queries = Dataset.from_list([{"id": q, "text": data.queries[q]} for q in qrels])
        split = RetrievalSplitData(queries=queries, corpus=corpus, relevant_docs=qrels, top_ranked=None)
        self.dataset, self.data_loaded = {"default": {data.split: split}}, True

    task_class = type("LocalRetrievalTask", (AbsTaskRetrieval,), {"metadata": metadata, "load_data": load_data})
    return task_class()
