"""Measures of a *pair* of runs: instruction following (FollowIR's p-MRR).

FollowIR (Weller et al., 2024, arXiv:2403.15246) asks a system the same query
under an original instruction and under a changed, stricter one, and checks
that the documents the change makes non-relevant move down the ranking.
:func:`p_mrr` computes it as MTEB does (``mteb/_evaluators/retrieval_metrics.py``:
``calculate_pmrr``, ``get_rank_from_dict``, ``rank_score``, read 2026-08):

* rank of a document in a run: 1-based position after sorting the query's
  documents by score descending, ties by doc id descending; a document the
  run does not retrieve ranks at (number retrieved + 1). The whole ranking
  counts (no depth cut).
* per changed document, with o = its rank under the original instruction and
  n = under the changed one: ``(1/o) / (1/n) - 1`` when o >= n (it moved up or
  stayed: <= 0), else ``1 - (1/n) / (1/o)`` (it moved down: > 0). Range
  (-1, 1); 0 = no change.
* per query: the mean over its changed documents; p-MRR: the mean over the
  queries, each query counting once. A query that a run does not rank at all
  is skipped (MTEB logs a warning and skips it), and is listed in ``skipped``.

Changed documents: judged relevant (grade >= ``rel``) under the original
judgments and not relevant under the changed ones (a lower grade, or no
judgment), for queries judged on both sides -- FollowIR's changes only ever
remove relevance. Documents that *gain* relevance have no p-MRR sign; they are
counted in ``gained_relevance`` and not scored. Pass ``changed_docs`` (MTEB's
``qrel_diff`` split: {query: [doc ids]}) to score exactly a given list instead.

Ranks are found batched: the changed documents of each query are numbered
0..n-1 and used as the "grades" of a judgment set, so that one
:func:`~gpukit.ranking.form_ranking` per run places every changed document of
every query at once, with the trec_eval sort gpukit uses everywhere.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import UsageError, UsageTypeError
from gpukit.metrics.cutoffs import ordered_prefix_at
from gpukit.qrels_diff import judgment_changes
from gpukit.ranking import form_ranking


@dataclass(frozen=True)
class PMRRResult:
    """p-MRR of a pair of runs.

    Attributes:
        query_ids: the scored queries (byte-wise sorted).
        per_query: float64 (Q,) per-query p-MRR, aligned with ``query_ids``.
        mean: the mean of ``per_query`` (NaN when no query is scored).
        docs: per changed document (query, doc, rank under the original
            instruction, rank under the changed one, its score).
        skipped: queries with changed documents that a run does not rank.
        gained_relevance: documents that became relevant (not scored).
    """

    query_ids: list[str]
    per_query: torch.Tensor
    mean: float
    docs: list[tuple[str, str, int, int, float]]
    skipped: list[str]
    gained_relevance: int

    @property
    def by_query(self) -> dict[str, float]:
        return dict(zip(self.query_ids, self.per_query.tolist()))

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "p-MRR": None if math.isnan(self.mean) else self.mean,
            "queries": len(self.query_ids),
            "changed_docs": len(self.docs),
            "skipped_queries": self.skipped,
            "gained_relevance_not_scored": self.gained_relevance,
            "conventions": CONVENTIONS,
        }
        if per_query:
            out["per_query"] = self.by_query
            out["docs"] = [
                {"query_id": q, "doc_id": d, "og_rank": o, "changed_rank": n, "p-MRR": s} for q, d, o, n, s in self.docs
            ]
        return out

    def to_text(self, per_query: bool = False) -> str:
        lines = [
            f"p-MRR  {self.mean:.4f}  over {len(self.query_ids)} queries, {len(self.docs)} changed documents "
            f"(skipped queries: {len(self.skipped)}; documents that gained relevance, not scored: {self.gained_relevance})",
        ]
        if per_query:
            for q, v in self.by_query.items():
                lines.append(f"{q}\t{v:.4f}")
            for q, d, o, n, s in self.docs:
                lines.append(f"  {q}\t{d}\trank {o} -> {n}\t{s:+.4f}")
        lines.append("conventions: " + "; ".join(f"{k}: {v}" for k, v in CONVENTIONS.items()))
        return "\n".join(lines)


CONVENTIONS = {
    "changed documents": "relevant under the original judgments, not relevant under the changed ones",
    "rank": "score descending, ties by doc id descending; not retrieved = number retrieved + 1",
    "document score": "(1/o)/(1/n) - 1 if o >= n, else 1 - (1/n)/(1/o) (o, n: original and changed ranks)",
    "aggregate": "mean over a query's changed documents, then mean over queries (MTEB)",
}


def _as_qrels(value: Any, name: str) -> Qrels:
    if isinstance(value, Qrels):
        return value
    if isinstance(value, Mapping):
        return Qrels.from_dict(value, source=f"<{name}>")
    raise UsageTypeError(f"{name} must be a gpukit.Qrels or a {{query: {{doc: grade}}}} dict, got {type(value).__name__}")


def _as_run(value: Any, name: str) -> Run:
    if isinstance(value, Run):
        return value
    if isinstance(value, Mapping):
        return Run.from_dict(value, name=name)
    raise UsageTypeError(f"{name} must be a gpukit.Run or a {{query: {{doc: score}}}} dict, got {type(value).__name__}")


def _changed_pairs(qrels_og: Qrels, qrels_changed: Qrels, rel: int) -> tuple[pa.Array, pa.Array, int]:
    """(query ids, doc ids) of the documents that lost relevance, and how many gained it."""
    changes = judgment_changes(qrels_og, qrels_changed)
    both = pc.is_in(changes["query_id"], value_set=qrels_changed.query_ids)
    both = pc.and_(both, pc.is_in(changes["query_id"], value_set=qrels_og.query_ids))
    old_rel = pc.fill_null(pc.greater_equal(changes["old_grade"], rel), False)
    new_rel = pc.fill_null(pc.greater_equal(changes["new_grade"], rel), False)
    lost = pc.and_(both, pc.and_(old_rel, pc.invert(new_rel)))
    gained = pc.and_(both, pc.and_(new_rel, pc.invert(old_rel)))
    kept = changes.filter(lost)
    return kept["query_id"].combine_chunks(), kept["doc_id"].combine_chunks(), int(pc.sum(gained).as_py() or 0)


def _explicit_pairs(changed_docs: Mapping[str, Iterable[str]]) -> tuple[pa.Array, pa.Array]:
    queries, docs = [], []
    for q, ids in changed_docs.items():
        for d in dict.fromkeys(ids):  # a document listed twice is one document
            queries.append(str(q))
            docs.append(str(d))
    return pa.array(queries, type=pa.string()), pa.array(docs, type=pa.string())


def _ranks(numbered: Qrels, run: Run, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(T, width) int64 rank of each numbered changed document in ``run`` (retrieved + 1 when absent),
    and (T,) whether the run ranks the query at all."""
    r = form_ranking(numbered, run, complete=True)
    found = r.grades >= 0  # the grade is the document's number within its query
    positions = torch.arange(1, r.grades.shape[1] + 1, device=r.device, dtype=torch.int64).expand_as(r.grades)
    ranks = torch.zeros((r.num_topics, width), dtype=torch.int64, device=r.device)
    ranks.scatter_reduce_(1, r.grades.clamp(min=0).to(torch.int64), torch.where(found, positions, 0), reduce="amax")
    ranks = torch.where(ranks > 0, ranks, (r.num_ret + 1)[:, None])
    return ranks, r.in_run


