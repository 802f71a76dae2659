"""The ranking forms of preference and judgment-group evaluation.

:class:`PrefsRanking` is trec_eval's form_prefs_counts.c as tensors: per
topic, the judged documents (every document of any preference line) indexed
by docid rank — the retrieved ones first, in ranking order, then the others
in docno order — and, per judgment group (JG), the transitively closed
preference relation over them as a (T, G, D, D) boolean tensor. Note that
trec_eval ranks a run here by score descending with ties by docno
*ascending* (its form_prefs_counts.c sorts so), unlike every other measure
(docno descending); gpukit does the same.

:class:`JudgmentGroupRanking` is form_res_rels_jg.c: each (topic, JG) is a row
of an ordinary :class:`~gpukit.ranking.RankedJudgments` (ties by docno
descending, as usual), with a (T, G) table of each topic's rows.

Memory: the preference tensor holds T x G x D x D booleans (D: the most
judged documents of a topic), e.g. 50 topics x 1 JG x 2000 documents is
200 MB — fine for preference files, large for -R qrels_prefs on big qrels.
What is not one batched op, and why: the transitive closure squares the
relation until nothing changes (at most log2(D) batched products, only for
JGs of several JSGs), and JSG slots are OR-ed in a loop over the slot index
(a handful), never over topics.

Both are formed once per evaluation with :func:`gpukit.ranking.form_ranking`
(sorting, ``max_depth``, joining) and feed the kernels of
:mod:`gpukit.metrics.prefs`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import torch

from gpukit.judgments.prefs import Prefs
from gpukit.judgments.qrels import Qrels
from gpukit.judgments.judgment_groups import JudgmentGroups
from gpukit.data.run import Run
from gpukit.io.arrow_numpy import arrow_indices
from gpukit.io.string_coding import lookup_codes
from gpukit.errors import InputFormatError
from gpukit.ranking import RankedJudgments, form_ranking


@dataclass(frozen=True)
class PrefsRanking:
    """Preferences of one run over a topic set, on one device.

    Attributes:
        query_ids: the topics (byte-wise sorted), T of them.
        prefs: (T, G, D, D) bool; ``prefs[t, g, a, b]``: JG g of topic t
            prefers document a to b; documents indexed by docid rank, JGs in
            JG id order, padding False.
        present: (T, G, D) bool, the document is judged in the JG.
        relevant: (T, G, D) bool, its level in the JG is > 0.
        lowest: (T, G, D) bool, for JGs of one JSG: the document is in the
            JG's lowest level (trec_eval's last equivalence class).
        single: (T, G) bool, the JG has one JSG (levels form classes).
        valid: (T, G) bool, the JG exists (padding False).
        num_judged_ret: (T,) judged documents retrieved (njr).
        num_judged: (T,) judged documents of the topic.
        num_ret: (T,) retrieved documents (after max depth).
        in_run: (T,) whether the run ranks the topic.
        run_queries_not_in_qrels: run queries without preferences (ignored).
    """

    query_ids: list[str]
    prefs: torch.Tensor
    present: torch.Tensor
    relevant: torch.Tensor
    lowest: torch.Tensor
    single: torch.Tensor
    valid: torch.Tensor
    num_judged_ret: torch.Tensor
    num_judged: torch.Tensor
    num_ret: torch.Tensor
    in_run: torch.Tensor
    run_queries_not_in_qrels: int
    # Counts reused by several measures of one evaluation.
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def cached(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    @property
    def device(self) -> torch.device:
        return self.prefs.device


def _group_index(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by ``keys`` (outer first): (index of the row's group
    among those sharing all but the last key, new-group flags)."""
    n = len(keys[0])
    new_outer = np.ones(n, dtype=bool)
    for k in keys[:-1]:
        new_outer[1:] &= k[1:] == k[:-1]
    new_outer = ~new_outer
    new_outer[:1] = True
    new = new_outer.copy()
    new[1:] |= keys[-1][1:] != keys[-1][:-1]
    group = np.cumsum(new) - 1
    outer_first_group = np.maximum.accumulate(np.where(new_outer, group, 0))
    return group - outer_first_group, new


