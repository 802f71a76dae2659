"""The ranking form of diversity evaluation: per-subtopic grades, (T, K, S).

:class:`SubtopicRanking` holds, per topic, the grade of each ranked
document for each subtopic of the topic (``NOT_JUDGED`` where the document
is not judged for that subtopic, and for padding), plus what ndeval derives
from the judgments alone: per relevance level, each topic's documents
relevant to some subtopic (in docno order, for the greedy ideal ranking),
the relevant documents per subtopic, and the number of subtopics with a
relevant document.

It is formed with :func:`gpukit.judgments.prefs_ranking.form_judgment_group_ranking`
(each (topic, subtopic) is one ordinary ranking row: the same sort -- score
descending, ties by docno descending, trec_eval's and ``ndeval
-traditional``'s order -- the same ``max_depth`` cut and join), then
gathered into (T, K, S). Memory: T x K x S int32 grades.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import torch

from gpukit.data.run import Run
from gpukit.judgments.subtopics import SubtopicQrels
from gpukit.io.string_coding import lookup_codes, string_codes
from gpukit.metrics.diversity import GreedyIdeal
from gpukit.judgments.prefs_ranking import _group_index, form_judgment_group_ranking
from gpukit.ranking import NOT_JUDGED


@dataclass(frozen=True)
class SubtopicRanking:
    """Per-subtopic judged rankings of one run over a topic set, on one device.

    Attributes:
        query_ids: the topics (byte-wise sorted), T of them.
        grades: (T, K, S) int32 grade of the document at each rank for each
            subtopic slot of the topic (slots in subtopic order); NOT_JUDGED
            where not judged for that subtopic and for padding.
        num_ret: (T,) retrieved documents (after max depth).
        in_run: (T,) whether the run ranks the topic.
        run_queries_not_in_qrels: run queries without subtopic judgments (ignored).
    """

    query_ids: list[str]
    grades: torch.Tensor
    num_ret: torch.Tensor
    in_run: torch.Tensor
    run_queries_not_in_qrels: int
    qrels: SubtopicQrels = field(repr=False, compare=False)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def cached(self, key: Any, make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    @property
    def device(self) -> torch.device:
        return self.grades.device

    def relevant(self, rel: int, judged_only: bool = False) -> torch.Tensor:
        """(T, K, S) bool: the ranked document's grade for the subtopic is >= ``rel``.

        ``judged_only`` first removes the ranked documents not judged for any
        subtopic of the topic (ir_measures' judged_only), closing the gaps."""
        return self.cached(("relevant", rel, judged_only), lambda: self._grades(judged_only) >= rel)

    def _grades(self, judged_only: bool) -> torch.Tensor:
        if not judged_only:
            return self.grades
        judged = (self.grades != NOT_JUDGED).any(2)
        order = torch.sort((~judged).to(torch.int8), dim=1, stable=True).indices
        kept = self.grades.gather(1, order[:, :, None].expand_as(self.grades))
        return kept.masked_fill(~judged.gather(1, order)[:, :, None], NOT_JUDGED)

    def ideal(self, rel: int) -> torch.Tensor:
        """(T, J, S) bool: each topic's documents relevant (grade >= rel) to some
        subtopic, in docno (byte) order, and the subtopics they are relevant to."""
        return self.cached(("ideal", rel), lambda: _ideal_relevance(self.qrels, self.query_ids, rel,
                                                                     self.grades.shape[2], self.device))

    def relevant_per_subtopic(self, rel: int) -> torch.Tensor:
        """(T, S) documents of the judgments relevant to each subtopic slot."""
        return self.cached(("per_subtopic", rel), lambda: self.ideal(rel).sum(1))

    def num_subtopics(self, rel: int) -> torch.Tensor:
        """(T,) subtopics with at least one relevant document (ndeval's actual subtopics)."""
        return self.cached(("num_subtopics", rel), lambda: (self.relevant_per_subtopic(rel) > 0).sum(1))

    def ideal_gains(self, rel: int, alpha: float, depth: int) -> torch.Tensor:
        """(T, depth) novelty gains of the greedy ideal ranking (one per (rel, alpha),
        extended as deep as the normalised families of the evaluation ask)."""
        return self.cached(("greedy", rel, alpha), lambda: GreedyIdeal(self.ideal(rel), alpha)).gains(depth)


def _ideal_relevance(qrels: SubtopicQrels, query_ids: list[str], rel: int, n_slots: int,
                     device: torch.device) -> torch.Tensor:
    topic_codes = lookup_codes(pa.array(query_ids, pa.string()), qrels.query_ids)
    topic_of_query = np.full(qrels.num_queries, -1, dtype=np.int64)
    topic_of_query[topic_codes] = np.arange(len(query_ids))
    slot, _ = _group_index([qrels.query_codes, qrels.subtopic_codes])
    doc_codes = string_codes(qrels.doc_ids)[0].astype(np.int64)  # byte order of docnos
    t = topic_of_query[qrels.query_codes]
    keep = (t >= 0) & (qrels.grades >= rel)
    t, slot, doc_codes = t[keep], slot[keep], doc_codes[keep]
    # Distinct (topic, doc) pairs in docno order: each a document index j within its topic.
    order = np.lexsort((doc_codes, t))
    ts, ds = t[order], doc_codes[order]
    new = np.r_[True, (ts[1:] != ts[:-1]) | (ds[1:] != ds[:-1])] if len(ts) else np.zeros(0, dtype=bool)
    pair = np.cumsum(new) - 1
    j_of_pair, _ = _group_index([ts[new], np.arange(int(new.sum()))]) if len(ts) else (np.zeros(0, np.int64), None)
    width = int(j_of_pair.max()) + 1 if len(j_of_pair) else 0
    out = torch.zeros((len(query_ids), width, max(n_slots, 1)), dtype=torch.bool, device=device)
    if len(ts):
        idx = [torch.from_numpy(a).to(device) for a in (ts, j_of_pair[pair], slot[order])]
        out[idx[0], idx[1], idx[2]] = True
    return out[:, :, :n_slots] if n_slots else out[:, :, :0]


def form_subtopic_ranking(qrels: SubtopicQrels, run: Run, *, complete: bool, max_depth: int | None = None,
                          score_dtype: torch.dtype = torch.float64) -> SubtopicRanking:
    """Join ``run`` with per-subtopic judgments on the run's device.

    Topic set as :func:`gpukit.ranking.form_ranking`: the judged queries the
    run ranks, or with ``complete`` all of them."""
    rows = form_judgment_group_ranking(qrels.as_judgment_groups(), run, complete=complete, max_depth=max_depth,
                                       score_dtype=score_dtype)
    row_grades = rows.groups.grades  # (R, K)
    row_of = rows.row_of  # (T, S)
    grades = row_grades[row_of.clamp(min=0)].masked_fill((row_of < 0)[:, :, None], NOT_JUDGED)  # (T, S, K)
    return SubtopicRanking(
        query_ids=rows.query_ids,
        grades=grades.transpose(1, 2).contiguous(),
        num_ret=rows.num_ret,
        in_run=rows.in_run,
        run_queries_not_in_qrels=rows.run_queries_not_in_qrels,
        qrels=qrels,
    )