def p_mrr(
    qrels_og: Qrels | Mapping,
    run_og: Run | Mapping,
    qrels_changed: Qrels | Mapping | None,
    run_changed: Run | Mapping,
    *,
    rel: int = 1,
    changed_docs: Mapping[str, Iterable[str]] | None = None,
    device: DeviceLike = None,
) -> PMRRResult:
    """FollowIR's p-MRR of a run under an original and a changed instruction (see the module docstring).

    Args:
        qrels_og, qrels_changed: the judgments under the original and the
            changed instruction (``Qrels`` or ``{query: {doc: grade}}``);
            ``qrels_changed`` may be ``None`` when ``changed_docs`` is given.
        run_og, run_changed: the runs under each instruction, same query ids.
        rel: minimum grade counted as relevant (FollowIR: 1).
        changed_docs: score exactly these {query: [doc ids]} (MTEB's qrel_diff)
            instead of the documents that lost relevance.
        device: where to rank (default: ``run_og``'s device).

    Returns:
        A :class:`PMRRResult` (per query, mean, per document, skipped queries).
    """
    if isinstance(rel, bool) or not isinstance(rel, int) or rel < 0:
        raise UsageError(f"rel must be a non-negative integer grade, got {rel!r}")
    og_run, ch_run = _as_run(run_og, "run_og"), _as_run(run_changed, "run_changed")
    gained = 0
    if changed_docs is not None:
        queries, docs = _explicit_pairs(changed_docs)
    else:
        if qrels_changed is None:
            raise UsageError("p_mrr needs qrels_changed, or changed_docs listing the changed documents")
        queries, docs, gained = _changed_pairs(_as_qrels(qrels_og, "qrels_og"), _as_qrels(qrels_changed, "qrels_changed"), rel)
    target = resolve_device(device, og_run.device)
    og_run, ch_run = og_run.to(target), ch_run.to(target)
    if len(queries) == 0:
        return PMRRResult([], torch.zeros(0, dtype=torch.float64), float("nan"), [], [], gained)

    # Number each query's changed documents 0..n-1 (rows come sorted by query, then doc).
    order = pc.sort_indices(pa.table({"q": queries, "d": docs}), sort_keys=[("q", "ascending"), ("d", "ascending")])
    queries, docs = queries.take(order), docs.take(order)
    q_np = np.asarray(pc.dictionary_encode(queries).indices)
    starts = np.flatnonzero(np.r_[True, q_np[1:] != q_np[:-1]])
    counts = np.diff(np.r_[starts, len(q_np)])
    number = np.arange(len(q_np)) - np.repeat(starts, counts)
    numbered = Qrels.from_arrays(queries, docs, number, source="<changed documents>")
    width = int(counts.max())

    o, in_og = _ranks(numbered, og_run, width)
    n, in_ch = _ranks(numbered, ch_run, width)
    valid = torch.arange(width, device=target)[None, :] < torch.from_numpy(counts).to(target)[:, None]
    o, n = o.to(torch.float64), n.to(torch.float64)
    # MTEB's operations, in its order, so that the float results are the same.
    score = torch.where(o >= n, (1.0 / o) / (1.0 / n) - 1.0, 1.0 - (1.0 / n) / (1.0 / o))
    score = torch.where(valid, score, torch.zeros_like(score))
    per_query = ordered_prefix_at(score, [None])[:, 0] / torch.from_numpy(counts).to(target, torch.float64)

    scored = in_og & in_ch
    topic_ids = numbered.query_id_list()  # byte-wise sorted, as form_ranking's topics
    keep = scored.cpu().tolist()
    kept_ids = [q for q, k in zip(topic_ids, keep) if k]
    values = per_query[scored]
    mean = float(ordered_prefix_at(values[None, :], [None])[0, 0] / len(kept_ids)) if kept_ids else float("nan")
    doc_list = docs.to_pylist()
    details = []
    o_l, n_l, s_l = o.long().cpu().tolist(), n.long().cpu().tolist(), score.cpu().tolist()
    for t, (start, count) in enumerate(zip(starts.tolist(), counts.tolist())):
        if keep[t]:
            for j in range(count):
                details.append((topic_ids[t], doc_list[start + j], o_l[t][j], n_l[t][j], s_l[t][j]))
    skipped = [q for q, k in zip(topic_ids, keep) if not k]
    return PMRRResult(kept_ids, values.cpu(), mean, details, skipped, gained)
