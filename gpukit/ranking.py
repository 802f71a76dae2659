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
from typing import Callable

import numpy as np
import torch

from gpukit.data.row_ranking import ranking_permutation, row_slices, unranked_rows
from gpukit.data.run import Run
from gpukit.errors import UsageError
from gpukit.grade_join import _AnnotatedJoin, _GradeJoin, _row_lengths
from gpukit.ideal_grades import NOT_JUDGED, _ideal_classes, _ideal_grades  # noqa: F401 (NOT_JUDGED: imported from here)
from gpukit.io.arrow_numpy import arrow_indices
from gpukit.io.string_coding import lookup_codes
from gpukit.judgments.qrels import Qrels
from gpukit.metrics.binary import running_hits

#: Largest max_depth an int64 tensor comparison can hold.
INT64_MAX = 2**63 - 1


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
        return self._cached(("running_hits", rel), lambda: running_hits(self.relevant(rel)))

    def has_running_hits(self, rel: int) -> bool:
        """Whether :meth:`running_hits` at ``rel`` is formed already."""
        return ("running_hits", rel) in self._memo

    def num_relevant(self, rel: int) -> torch.Tensor:
        """(T,) number of judged documents with grade >= ``rel`` (retrieved or not)."""
        return self._cached(("num_relevant", rel), lambda: (self.ideal >= rel).sum(1))

    def has_relevant(self, rel: int) -> torch.Tensor:
        """(T, 1) bool: the topic has a judged document with grade >= ``rel``
        (R > 0), the defined-mask of R, AP, Rprec...; a column, so that each
        measure's mask is a broadcast view of this one tensor."""
        return self._cached(("has_relevant", rel), lambda: (self.num_relevant(rel) > 0)[:, None])

    def num_judged(self) -> torch.Tensor:
        return (self.ideal >= 0).sum(1)

    def annotated(self) -> torch.Tensor:
        """(T, K) bool: the ranked document is judged for *some* query of the qrels,
        any grade (BEIR's and MTEB's "annotated corpus", read by Hole@k). Formed on
        first use, by the same sort and cut as ``grades``."""

        def make() -> torch.Tensor:
            reform = self._memo.get(("reform",))
            if reform is None:
                raise UsageError("this ranking was not formed from qrels and a run, so which documents are annotated is unknown")
            return reform(_AnnotatedJoin) >= 0

        return self._cached(("annotated",), make)


def form_ranking(
    qrels: Qrels,
    run: Run,
    *,
    complete: bool,
    max_depth: int | None = None,
    score_dtype: torch.dtype = torch.float64,
    join: type | None = None,
) -> RankedJudgments:
    """Sort, cut and join ``run`` with ``qrels`` on the run's device.

    Topic set: the qrels queries that the run ranks, or with ``complete`` every
    qrels query (those absent from the run get an empty ranking). Scores are
    compared in ``score_dtype`` (float32 reproduces trec_eval builds that store
    scores as float). ``join`` replaces the grade join (a ``_GradeJoin``
    subclass, e.g. ``_AnnotatedJoin``) to rank something else in the same order.
    """
    found = _topics_of(qrels, run, complete, max_depth)
    return _form_ranking(qrels, run, found, max_depth=max_depth, score_dtype=score_dtype, join=join)


def _form_ranking(
    qrels: Qrels,
    run: Run,
    found: tuple[np.ndarray, np.ndarray, int],
    *,
    max_depth: int | None,
    score_dtype: torch.dtype,
    join: type | None = None,
) -> RankedJudgments:
    """:func:`form_ranking` given ``found``, the :func:`_topics_of` of its arguments
    (:func:`form_ranking_parts` has it already: the lookup is not done twice)."""
    device = run.device
    topics, topic_rows_np, run_queries_not_in_qrels = found
    topic_rows = torch.from_numpy(topic_rows_np).to(device)
    # Every run row is a topic, in order (the usual case): rows are read in place.
    identity = len(topics) == run.num_queries and np.array_equal(topic_rows_np, np.arange(len(topics)))
    depth = run.depth
    width = depth if max_depth is None else min(depth, max_depth)
    codes_of_rows = run.doc_codes  # padded on demand for a run in blocks
    # Scores are read (and, after Run.to, copied) only to compare them narrower.
    scores_of_rows = (lambda: run.scores) if _rereads_scores(run.score_dtype, score_dtype) else None

    def rank(join_type: type) -> tuple[torch.Tensor, torch.Tensor]:
        joiner = join_type(qrels, run, topics, device)
        return _rank_rows(joiner, codes_of_rows, scores_of_rows, None if identity else topic_rows, None, width, max_depth, score_dtype)

    grades, num_ret = rank(_GradeJoin if join is None else join)
    topic_key = (str(device), topics.tobytes())
    ideal = qrels.derived(("ideal",) + topic_key, lambda: _ideal_grades(qrels, topics, device))
    ranked = RankedJudgments(_topic_names(qrels, topics, device), grades, num_ret, ideal, topic_rows >= 0, run_queries_not_in_qrels)
    # Kept so that a measure may form the same ranking with another join (RankedJudgments.annotated).
    ranked._memo[("reform",)] = lambda join_type: rank(join_type)[0]
    return ranked


