"""sentence-transformers' ``InformationRetrievalEvaluator``, searched and scored by gpukit
(extra ``sentence-transformers``).

``GpukitInformationRetrievalEvaluator`` takes the same constructor and returns
the same keys (``{name}_cosine_ndcg@10``, ..., and sets ``primary_metric``);
only ``compute_all_metrics`` changes: the corpus is encoded in
``corpus_chunk_size`` chunks, held in one :class:`gpukit.index.ExactIndex` on
the model's device, searched once for the largest k, and every measure comes
from one :func:`gpukit.evaluate` call instead of per-query Python loops.

Measures (sentence-transformers -> gpukit): accuracy@k = Success@k,
precision@k = P@k (relevant in the top k / k), recall@k = R@k, mrr@k = RR@k,
ndcg@k = nDCG@k (DCG = sum_i g_i / log2(i + 1), ideal from every judged
document of the query), map@k = APCap@k (sum of P@i at relevant ranks i <= k,
divided by min(k, R)). Means are over the queries with a relevant document,
as sentence-transformers does.

Ranking: by score, ties by corpus id ascending (sentence-transformers 6's
rule; the index holds the corpus in corpus-id order and breaks ties by
position). Scores: the model's similarity (``cosine``, ``dot`` or
``euclidean``; euclidean ranks as gpukit's ``l2``), or ``score_functions``
given as ``sentence_transformers.util.cos_sim`` / ``dot_score``. Any other
score function, or ``write_predictions=True``, falls back to
sentence-transformers' own computation.

Graded qrels: ``relevant_docs`` may map a query to ``{doc: grade}`` instead
of a set. Then nDCG uses the grades as gains; the binary measures count grade
>= 1 as relevant; a query without a grade >= 1 is left out. With sets every
relevant document has grade 1 and the numbers are sentence-transformers'.
"""
from __future__ import annotations

from typing import Any

import torch
from sentence_transformers import util

from gpukit.index.topk import sort_by_score_then_index

try:  # sentence-transformers >= 6 (the old path still works there, with a warning)
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
except ImportError:
    from sentence_transformers.evaluation import InformationRetrievalEvaluator

__all__ = ["GpukitInformationRetrievalEvaluator", "InformationRetrievalEvaluator"]

#: sentence-transformers similarity name -> ExactIndex metric (same ranking).
METRICS = {"cosine": "cosine", "dot": "ip", "euclidean": "l2"}
_FUNCTIONS = {util.cos_sim: "cosine", util.dot_score: "ip"}
#: sentence-transformers result key -> gpukit family.
FAMILIES = {"accuracy@k": "Success", "precision@k": "P", "recall@k": "R", "ndcg@k": "nDCG", "mrr@k": "RR", "map@k": "APCap"}