def _prefs_order_run(run: Run) -> Run:
    """The run with each row ranked by score descending, ties by docno
    ascending (trec_eval's form_prefs_counts.c), padding last."""
    codes, scores = run.doc_codes, run.scores
    key = codes.masked_fill(codes < 0, torch.iinfo(torch.int64).max)
    by_key = torch.sort(key, dim=1, stable=True).indices
    keyed = scores.gather(1, by_key).masked_fill(codes.gather(1, by_key) < 0, -torch.inf)
    perm = by_key.gather(1, torch.sort(keyed, dim=1, descending=True, stable=True).indices)
    return Run(run.query_ids, run.doc_space, codes.gather(1, perm), scores.gather(1, perm), run.name)


def form_prefs_ranking(prefs: Prefs, run: Run, *, complete: bool, max_depth: int | None = None) -> PrefsRanking:
    """Join ``run`` with preference judgments on the run's device.

    Topic set as :func:`gpukit.ranking.form_ranking`: the preference queries
    the run ranks, or with ``complete`` all of them. Raises
    :class:`~gpukit.errors.InputFormatError` for an inconsistent JG (a
    preference cycle across its JSGs), as trec_eval aborts on one.
    """
    device = run.device
    qc, dc = prefs.query_codes, prefs.doc_codes
    # Distinct (query, doc) pairs, sorted: doc index j within its query (docno order).
    pair_order = np.lexsort((dc, qc))
    pq, pd = qc[pair_order], dc[pair_order]
    first = np.r_[True, (pq[1:] != pq[:-1]) | (pd[1:] != pd[:-1])]
    pair_of_sorted = np.cumsum(first) - 1
    pair_of_row = np.empty(len(qc), dtype=np.int64)
    pair_of_row[pair_order] = pair_of_sorted
    uq, ud = pq[first], pd[first]
    j_of_pair, _ = _group_index([uq, np.arange(len(uq))])
    judged = Qrels.from_arrays(
        prefs.query_ids.take(arrow_indices(uq)), prefs.doc_ids.take(arrow_indices(ud)), j_of_pair, source=prefs.source
    )
    ranked = form_ranking(judged, _prefs_order_run(run), complete=complete, max_depth=max_depth, score_dtype=run.scores.dtype)
    topic_codes = lookup_codes(pa.array(ranked.query_ids, pa.string()), prefs.query_ids)
    n_topics = len(topic_codes)
    topic_of_query = np.full(prefs.num_queries, -1, dtype=np.int64)
    topic_of_query[topic_codes] = np.arange(n_topics)
    judged_per_query = np.bincount(uq, minlength=prefs.num_queries)
    num_judged = torch.from_numpy(judged_per_query[topic_codes]).to(device)
    width = max(int(num_judged.max()) if n_topics else 0, 1)

    # Docid ranks: retrieved judged documents by rank, then the rest by docno.
    grades = ranked.grades
    k = grades.shape[1]
    is_judged = grades >= 0
    njr = is_judged.sum(1)
    j_axis = torch.arange(width, device=device)
    sort_key = torch.where(j_axis[None, :] < num_judged[:, None], k + j_axis[None, :], 2 * k + width + j_axis[None, :])
    sort_key = torch.cat([sort_key, torch.zeros((n_topics, 1), dtype=sort_key.dtype, device=device)], 1)
    column = torch.where(is_judged, grades.to(torch.int64), torch.full_like(grades, width, dtype=torch.int64))
    sort_key.scatter_(1, column, torch.arange(k, device=device).expand(n_topics, k).contiguous())
    order = torch.argsort(sort_key[:, :width], dim=1, stable=True)
    rank_of = torch.empty_like(order).scatter_(1, order, j_axis.expand(n_topics, width).contiguous())

    # Preference lines of the topics: (topic, JG slot, JSG slot, docid rank, level).
    jg_slot, _ = _group_index([prefs.query_codes, prefs.jg_codes])
    jsg_slot, _ = _group_index([prefs.query_codes, prefs.jg_codes, prefs.jsg_codes])
    t_of_row = topic_of_query[prefs.query_codes]
    keep = t_of_row >= 0
    n_g = int(jg_slot.max()) + 1 if len(jg_slot) else 1
    n_s = int(jsg_slot.max()) + 1 if len(jsg_slot) else 1
    t_row = torch.from_numpy(t_of_row[keep]).to(device)
    g_row = torch.from_numpy(jg_slot[keep]).to(device)
    s_row = torch.from_numpy(jsg_slot[keep]).to(device)
    j_row = torch.from_numpy(j_of_pair[pair_of_row[keep]]).to(device)
    d_row = rank_of[t_row, j_row]
    levels = torch.full((n_topics, n_g, n_s, width), float("nan"), dtype=torch.float64, device=device)
    levels[t_row, g_row, s_row, d_row] = torch.from_numpy(prefs.levels[keep]).to(device)

    valid = torch.zeros((n_topics, n_g), dtype=torch.bool, device=device)
    valid[t_row, g_row] = True
    # JSGs per JG: the largest JSG slot + 1.
    flat = torch.zeros(n_topics * n_g, dtype=torch.int64, device=device)
    flat.scatter_reduce_(0, t_row * n_g + g_row, s_row + 1, reduce="amax")
    single = flat.view(n_topics, n_g) == 1

    present = ~levels.isnan().all(2)
    relevant = (levels > 0).any(2)
    prefs_t = torch.zeros((n_topics, n_g, width, width), dtype=torch.bool, device=device)
    for s in range(n_s):  # JSG slots (few): a JSG prefers higher levels to lower ones
        ls = levels[:, :, s]
        prefs_t |= ls[..., :, None] > ls[..., None, :]
    multi = valid & ~single
    if bool(multi.any()):
        prefs_t[multi] = _closure(prefs_t[multi], ranked.query_ids, prefs, topic_codes, multi)
    first_level = levels[:, :, 0]
    low = torch.where(present, first_level, torch.full_like(first_level, float("inf"))).amin(2, keepdim=True)
    lowest = present & (first_level == low) & single[:, :, None]
    return PrefsRanking(
        query_ids=ranked.query_ids,
        prefs=prefs_t,
        present=present,
        relevant=relevant,
        lowest=lowest,
        single=single,
        valid=valid,
        num_judged_ret=njr,
        num_judged=num_judged,
        num_ret=ranked.num_ret,
        in_run=ranked.in_run,
        run_queries_not_in_qrels=ranked.run_queries_not_in_qrels,
    )