@dataclass(frozen=True)
class RankingParts:
    """A ranking formed in parts of similar depth (see :func:`form_ranking_parts`).

    Attributes:
        query_ids: every topic (byte-wise sorted), T of them.
        in_run: (T,) bool, whether the run has a ranking for the topic.
        run_queries_not_in_qrels: run queries ignored for lack of judgments.
        parts: (positions, ranking) pairs: ``ranking`` holds the topics at
            ``positions`` ((n,) int64 on the device, ascending; ``None``: all
            topics, in order) of ``query_ids``. Each topic is in one part.
    """

    query_ids: list[str]
    in_run: torch.Tensor
    run_queries_not_in_qrels: int
    parts: tuple[tuple[torch.Tensor | None, RankedJudgments], ...]

    @property
    def num_topics(self) -> int:
        return len(self.query_ids)

    @property
    def device(self) -> torch.device:
        return self.in_run.device


def form_ranking_parts(
    qrels: Qrels,
    run: Run,
    *,
    complete: bool,
    max_depth: int | None = None,
    score_dtype: torch.dtype = torch.float64,
) -> RankingParts:
    """:func:`form_ranking` with memory bounded by the input.

    A padded (T, K) grade table and (T, L) ideal table hold T times the
    deepest ranking and the most judgments: far more than the input when one
    topic is much deeper than the rest. Topics are grouped here by the run
    block holding their ranking (:meth:`Run.row_blocks`) and, when the
    judgment counts are that lopsided, by the power of two bounding their
    count; each part is a :class:`RankedJudgments` of its topics, padded to
    its own widths. Measures are per-topic reductions, so computing them
    part by part and placing the values by topic gives the same per-topic
    values. A run in one block with even judgment counts is one part, the
    same as :func:`form_ranking`.
    """
    device = run.device
    found = _topics_of(qrels, run, complete, max_depth)
    topics, topic_rows_np, run_queries_not_in_qrels = found
    blocks = run.row_blocks()
    ideal_class = qrels.derived(("ideal_classes", topics.tobytes()), lambda: _ideal_classes(qrels, topics))
    if len(topics) == 0 or (run.blocks is None and not ideal_class.any()):
        ranked = _form_ranking(qrels, run, found, max_depth=max_depth, score_dtype=score_dtype)
        return RankingParts(ranked.query_ids, ranked.in_run, run_queries_not_in_qrels, ((None, ranked),))
    # Block of each run row and the row's place in it.
    block_of_row = np.zeros(run.num_queries, dtype=np.int64)
    place_in_block = np.arange(run.num_queries, dtype=np.int64)
    for i, block in enumerate(blocks):
        if block.rows is not None:
            rows = block.rows.cpu().numpy()
            block_of_row[rows] = i
            place_in_block[rows] = np.arange(len(rows), dtype=np.int64)
    present = topic_rows_np >= 0
    safe_rows = np.where(present, topic_rows_np, 0)
    # Topics missing from the run (empty rankings) go with the first block's.
    topic_block = np.where(present, block_of_row[safe_rows], 0)
    topic_place = np.where(present, place_in_block[safe_rows], -1)
    part_key = topic_block * 64 + ideal_class  # classes < 64
    names = _topic_names(qrels, topics, device)
    join = _GradeJoin(qrels, run, topics, device)  # one set of join tables for every part
    parts = []
    for key in np.unique(part_key):
        at = np.flatnonzero(part_key == key)
        block = blocks[int(key) // 64]
        width = block.doc_codes.shape[1] if max_depth is None else min(block.doc_codes.shape[1], max_depth)
        take = torch.from_numpy(topic_place[at]).to(device)
        positions = torch.from_numpy(at).to(device)

        def rank(join_type: type, block=block, take=take, positions=positions, width=width) -> tuple[torch.Tensor, torch.Tensor]:
            joiner = join if join_type is _GradeJoin else join_type(qrels, run, topics, device)
            scores = (lambda: block.scores) if _rereads_scores(block.score_dtype, score_dtype) else None
            return _rank_rows(joiner, block.doc_codes, scores, take, positions, width, max_depth, score_dtype)

        grades, num_ret = rank(_GradeJoin)
        part_topics = topics[at]
        ideal = qrels.derived(("ideal", str(device), part_topics.tobytes()), lambda t=part_topics: _ideal_grades(qrels, t, device))
        ranked = RankedJudgments([names[i] for i in at], grades, num_ret, ideal, take >= 0, run_queries_not_in_qrels)
        ranked._memo[("reform",)] = lambda join_type, rank=rank: rank(join_type)[0]
        parts.append((positions, ranked))
    in_run = torch.from_numpy(present).to(device)
    return RankingParts(names, in_run, run_queries_not_in_qrels, tuple(parts))


def _topics_of(qrels: Qrels, run: Run, complete: bool, max_depth: int | None) -> tuple[np.ndarray, np.ndarray, int]:
    """(topics, run row of each topic or -1, run queries not in qrels): the
    topics are qrels query codes, ascending (byte-wise sorted ids)."""
    # Map run rows onto qrels query codes (sorted-key lookup, no Python loop).
    row_to_qrels = lookup_codes(run.query_ids, qrels.query_ids)
    in_qrels = row_to_qrels >= 0
    row_of_query = np.full(qrels.num_queries, -1, dtype=np.int64)
    row_of_query[row_to_qrels[in_qrels]] = np.flatnonzero(in_qrels)
    if complete:
        topics = np.arange(qrels.num_queries, dtype=np.int64)
    else:
        topics = np.flatnonzero(row_of_query >= 0)
    if max_depth is not None and not 1 <= max_depth <= INT64_MAX:
        # Depths are compared with int64 tensors, so a larger one cannot even be represented.
        raise UsageError(f"max_depth must be between 1 and {INT64_MAX}, got {max_depth}")
    return topics, row_of_query[topics], int((~in_qrels).sum())


def _topic_names(qrels: Qrels, topics: np.ndarray, device: torch.device) -> list[str]:
    key = ("query_ids", str(device), topics.tobytes())
    return list(qrels.derived(key, lambda: tuple(qrels.query_ids.take(arrow_indices(topics)).to_pylist())))


def _rereads_scores(stored: torch.dtype, compared: torch.dtype) -> bool:
    """Whether rows stored in ranking order for ``stored`` scores may be out
    of order when compared in ``compared``: not when the cast is an exact
    widening (float32 -> float64 keeps every order and every tie)."""
    return torch.promote_types(stored, compared) != compared


def _rank_rows(
    join,
    codes_of_rows: torch.Tensor,
    scores_of_rows: Callable[[], torch.Tensor] | None,
    take: torch.Tensor | None,
    positions: torch.Tensor | None,
    width: int,
    max_depth: int | None,
    score_dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, width) int32 grades and (n,) num_ret of n topics whose rankings are
    rows ``take`` of ``codes_of_rows`` (-1: not in the run, an empty ranking;
    ``None``: every row, in order). ``positions`` are the topics' places in
    the join's topic set (``None``: all of them, in order)."""
    device = codes_of_rows.device
    n = codes_of_rows.shape[0] if take is None else take.numel()
    grades = torch.empty((n, width), dtype=torch.int32, device=device)
    # Run rows are stored in ranking order for their own score precision;
    # comparing in a narrower one (float32) can create ties, and only rows
    # that are then out of order are re-sorted. ``scores_of_rows`` is given
    # (a getter: reading may copy them to the device) only in that case.
    all_scores = None if scores_of_rows is None else scores_of_rows()
    # Slices of rows bound the temporaries (sort values and int64 indices);
    # the join's work tensors are allocated once and reused by every slice.
    scratch: dict[str, torch.Tensor] = {}
    # Every run row in order: its lengths are counted once, not slice by slice.
    num_ret = _row_lengths(codes_of_rows) if take is None else torch.empty(n, dtype=torch.int64, device=device)
    for rows in row_slices(n, codes_of_rows.shape[1]):
        scores = None
        if take is None:
            codes = codes_of_rows[rows]
            if all_scores is not None:
                scores = all_scores[rows].to(score_dtype)
        else:
            # Rows of the topics, in topic order; missing topics are empty rows.
            wanted = take[rows]
            safe = wanted.clamp(min=0)
            codes = codes_of_rows.index_select(0, safe).masked_fill(wanted[:, None] < 0, -1)
            num_ret[rows] = _row_lengths(codes, scratch)
            if all_scores is not None:
                scores = all_scores.index_select(0, safe).to(score_dtype)
        # Written straight into its rows of the output when no column is cut.
        out = grades[rows] if width == codes.shape[1] else None
        joined = join(codes, rows if positions is None else positions[rows], scratch, out)
        if scores is not None:
            bad = unranked_rows(codes, scores)
            if bad.numel():
                joined[bad] = joined[bad].gather(1, ranking_permutation(codes[bad], scores[bad]))  # in place: ``out`` too
        if out is None:
            grades[rows] = joined[:, :width]
        del codes, scores, joined, out
    if max_depth is not None:
        num_ret.clamp_(max=max_depth)
    return grades, num_ret
