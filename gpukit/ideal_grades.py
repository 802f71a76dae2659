"""Each topic's judged grades sorted descending: the ideal ranking that
normalised measures (nDCG's IDCG, R-precision's R) read from the qrels alone,
built once per qrels and topic set and reused by every run."""
from __future__ import annotations

import numpy as np
import torch

from gpukit.data.run_layout import host_full, length_classes, lopsided
from gpukit.errors import InputFormatError
from gpukit.judgments.qrels import Qrels

#: Grade of a retrieved document absent from the qrels (and of padding).
NOT_JUDGED = -(2**31)


def _topic_rows(query_codes: np.ndarray, topics: np.ndarray, n_queries: int) -> np.ndarray:
    """Topic (position in ``topics``) of each judgment row, -1 outside the topic set.

    ``topics`` are ascending query codes, so when they are every query the
    topic of a row is its query code: no lookup table, no gather."""
    if len(topics) == n_queries:
        return query_codes
    topic_of_query = np.full(n_queries, -1, dtype=np.int64)
    topic_of_query[topics] = np.arange(len(topics), dtype=np.int64)
    return topic_of_query[query_codes]


def _judged_counts(qrels: Qrels, topics: np.ndarray) -> np.ndarray:
    """(T,) judged (grade >= 0) documents of each topic (one count per query, then a gather)."""
    judged = qrels.grades >= 0
    codes = qrels.query_codes if bool(judged.all()) else qrels.query_codes[judged]
    return np.bincount(codes, minlength=qrels.num_queries)[topics]


def _ideal_classes(qrels: Qrels, topics: np.ndarray) -> np.ndarray:
    """(T,) part class of each topic for the ideal table: all 0 when padding
    every topic to the most judgments is cheap, else the power of two that
    bounds the topic's number of judged (grade >= 0) documents."""
    counts = _judged_counts(qrels, topics)
    if not lopsided(len(topics), int(counts.max(initial=0)), int(counts.sum())):
        return np.zeros(len(topics), dtype=np.int64)
    return length_classes(counts)


def _per_topic_table(
    q: np.ndarray, doc_codes: np.ndarray, grades: np.ndarray, topics: np.ndarray, pad: int, spare: int = 0
) -> tuple[np.ndarray, np.ndarray] | None:
    """(T, J) judged doc keys per topic, ascending and padded with ``pad``
    (greater than every key), and their int32 grades; None when one topic has
    so many judgments that the padded table would be much larger than the qrels.
    ``q`` is sorted and keys ascend within a query. ``spare``: padding columns
    added after the longest topic's keys."""
    n_queries = int(q.max()) + 1 if len(q) else 0
    t = _topic_rows(q, topics, max(n_queries, int(topics.max()) + 1 if len(topics) else 0))
    if len(t) and int(t.min()) < 0:  # judgments of queries outside the topic set (else no copies)
        sel = t >= 0
        t, doc_codes, grades = t[sel], doc_codes[sel], grades[sel]
    counts = np.bincount(t, minlength=len(topics))
    width = max(int(counts.max()) if len(t) else 0, 1)
    if len(topics) * width > 4 * len(t) + (1 << 20):
        return None
    width += spare
    filled = _filled_cells(counts, width)
    table = host_full((len(topics), width), pad, np.int64)
    table[filled] = doc_codes
    grade_table = host_full((len(topics), width), NOT_JUDGED, np.int32)
    grade_table[filled] = grades
    return table, grade_table


def _filled_cells(counts: np.ndarray, width: int) -> np.ndarray:
    """(topics, ``width``) bool: the first ``counts[i]`` cells of row i.

    Entries sorted by topic (and in order within it) fill these cells in
    row-major order, so ``table[_filled_cells(...)] = values`` places each
    in its topic's row, in order: one pass over the table, several times
    cheaper than computing and scattering a flat index per entry."""
    return np.arange(width)[None, :] < counts[:, None]


def _ideal_grades(qrels: Qrels, topics: np.ndarray, device: torch.device) -> torch.Tensor:
    """(T, L) judged grades per topic, sorted descending, padded with -1.

    The rows are sorted by query code, hence by topic, so each topic's
    grades fill its row in file order; then each short row is sorted (a sort
    of T rows of L grades, not of every judgment's packed key)."""
    t = _topic_rows(qrels.query_codes, topics, qrels.num_queries)
    g = qrels.grades
    lowest, highest = (int(g.min()), int(g.max())) if len(g) else (0, 0)
    if max(highest, -lowest) >= 2**31 - 1:
        raise InputFormatError(qrels.source, None, "grades must fit in 32 bits")
    if len(t) and (int(t.min()) < 0 or lowest < 0):  # something to leave out (else no copies)
        keep = (t >= 0) & (g >= 0)
        t, g = t[keep], g[keep]
    counts = np.bincount(t, minlength=len(topics))
    width = max(int(counts.max()) if len(t) else 0, 1)
    ideal = host_full((len(topics), width), -1, np.int32)
    ideal[_filled_cells(counts, width)] = g
    ideal.sort(axis=1)  # ascending: padding (-1) first
    return torch.from_numpy(ideal).to(device).flip(1)