def _closure(sub: torch.Tensor, query_ids: list[str], prefs: Prefs, topic_codes: np.ndarray, multi: torch.Tensor) -> torch.Tensor:
    """Transitive closure of (M, D, D) preference relations (squaring until
    nothing changes, at most log2(D) products); a cycle is an error."""
    closed = sub
    while True:
        f = closed.to(torch.float32)
        nxt = closed | (torch.bmm(f, f) > 0)
        if torch.equal(nxt, closed):
            break
        closed = nxt
    cyclic = (closed & closed.transpose(1, 2)).any((1, 2))
    if bool(cyclic.any()):
        which = torch.nonzero(multi)[int(torch.nonzero(cyclic)[0])].tolist()
        t, g = which
        q = int(topic_codes[t])
        jgs = np.unique(prefs.jg_codes[prefs.query_codes == q])
        raise InputFormatError(
            prefs.source, None,
            f"query {query_ids[t]!r} JG {prefs.jg_ids[int(jgs[g])].as_py()!r}: inconsistent preferences "
            "(a document is preferred to itself through its JSGs)",
        )
    return closed


@dataclass(frozen=True)
class JudgmentGroupRanking:
    """A run joined with judgments of several JGs per topic.

    Attributes:
        query_ids: the topics (byte-wise sorted), T of them.
        groups: one ranking row per (topic, JG), rows grouped by topic.
        row_of: (T, G) int64 row of ``groups`` of each JG of a topic, -1 padding.
        num_ret: (T,) retrieved documents (after max depth).
        in_run: (T,) whether the run ranks the topic.
        run_queries_not_in_qrels: run queries without judgments (ignored).
    """

    query_ids: list[str]
    groups: RankedJudgments
    row_of: torch.Tensor
    num_ret: torch.Tensor
    in_run: torch.Tensor
    run_queries_not_in_qrels: int

    @property
    def device(self) -> torch.device:
        return self.row_of.device


