"""``evaluate_embeddings``: encode, index, search and evaluate, on one device
or sharded over ``torch.distributed`` ranks (one device each).

Stages (each timed, with ``torch.cuda.synchronize`` before every clock read
on CUDA so a stage's time includes its kernels):

1. ``encode_corpus``  - documents as BEIR/MTEB encode them:
   ``(title + " " + text).strip()`` (or the string as given); shards read
   from the cache instead when ``cache_dir`` holds them for this
   (model, corpus) pair, and the missing ones encoded and written.
2. ``encode_queries`` - query texts.
3. ``index``          - add the corpus embeddings to the index.
4. ``search``         - top ``k`` (``k + 1`` with ``drop_self_hits``).
5. ``evaluate``       - ``Run.from_topk`` + :func:`gpukit.evaluate`.

Embeddings, search results and the run stay on ``device``; only the final
means (and the report's per-query tensors, which stay on the device) are
produced. Default similarity: the model's own (sentence-transformers
``similarity_fn_name``: ``cosine`` -> cosine, ``dot`` -> inner product,
``euclidean`` -> L2); for a plain callable, cosine when every corpus and
query embedding has unit norm (|norm - 1| <= 1e-3), inner product otherwise
(a dot-product model is scored as it was trained). ``metric=`` overrides.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import torch
from tqdm.auto import tqdm

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.datasets.beir import document_text
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import GpukitError
from gpukit.evaluation import evaluate
from gpukit.index import ExactIndex, FaissIndex, SearchIndex
from gpukit.measures import MeasureLike
from gpukit.pipelines.embedding_cache import PROBE_TEXTS, ShardedEmbeddingCache, encode_units
from gpukit.pipelines.encoders import (
    encode_texts,
    encoder_device,
    model_identifier,
    similarity_name,
)
from gpukit.pipelines.distributed import sharded_search
from gpukit.pipelines.sharding import Deal, Ranks
from gpukit.report import Report

DEFAULT_MEASURES = ("nDCG@10", "R@100", "RR@10", "AP", "P@10")
STAGES = ("encode_corpus", "encode_queries", "index", "search", "evaluate")
_SIMILARITY_TO_METRIC = {"cosine": "cosine", "dot": "ip", "dot_product": "ip", "euclidean": "l2"}
UNIT_NORM_TOLERANCE = 1e-3


@dataclass
class EmbeddingEvaluation:
    """The outcome of :func:`evaluate_embeddings`.

    Attributes:
        report: the evaluation report (per-query values stay on the device).
        run: the retrieved top-k as a :class:`~gpukit.Run` on the device.
        timings: seconds per stage (see :data:`STAGES`), device-synchronised.
        metric: the similarity used (``cosine``, ``ip`` or ``l2``).
        corpus_cached: True when the corpus embeddings came from ``cache_dir``.
        cache_file: the cache directory used or written, if any.
        device: where encoding output, index, search and evaluation lived.
        k: results kept per query.
        sizes: documents, queries and embedding dimension.
        world: processes that shared the work (1 without torch.distributed).
    """

    report: Report
    run: Run
    timings: dict[str, float]
    metric: str
    corpus_cached: bool = False
    cache_file: str | None = None
    device: str = "cpu"
    k: int = 100
    sizes: dict[str, int] = field(default_factory=dict)
    world: int = 1

    @property
    def total_seconds(self) -> float:
        return sum(self.timings.values())

    def timings_table(self) -> str:
        """One line per stage, then the total."""
        width = max(len(s) for s in self.timings) if self.timings else 5
        lines = []
        for stage, seconds in self.timings.items():
            note = " (from cache)" if stage == "encode_corpus" and self.corpus_cached else ""
            lines.append(f"{stage:<{width}}  {seconds:9.3f} s{note}")
        lines.append(f"{'total':<{width}}  {self.total_seconds:9.3f} s")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "report": self.report.to_dict(),
            "timings_s": dict(self.timings),
            "metric": self.metric,
            "corpus_cached": self.corpus_cached,
            "device": self.device,
            "k": self.k,
            "world": self.world,
            **self.sizes,
        }


class _Clock:
    """Stage timer that waits for the device before reading the clock."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.timings: dict[str, float] = {}

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def start(self) -> float:
        self._sync()
        return time.perf_counter()

    def stop(self, stage: str, started: float) -> None:
        self._sync()
        self.timings[stage] = time.perf_counter() - started


