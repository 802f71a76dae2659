"""Each topic's judged grades sorted descending: the ideal ranking that
normalised measures (nDCG's IDCG, R-precision's R) read from the qrels alone,
built once per qrels and topic set and reused by every run."""
from __future__ import annotations

import numpy as np
import torch

from gpukit.data.run_layout import length_classes, lopsided
from gpukit.errors import InputFormatError
from gpukit.judgments.qrels import Qrels

#: Grade of a retrieved document absent from the qrels (and of padding).
NOT_JUDGED = -(2**31)


def _ideal_classes(qrels: Qrels, topics: np.ndarray) -> np.ndarray:
    """(T,) part class of each topic for the ideal table: all 0 when padding
    every topic to the most judgments is cheap, else the power of two that
    bounds the topic's number of judged (grade >= 0) documents."""
    topic_of_query = np.full(qrels.num_queries, -1, dtype=np.int64)
    topic_of_query[topics] = np.arange(len(topics), dtype=np.int64)
    t = topic_of_query[qrels.query_codes]
    counts = np.bincount(t[(t >= 0) & (qrels.grades >= 0)], minlength=len(topics))
    if not lopsided(len(topics), int(counts.max(initial=0)), int(counts.sum())):
        return np.zeros(len(topics), dtype=np.int64)
    return length_classes(counts)


def _per_topic_table(
    q: np.ndarray, doc_codes: np.ndarray, grades: np.ndarray, topics: np.ndarray, pad: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(T, J) judged doc keys per topic, ascending and padded with ``pad``
    (greater than every key), and their int32 grades; None when one topic has
    so many judgments that the padded table would be much larger than the qrels.
    ``q`` is sorted and keys ascend within a query."""
    n_queries = int(q.max()) + 1 if len(q) else 0
    topic_of = np.full(max(n_queries, int(topics.max()) + 1 if len(topics) else 0), -1, dtype=np.int64)
    topic_of[topics] = np.arange(len(topics), dtype=np.int64)
    t = topic_of[q]
    if len(t) and int(t.min()) < 0:  # judgments of queries outside the topic set (else no copies)
        sel = t >= 0
        t, doc_codes, grades = t[sel], doc_codes[sel], grades[sel]
    counts = np.bincount(t, minlength=len(topics))
    width = max(int(counts.max()) if len(t) else 0, 1)
    if len(topics) * width > 4 * len(t) + (1 << 20):
        return None
    filled = _filled_cells(counts, width)
    table = np.full((len(topics), width), pad, dtype=np.int64)
    table[filled] = doc_codes
    grade_table = np.full((len(topics), width), NOT_JUDGED, dtype=np.int32)
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
    """(T, L) judged grades per topic, sorted descending, padded with -1."""
    topic_of_query = np.full(qrels.num_queries, -1, dtype=np.int64)
    topic_of_query[topics] = np.arange(len(topics), dtype=np.int64)
    t = topic_of_query[qrels.query_codes]
    g = qrels.grades
    lowest, highest = (int(g.min()), int(g.max())) if len(g) else (0, 0)
    if max(highest, -lowest) >= 2**31 - 1:
        raise InputFormatError(qrels.source, None, "grades must fit in 32 bits")
    if len(t) and (int(t.min()) < 0 or lowest < 0):  # something to leave out (else no copies)
        keep = (t >= 0) & (g >= 0)
        t, g = t[keep], g[keep]
    t, g = _by_topic_then_grade_desc(t, g)
    counts = np.bincount(t, minlength=len(topics))
    width = max(int(counts.max()) if len(t) else 0, 1)
    ideal = np.full((len(topics), width), -1, dtype=np.int32)
    ideal[_filled_cells(counts, width)] = g
    return torch.from_numpy(ideal).to(device)


def _by_topic_then_grade_desc(t: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(topic, grade) pairs ordered by topic ascending, grade descending
    (0 <= g < 2**31), by one direct sort of packed keys."""
    key = (t << 32) | ((2**31 - 1) - g)
    key.sort()
    return key >> 32, (2**31 - 1) - (key & 0xFFFFFFFF)