class GpukitInformationRetrievalEvaluator(InformationRetrievalEvaluator):
    """``InformationRetrievalEvaluator`` with gpukit search and measures (see the module docstring)."""

    def __init__(self, queries: dict, corpus: dict, relevant_docs: dict, *args: Any, **kwargs: Any) -> None:
        self.grades = {q: (dict(d) if isinstance(d, dict) else dict.fromkeys(d, 1)) for q, d in relevant_docs.items()}
        binary = {q: {d for d, g in docs.items() if g >= 1} for q, docs in self.grades.items()}
        super().__init__(queries, corpus, binary, *args, **kwargs)

    def _metrics(self, model: Any) -> dict[str, str] | None:
        """Score-function name -> ExactIndex metric, or None when one is not gpukit's."""
        if self._score_functions_from_model:
            metric = METRICS.get(str(model.similarity_fn_name))
            return None if metric is None else {name: metric for name in self.score_functions}
        out = {name: _FUNCTIONS.get(fn) for name, fn in self.score_functions.items()}
        return None if None in out.values() else out  # type: ignore[return-value]

    def compute_all_metrics(self, model: Any, corpus_model: Any = None, corpus_embeddings: torch.Tensor | None = None,
                            output_path: str | None = None) -> dict:
        metrics = self._metrics(model)
        if metrics is None or self.write_predictions:
            return super().compute_all_metrics(model, corpus_model, corpus_embeddings, output_path)
        import gpukit
        from gpukit.index import ExactIndex

        corpus_model = model if corpus_model is None else corpus_model
        queries = self.embed_inputs(model, self.queries, encode_fn_name="query", prompt_name=self.query_prompt_name,
                                    prompt=self.query_prompt)
        if corpus_embeddings is None:
            chunks = [self.embed_inputs(corpus_model, self.corpus[i : i + self.corpus_chunk_size], encode_fn_name="document",
                                        prompt_name=self.corpus_prompt_name, prompt=self.corpus_prompt)
                      for i in range(0, len(self.corpus), self.corpus_chunk_size)]
            corpus_embeddings = torch.cat(chunks)
        elif corpus_embeddings.is_sparse:
            corpus_embeddings = corpus_embeddings.to_dense()
        corpus_embeddings = torch.as_tensor(corpus_embeddings, device=queries.device)
        id_rank, corpus, qrels = self._fixed_inputs()
        ks = {key: getattr(self, attr) for key, attr in (("accuracy@k", "accuracy_at_k"), ("precision@k", "precision_recall_at_k"),
              ("recall@k", "precision_recall_at_k"), ("ndcg@k", "ndcg_at_k"), ("mrr@k", "mrr_at_k"), ("map@k", "map_at_k"))}
        depth = min(max(max(v) for v in ks.values()), len(corpus))
        names = [f"{FAMILIES[key]}@{k}" for key, values in ks.items() for k in values]
        qids = list(self.queries_ids)
        out = {}
        for name, metric in metrics.items():
            ranks = _search_by_id_rank(ExactIndex, metric, corpus_embeddings, queries.float(), depth, id_rank)
            # Scores that encode the ranking, so evaluate's own tie rule has nothing to break.
            rank_scores = torch.arange(depth, 0, -1, device=ranks.device, dtype=torch.float64).expand(len(qids), depth)
            report = gpukit.evaluate(qrels, gpukit.Run.from_topk(rank_scores, ranks, qids, corpus), names,
                                     device=queries.device)
            out[name] = {key: {k: report[f"{FAMILIES[key]}@{k}"].mean for k in values} for key, values in ks.items()}
        return out

    def _fixed_inputs(self) -> tuple[torch.Tensor | None, Any, Any]:
        """What depends only on the ids and judgments, built on the first call and
        then reused (training calls the evaluator every few hundred steps): the
        rank of each corpus position's id among the sorted ids (``None``: the
        ids are sorted already), the sorted ids' doc keys
        (:class:`gpukit.io.corpus_keys.CorpusKeys`) and the qrels of the
        queries. Rebuilt if ``corpus_ids``, ``queries_ids`` or the judgments are
        replaced (not if they are edited in place)."""
        import gpukit
        from gpukit.io.corpus_keys import CorpusKeys

        key = (id(self.corpus_ids), id(self.queries_ids), id(self.grades))
        cached = getattr(self, "_gpukit_fixed", None)
        if cached is None or cached[0] != key:
            ids = self.corpus_ids
            order = sorted(range(len(ids)), key=ids.__getitem__)
            id_rank = None
            if any(i != j for i, j in enumerate(order)):
                id_rank = torch.empty(len(order), dtype=torch.int64)
                id_rank[torch.tensor(order, dtype=torch.int64)] = torch.arange(len(order))
            corpus = CorpusKeys([ids[i] for i in order], "corpus")
            qrels = gpukit.Qrels.from_dict({q: self.grades[q] for q in self.queries_ids})
            # The objects themselves are kept with the key, so that an id() is never reused while cached.
            cached = (key, (id_rank, corpus, qrels), (self.corpus_ids, self.queries_ids, self.grades))
            self._gpukit_fixed = cached
        return cached[1]

    compute_metrices = compute_all_metrics


def _search_by_id_rank(index_type: Any, metric: str, corpus: torch.Tensor, queries: torch.Tensor, depth: int,
                       id_rank: torch.Tensor | None) -> torch.Tensor:
    """(Q, depth) ranks (among the sorted corpus ids) of each query's top ``depth``
    documents, by score descending and corpus id ascending (sentence-transformers 6's rule).

    The index breaks score ties by position. With the corpus in id order
    (``id_rank`` None) its positions are the ranks. Otherwise the corpus is
    searched as given (no reordered copy of it) one result deeper: when no
    row's ``depth``-th score ties the next one, the top ``depth`` set is the
    same under either tie rule and only its order within ties is redone, by
    (score, id rank); a row tied across the cut (rare with float scores)
    sends the search to a copy of the corpus in id order.
    """
    n = corpus.shape[0]
    index = index_type(corpus.shape[1], metric=metric, device=queries.device)
    index.add(corpus.float())
    if id_rank is None:
        return index.search(queries, depth)[1]
    scores, positions = index.search(queries, min(depth + 1, n))
    if depth == n or not bool((scores[:, depth - 1] == scores[:, depth]).any()):
        ranks = id_rank.to(positions.device)[positions[:, :depth]]
        return sort_by_score_then_index(scores[:, :depth], ranks)[1]
    order = torch.empty_like(id_rank)
    order[id_rank] = torch.arange(n)
    index = index_type(corpus.shape[1], metric=metric, device=queries.device)
    index.add(corpus[order.to(corpus.device)].float())
    return index.search(queries, depth)[1]