def _choose_metric(encoder: Any, metric: str | None, corpus: torch.Tensor, queries: torch.Tensor, ranks: Ranks) -> str:
    if metric is not None:
        return metric
    declared = similarity_name(encoder)
    if declared is not None:
        if declared not in _SIMILARITY_TO_METRIC:
            raise GpukitError(f"the model's similarity {declared!r} has no index metric; pass metric='cosine', 'ip' or 'l2'")
        return _SIMILARITY_TO_METRIC[declared]
    # One host read for the local shard: a pipeline decision, not a hot path.
    # Every rank must choose alike, so "not unit" is max-reduced over ranks.
    unit = all(
        bool(((x.norm(dim=1) - 1.0).abs() <= UNIT_NORM_TOLERANCE).all()) for x in (corpus, queries)
    )
    return "ip" if ranks.max_int(0 if unit else 1, corpus.device) else "cosine"


def _build_index(index: SearchIndex | str | None, dim: int, metric: str, device: torch.device) -> SearchIndex:
    if index is None or index == "exact":
        return ExactIndex(dim, metric=metric, device=device)
    if isinstance(index, str):
        return FaissIndex(dim, spec=index, metric=metric, device=device)
    if not isinstance(index, SearchIndex):
        raise GpukitError(f"index must be None, 'exact', a faiss factory string or an empty SearchIndex; got {type(index).__name__}")
    if index.ntotal:
        raise GpukitError(f"the index already holds {index.ntotal} vectors; pass an empty index (the corpus is added to it)")
    if index.dim != dim:
        raise GpukitError(f"the index has dim {index.dim} but the embeddings have {dim}")
    return index


