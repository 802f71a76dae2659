"""The single "form ranking" stage shared by every measure.

As in trec_eval: each query's documents are sorted by score descending, ties
broken by document id descending (byte-wise); an optional maximum depth is
applied after sorting; the ranking is joined with the judgments once. The
result is a padded (T, K) grade tensor plus, per topic, the judged grades
sorted descending (for ideal DCG and relevant counts). Every measure is then a
cheap reduction over these tensors.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from gpukit.data.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import InputFormatError

#: Grade of a retrieved document absent from the qrels (and of padding).
NOT_JUDGED = -(2**31)


@dataclass(frozen=True)
class RankedJudgments:
    """Judged rankings of one run over a topic set, on one device.

    Attributes:
        query_ids: the topics (byte-wise sorted), T of them.
        grades: (T, K) int32; grade of the document at each rank; ``NOT_JUDGED``
            for documents absent from the qrels and for padding; negative
            grades from the qrels ("in pool, unjudged") are kept as they are.
        num_ret: (T,) int64 number of retrieved documents (after max depth).
        ideal: (T, L) int32 judged grades (>= 0) of each topic sorted
            descending, padded with -1; retrieved or not.
        in_run: (T,) bool, whether the run has a ranking for the topic.
        run_queries_not_in_qrels: run queries ignored for lack of judgments.
    """

    query_ids: list[str]
    grades: torch.Tensor
    num_ret: torch.Tensor
    ideal: torch.Tensor
    in_run: torch.Tensor
    run_queries_not_in_qrels: int
    # Masks and counts reused by several measures of one evaluation.
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def _cached(self, key: tuple, make):
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    @property
    def num_topics(self) -> int:
        return len(self.query_ids)

    @property
    def device(self) -> torch.device:
        return self.grades.device

    def judged(self) -> torch.Tensor:
        """(T, K) bool: document judged (grade >= 0)."""
        return self._cached(("judged",), lambda: self.grades >= 0)

    def relevant(self, rel: int) -> torch.Tensor:
        """(T, K) bool: document judged with grade >= ``rel``."""
        return self._cached(("relevant", rel), lambda: self.grades >= rel)

    def running_hits(self, rel: int) -> torch.Tensor:
        """(T, K) int32: relevant documents at ranks 1..i, shared by P, R, AP, Rprec."""
        return self._cached(("running_hits", rel), lambda: self.relevant(rel).cumsum(1, dtype=torch.int32))

    def num_relevant(self, rel: int) -> torch.Tensor:
        """(T,) number of judged documents with grade >= ``rel`` (retrieved or not)."""
        return self._cached(("num_relevant", rel), lambda: (self.ideal >= rel).sum(1))

    def num_judged(self) -> torch.Tensor:
        return (self.ideal >= 0).sum(1)


def form_ranking(
    qrels: Qrels,
    run: Run,
    *,
    complete: bool,
    max_depth: int | None = None,
    score_dtype: torch.dtype = torch.float64,
) -> RankedJudgments:
    """Sort, cut and join ``run`` with ``qrels`` on the run's device.

    Topic set: the qrels queries that the run ranks, or with ``complete`` every
    qrels query (those absent from the run get an empty ranking). Scores are
    compared in ``score_dtype`` (float32 reproduces trec_eval builds that store
    scores as float).
    """
    device = run.device
    # Map run rows onto qrels query codes (hash lookup in Arrow, no Python loop).
    row_to_qrels = pc.index_in(run.query_ids, value_set=qrels.query_ids).fill_null(-1).to_numpy(zero_copy_only=False)
    row_to_qrels = row_to_qrels.astype(np.int64)
    in_qrels = row_to_qrels >= 0
    run_queries_not_in_qrels = int((~in_qrels).sum())
    row_of_query = np.full(qrels.num_queries, -1, dtype=np.int64)
    row_of_query[row_to_qrels[in_qrels]] = np.flatnonzero(in_qrels)
    if complete:
        topics = np.arange(qrels.num_queries, dtype=np.int64)
    else:
        topics = np.flatnonzero(row_of_query >= 0)
    topic_rows = torch.from_numpy(row_of_query[topics]).to(device)
    in_run = topic_rows >= 0

    # Rows of the topics, in topic order; missing topics are empty rows.
    safe_rows = topic_rows.clamp(min=0)
    codes = run.doc_codes.index_select(0, safe_rows)
    codes = codes.masked_fill(~in_run[:, None], -1)
    scores = run.scores.index_select(0, safe_rows).to(score_dtype)
    # Rows are sorted by code descending, so one stable sort by score gives
    # score desc with ties by docno desc; -inf keeps padding last.
    keyed = scores.masked_fill(codes < 0, -torch.inf)
    order = torch.sort(keyed, dim=1, descending=True, stable=True).indices
    codes = codes.gather(1, order)
    if max_depth is not None:
        if max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, got {max_depth}")
        codes = codes[:, :max_depth]
    num_ret = (codes >= 0).sum(1)

    grades = _join_grades(qrels, run, codes, torch.from_numpy(topics).to(device))
    ideal = _ideal_grades(qrels, topics, device)
    query_ids = qrels.query_ids.take(pa.array(topics)).to_pylist()
    return RankedJudgments(query_ids, grades, num_ret, ideal, in_run, run_queries_not_in_qrels)


def _join_grades(qrels: Qrels, run: Run, codes: torch.Tensor, topic_qcodes: torch.Tensor) -> torch.Tensor:
    """Grade of each ranked document via a sorted-key search on the device."""
    device = codes.device
    n_vocab = max(len(run.doc_ids), 1)
    # Qrels doc codes expressed in the run's vocabulary (-1: never retrieved).
    to_run_vocab = pc.index_in(qrels.doc_ids, value_set=run.doc_ids).fill_null(-1).to_numpy(zero_copy_only=False)
    judged_codes = to_run_vocab.astype(np.int64)[qrels.doc_codes]
    keep = judged_codes >= 0
    # Both vocabularies are byte-sorted, so the keys stay sorted after the map.
    qkeys = torch.from_numpy(qrels.query_codes[keep] * n_vocab + judged_codes[keep]).to(device)
    qgrades = torch.from_numpy(qrels.grades[keep]).to(device=device, dtype=torch.int32)
    run_keys = topic_qcodes[:, None] * n_vocab + codes.clamp(min=0)
    if qkeys.numel() == 0:
        return torch.full(codes.shape, NOT_JUDGED, dtype=torch.int32, device=device)
    pos = torch.searchsorted(qkeys, run_keys).clamp(max=qkeys.numel() - 1)
    found = (qkeys[pos] == run_keys) & (codes >= 0)
    return torch.where(found, qgrades[pos], torch.full_like(pos, NOT_JUDGED, dtype=torch.int32))


def _ideal_grades(qrels: Qrels, topics: np.ndarray, device: torch.device) -> torch.Tensor:
    """(T, L) judged grades per topic, sorted descending, padded with -1."""
    topic_of_query = np.full(qrels.num_queries, -1, dtype=np.int64)
    topic_of_query[topics] = np.arange(len(topics), dtype=np.int64)
    t = topic_of_query[qrels.query_codes]
    keep = (t >= 0) & (qrels.grades >= 0)
    t, g = t[keep], qrels.grades[keep]
    # Sort by (topic asc, grade desc): lexsort's last key is the primary one.
    order = np.lexsort((-g, t))
    t, g = t[order], g[order]
    counts = np.bincount(t, minlength=len(topics))
    width = int(counts.max()) if len(t) else 0
    starts = np.cumsum(counts) - counts
    pos = np.arange(len(t), dtype=np.int64) - starts[t]
    ideal = np.full((len(topics), max(width, 1)), -1, dtype=np.int32)
    ideal[t, pos] = g
    if np.abs(qrels.grades).max(initial=0) >= 2**31 - 1:
        raise InputFormatError(qrels.source, None, "grades must fit in 32 bits")
    return torch.from_numpy(ideal).to(device)