def form_judgment_group_ranking(
    groups: JudgmentGroups, run: Run, *, complete: bool, max_depth: int | None = None,
    score_dtype: torch.dtype = torch.float64,
) -> JudgmentGroupRanking:
    """Join ``run`` with each JG of each topic (rows of one RankedJudgments).

    Each (query, JG) becomes a pseudo-topic named by its zero-padded index
    (so that the byte order of the names is the (query, JG) order) with the
    query's run row, and :func:`~gpukit.ranking.form_ranking` does the rest.
    """
    device = run.device
    qc, gc = groups.query_codes, groups.jg_codes
    new = np.r_[True, (qc[1:] != qc[:-1]) | (gc[1:] != gc[:-1])]
    pair_of_row = np.cumsum(new) - 1
    pair_q = qc[new]
    n_pairs = len(pair_q)
    digits = len(str(max(n_pairs - 1, 0)))
    names = np.char.zfill(np.arange(n_pairs).astype(str), digits)
    qrels = Qrels.from_arrays(pa.array(names[pair_of_row]), groups.doc_ids, groups.grades, source=groups.source)
    run_row_of_query = lookup_codes(groups.query_ids, run.query_ids)
    pair_rows = run_row_of_query[pair_q]
    in_run_pairs = np.flatnonzero(pair_rows >= 0)
    pseudo_names = names[in_run_pairs]
    if not len(in_run_pairs):  # no judged query in the run: one row no pseudo-topic matches
        in_run_pairs, pair_rows, pseudo_names = np.zeros(1, np.int64), np.zeros(1, np.int64), np.array(["~"])
    take = torch.from_numpy(pair_rows[in_run_pairs]).to(device)
    pseudo = Run(pa.array(pseudo_names, pa.string()), run.doc_space, run.doc_codes.index_select(0, take),
                 run.scores.index_select(0, take), run.name)
    rows = form_ranking(qrels, pseudo, complete=complete, max_depth=max_depth, score_dtype=score_dtype)
    row_pair = np.asarray([int(n) for n in rows.query_ids], dtype=np.int64)
    row_q = pair_q[row_pair]
    topic_new = np.r_[True, row_q[1:] != row_q[:-1]] if len(row_q) else np.zeros(0, dtype=bool)
    topic_of_row = np.cumsum(topic_new) - 1
    topics = row_q[topic_new]
    slot, _ = _group_index([row_q, np.arange(len(row_q))]) if len(row_q) else (np.zeros(0, np.int64), None)
    n_topics, n_g = len(topics), (int(slot.max()) + 1 if len(slot) else 1)
    row_of = np.full((n_topics, n_g), -1, dtype=np.int64)
    row_of[topic_of_row, slot] = np.arange(len(row_q))
    first_row = torch.from_numpy(row_of[:, 0]).to(device)
    run_not_judged = int((lookup_codes(run.query_ids, groups.query_ids) < 0).sum())
    return JudgmentGroupRanking(
        query_ids=groups.query_ids.take(arrow_indices(topics)).to_pylist(),
        groups=rows,
        row_of=torch.from_numpy(row_of).to(device),
        num_ret=rows.num_ret[first_row] if n_topics else rows.num_ret[:0],
        in_run=rows.in_run[first_row] if n_topics else rows.in_run[:0],
        run_queries_not_in_qrels=run_not_judged,
    )