def _drop_self_hits(
    scores: torch.Tensor, positions: torch.Tensor, query_ids: list[str], doc_position: Mapping[str, int], k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Remove, per row, the document whose id equals the query id; keep k columns.

    Self hits are moved to the end with one stable sort on a 0/1 key (the
    rest keep their order) and the row is cut to ``k``; rows without a self
    hit lose their (k+1)-th result instead.
    """
    own = torch.tensor([doc_position.get(q, -1) for q in query_ids], dtype=torch.int64, device=positions.device)
    is_self = (positions == own[:, None]) & (own[:, None] >= 0)
    order = torch.sort(is_self.to(torch.int8), dim=1, stable=True).indices
    return scores.gather(1, order)[:, :k], positions.gather(1, order)[:, :k]


def evaluate_embeddings(
    encoder: Any,
    corpus: Mapping[str, str | Mapping[str, str]],
    queries: Mapping[str, str],
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    measures: Iterable[MeasureLike] | MeasureLike = DEFAULT_MEASURES,
    *,
    k: int = 100,
    index: SearchIndex | str | None = None,
    metric: str | None = None,
    device: DeviceLike = None,
    batch_size: int = 64,
    show_progress: bool = True,
    cache_dir: str | os.PathLike | None = None,
    model_name: str | None = None,
    drop_self_hits: bool = False,
    convention: str = "gpukit",
    run_name: str | None = None,
    cache_dtype: str = "fp32",
    cache_shard_batches: int = 16,
    group: Any = None,
    distributed: bool | None = None,
) -> EmbeddingEvaluation:
    """Evaluate a dense retriever end to end (see the module docstring).

    Args:
        encoder: callable ``list[str] -> (n, d)`` or a sentence-transformers model.
        corpus: ``{doc_id: text}`` or ``{doc_id: {"title": ..., "text": ...}}``.
        queries: ``{query_id: text}``.
        qrels: :class:`~gpukit.Qrels` or ``{query_id: {doc_id: grade}}``.
        measures: measure names (default nDCG@10, R@100, RR@10, AP, P@10).
        k: results retrieved per query (``1 <= k <= len(corpus)``).
        index: ``None``/``"exact"`` (exact search), a faiss factory string, or
            an empty :class:`~gpukit.index.SearchIndex` to fill.
        metric: ``"cosine"``, ``"ip"`` or ``"l2"``; default from the model.
        device: where embeddings, index and evaluation live; default: the
            sentence-transformers model's device, else the CPU (see :mod:`gpukit.device`).
        batch_size: texts per encoder call.
        show_progress: tqdm bars while encoding.
        cache_dir: cache corpus embeddings here, in shards, resumable
            (see :mod:`~gpukit.pipelines.embedding_cache`).
        cache_dtype: their storage dtype, ``fp32``, ``fp16`` or ``bf16``; the
            index then gets the stored (rounded) vectors on every run, so a
            run from the cache equals the run that wrote it.
        cache_shard_batches: batches per cache shard (the unit of resumption
            and of dealing to ranks when caching).
        model_name: identifies the encoder for the cache (needed for plain callables).
        drop_self_hits: BEIR/MTEB option: drop a retrieved document whose id
            equals the query id (searches ``k + 1`` and drops).
        convention: evaluation convention (``"gpukit"`` or ``"trec_eval"``).
        run_name: name of the run in the report (default: the model identifier or "embeddings").
        group: ``torch.distributed`` process group (default: the world).
        distributed: ``None``: shard over the ranks when a process group is
            initialised; ``False``: one process even so; ``True``: require one.

    Under ``torch.distributed`` every rank calls this with the same arguments
    (its own ``device``); it encodes its units of the corpus
    (:mod:`~gpukit.pipelines.sharding`), keeps them in its own index, encodes
    its units of the queries and all-gathers them, and merges the ranks'
    top-k with :func:`~gpukit.pipelines.distributed.sharded_search`. Every
    rank returns the same run and report, equal bit for bit to one process's
    when the encoder gives a text the same vector in the same batch and the
    index scores a (query, document) pair alike whatever else the shard holds
    (true of ExactIndex on CPU; on CUDA, of deterministic matmul kernels).
    """
    if not corpus:
        raise GpukitError("empty corpus")
    if not queries:
        raise GpukitError("no queries")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= len(corpus):
        raise GpukitError(f"k must be an int between 1 and the corpus size {len(corpus)}; got {k!r}")
    model_device = encoder_device(encoder)
    target = resolve_device(device, model_device)
    if not isinstance(qrels, Qrels):
        qrels = Qrels.from_dict(qrels)
    ranks = Ranks.current(group, distributed)
    doc_ids = [str(d) for d in corpus]
    doc_texts = [document_text(corpus[d]) for d in corpus]
    query_ids = [str(q) for q in queries]
    query_texts = [str(queries[q]) for q in queries]
    model_id = model_identifier(encoder, model_name)
    clock = _Clock(target)
    encode = dict(device=target, batch_size=batch_size, show_progress=show_progress and ranks.rank == 0)

    # 1. this rank's units of the corpus, through the cache when asked
    started = clock.start()
    unit_rows = batch_size * (cache_shard_batches if cache_dir is not None else 1)
    deal = Deal.make(doc_texts, unit_rows, ranks.world)
    cache = None
    if cache_dir is not None:
        if model_id is None:
            raise GpukitError(
                "cache_dir needs a model identifier: pass model_name='...' for a plain callable encoder "
                "(the cache cannot tell two callables apart)"
            )
        probe = encode_texts(encoder, list(PROBE_TEXTS), device=target, batch_size=batch_size, show_progress=False)
        cache = ShardedEmbeddingCache(cache_dir, model_id, probe, doc_ids, doc_texts, cache_dtype, unit_rows)
        if ranks.rank == 0:
            cache.prepare(write=True)
        ranks.barrier()
        if ranks.rank != 0:
            cache.prepare(write=False)
    with tqdm(total=len(deal.rows(ranks.rank)), desc="encode corpus", unit="text", disable=not encode["show_progress"], leave=False) as bar:
        mine, parts, encoded = encode_units(
            lambda texts: encode_texts(encoder, texts, **{**encode, "show_progress": False}),
            deal, ranks.rank, doc_ids, doc_texts, cache, lambda flag: ranks.max_int(flag, target), bar,
        )
    cached = cache is not None and not ranks.max_int(int(encoded), target)
    dim = ranks.max_int(int(parts[0].shape[1]) if parts else 0, target)
    local_emb = torch.cat([p.to(target) for p in parts]) if parts else torch.empty((0, dim), dtype=torch.float32, device=target)
    clock.stop("encode_corpus", started)

    # 2. queries: each rank encodes its units, then all ranks gather all
    started = clock.start()
    query_deal = Deal.make(query_texts, batch_size, ranks.world)
    my_queries = query_deal.rows(ranks.rank)
    local_queries = (
        encode_texts(encoder, [query_texts[i] for i in my_queries], desc="encode queries", **encode)
        if my_queries
        else torch.empty((0, dim), dtype=torch.float32, device=target)
    )
    query_dim = ranks.max_int(int(local_queries.shape[1]) if my_queries else 0, target)
    if query_dim != dim:
        raise GpukitError(f"query dimension {query_dim} differs from corpus dimension {dim}")
    query_emb = ranks.gather_rows(
        local_queries, [query_deal.rows(r) for r in range(ranks.world)], len(query_texts), dim
    )
    clock.stop("encode_queries", started)

    # 3. index: this rank's shard, in global position order
    started = clock.start()
    chosen = _choose_metric(encoder, metric, local_emb, query_emb, ranks)
    search_index = _build_index(index, dim, chosen, target)
    shard, shard_rows = _in_rows_order(local_emb, mine)
    if shard.shape[0]:
        # Ascending global positions as ids: a shard's tie order (insertion
        # position) is then the global one, so the merge reproduces one process.
        search_index.add(shard, ids=shard_rows if ranks.world > 1 else None)
    clock.stop("index", started)

    # 4. search: local top-k, all-gathered and merged exactly
    started = clock.start()
    depth = min(k + 1, len(doc_ids)) if drop_self_hits else k
    if ranks.dist is None:
        scores, positions = search_index.search(query_emb, depth)
    else:
        scores, positions = sharded_search(search_index, query_emb, depth, group=ranks.group, shard_offset=0)
    if drop_self_hits:
        scores, positions = _drop_self_hits(scores, positions, query_ids, {d: i for i, d in enumerate(doc_ids)}, k)
    clock.stop("search", started)

    # 5. evaluate: the same run on every rank, so the same report
    started = clock.start()
    name = run_name or model_name or _short_name(model_id) or "embeddings"
    run = Run.from_topk(scores, positions, query_ids, doc_ids, name=name)
    report = evaluate(qrels, run, measures, convention=convention)
    clock.stop("evaluate", started)

    return EmbeddingEvaluation(
        report=report,
        run=run,
        timings=clock.timings,
        metric=search_index.metric,
        corpus_cached=cached,
        cache_file=None if cache is None else str(cache.directory),
        device=str(target),
        k=k,
        sizes={"documents": len(doc_ids), "queries": len(query_ids), "dim": dim},
        world=ranks.world,
    )


def _in_rows_order(embeddings: torch.Tensor, rows: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """``embeddings`` (one per entry of ``rows``) sorted by row, and the sorted rows (int64)."""
    positions = torch.as_tensor(rows, dtype=torch.int64, device=embeddings.device)
    sorted_rows, order = torch.sort(positions)
    return embeddings[order], sorted_rows


def _short_name(model_id: str | None) -> str | None:
    """``st:/path/to/all-MiniLM-L6-v2;...`` -> ``all-MiniLM-L6-v2``."""
    if not model_id:
        return None
    head = model_id.split(";", 1)[0].split(":", 1)[-1].rstrip("/\\")
    return os.path.basename(head) or head
