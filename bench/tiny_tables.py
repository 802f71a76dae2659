"""Two lower bounds for a tiny evaluation's "form ranking" stage, outside gpukit.

Each builds, straight from the texts of a clean TREC qrels file and run
file, what gpukit's ranking stage hands the kernels (trec_eval convention):
the (T, K) int32 grade table (topics of the qrels, byte-wise sorted; each
row the run's documents by score descending, ties by docno descending;
``NOT_JUDGED`` for unjudged documents and padding) and the (T, L) int32
ideal table (each topic's judged grades, descending, padded with -1).

* :func:`numpy_tables` -- the fewest NumPy calls found: field edges of each
  text, one byte matrix of every id of both files, integer keys from the
  positions where ids differ, dense codes by one sort each, the join by one
  binary search, the ranking by one ``lexsort``.
* :func:`python_tables` -- a Python loop per line where NumPy has none to
  offer (``bytes.split``, ``float``, ``int``, dicts), as pytrec_eval's
  ``parse_qrel`` and ``parse_run`` read files.

Neither checks anything gpukit checks (line shapes, grade spellings and
range, NaN scores, duplicate pairs, ids past eight varying bytes): they are
bounds on the work, not readers. bench/bench_tiny_floor.py times them on
the CACM fixture and checks that their tables equal gpukit's.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NOT_JUDGED = -(2**31)
_SPACE = 0x20


def _fields(text: bytes, n_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, (lines, n_cols) field starts, field ends) of a table whose
    every line has exactly ``n_cols`` fields."""
    data = np.frombuffer(text, dtype=np.uint8)
    in_field = data > _SPACE
    change = np.empty(len(data), dtype=bool)
    change[0] = in_field[0]
    np.not_equal(in_field[1:], in_field[:-1], out=change[1:])
    edges = np.flatnonzero(change)
    if len(edges) % 2:  # the text ends inside a field
        edges = np.append(edges, len(data))
    return data, edges[0::2].reshape(-1, n_cols), edges[1::2].reshape(-1, n_cols)


def _id_keys(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """int64 keys of the ids ``data[starts[i]:ends[i]]`` whose order is their
    byte order: the bytes at the positions where some id differs from the
    first, zero padded, read big-endian (at most eight such positions)."""
    width = int((ends - starts).max())
    index = starts[:, None] + np.arange(width)
    matrix = data[np.minimum(index, len(data) - 1)]
    matrix[index >= ends[:, None]] = 0
    varying = matrix[:, (matrix != matrix[0]).any(axis=0)]
    if varying.shape[1] > 8:
        raise ValueError("ids differ at more than 8 byte positions: beyond this bound's keys")
    padded = np.zeros((len(varying), 8), dtype=np.uint8)
    padded[:, 8 - varying.shape[1]:] = varying
    return padded.view(">u8").ravel().astype(np.int64)


def _dense_codes(keys: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct keys, each key's rank among them)."""
    order = np.argsort(keys, kind="stable")
    in_order = keys[order]
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    np.not_equal(in_order[1:], in_order[:-1], out=new[1:])
    codes = np.empty(len(keys), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return int(codes.max(initial=-1)) + 1, codes


def _numbers(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, kind: pa.DataType) -> np.ndarray:
    """The fields as numbers, by Arrow's cast from strings (the parser of its CSV reader)."""
    lengths = ends - starts
    offsets = np.zeros(len(starts) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    index = np.repeat(starts - offsets[:-1], lengths)
    index += np.arange(int(offsets[-1]))
    strings = pa.Array.from_buffers(pa.string(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(data[index])])
    return pc.cast(strings, kind).to_numpy()


def _padded(rows: np.ndarray, values: np.ndarray, n_rows: int, fill: int) -> np.ndarray:
    """(n_rows, widest) int32 table of ``values`` laid out row by row
    (``rows`` ascending, one per value), padded with ``fill``."""
    counts = np.bincount(rows, minlength=n_rows)
    width = int(counts.max(initial=0))
    table = np.full((n_rows, width), fill, dtype=np.int32)
    table[np.arange(width) < counts[:, None]] = values
    return table


def numpy_tables(qrels_text: bytes, run_text: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(grades, ideal) of the module docstring, by NumPy over both texts."""
    q_data, q_starts, q_ends = _fields(qrels_text, 4)
    r_data, r_starts, r_ends = _fields(run_text, 6)
    n_judged = len(q_starts)
    # One byte array for both texts: each id column is keyed once over both files.
    data = np.concatenate([q_data, r_data])
    shift = len(q_data)

    def both(col_q: int, col_r: int) -> np.ndarray:
        starts = np.concatenate([q_starts[:, col_q], r_starts[:, col_r] + shift])
        ends = np.concatenate([q_ends[:, col_q], r_ends[:, col_r] + shift])
        return _id_keys(data, starts, ends)

    _, topic_codes = _dense_codes(both(0, 0))
    n_docs, doc_codes = _dense_codes(both(2, 2))
    grades = _numbers(q_data, q_starts[:, 3], q_ends[:, 3], pa.int64()).astype(np.int32)
    scores = _numbers(r_data, r_starts[:, 4], r_ends[:, 4], pa.float64())
    # Rows are the qrels' topics: renumber them 0..T-1; a run topic without judgments gets -1.
    judged_topic = np.zeros(int(topic_codes.max()) + 1, dtype=bool)
    judged_topic[topic_codes[:n_judged]] = True
    row_of = np.cumsum(judged_topic) - 1
    row_of[~judged_topic] = -1
    q_rows, r_rows = row_of[topic_codes[:n_judged]], row_of[topic_codes[n_judged:]]
    q_docs, r_docs = doc_codes[:n_judged], doc_codes[n_judged:]
    n_topics = int(judged_topic.sum())
    # The join: one binary search of the run's (topic, doc) pairs among the qrels'.
    pair = q_rows * n_docs + q_docs
    by_pair = np.argsort(pair)
    pairs = pair[by_pair]
    wanted = r_rows * n_docs + r_docs
    at = np.minimum(np.searchsorted(pairs, wanted), len(pairs) - 1)
    found = (pairs[at] == wanted) & (r_rows >= 0)
    joined = np.where(found, grades[by_pair][at], NOT_JUDGED).astype(np.int32)
    # Topic ascending, score descending, docno descending: one lexsort, reversed.
    order = np.lexsort((r_docs, scores, -r_rows))[::-1]
    order = order[r_rows[order] >= 0]
    table = _padded(r_rows[order], joined[order], n_topics, NOT_JUDGED)
    by_grade = np.lexsort((-grades, q_rows))
    by_grade = by_grade[grades[by_grade] >= 0]  # judged grades only
    ideal = _padded(q_rows[by_grade], grades[by_grade], n_topics, -1)
    return table, ideal


def python_tables(qrels_text: bytes, run_text: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(grades, ideal) of the module docstring, by Python per line."""
    judged = qrels_text.split()
    q_topics, q_docs, grades = judged[0::4], judged[2::4], list(map(int, judged[3::4]))
    retrieved = run_text.split()
    r_topics, r_docs, scores = retrieved[0::6], retrieved[2::6], list(map(float, retrieved[4::6]))
    topics = sorted(set(q_topics))  # bytes sort byte-wise
    row_of = {t: i for i, t in enumerate(topics)}
    grade_of = dict(zip(zip(q_topics, q_docs), grades))
    docs = {d: i for i, d in enumerate(sorted(set(r_docs)))}
    rankings: list[list[tuple[float, int, int]]] = [[] for _ in topics]
    for topic, doc, score in zip(r_topics, r_docs, scores):
        row = row_of.get(topic)
        if row is not None:
            rankings[row].append((score, docs[doc], grade_of.get((topic, doc), NOT_JUDGED)))
    ideals: list[list[int]] = [[] for _ in topics]
    for topic, grade in zip(q_topics, grades):
        if grade >= 0:  # judged grades only
            ideals[row_of[topic]].append(grade)
    width = max(map(len, rankings), default=0)
    table = np.full((len(topics), width), NOT_JUDGED, dtype=np.int32)
    for row, ranking in enumerate(rankings):
        ranking.sort(reverse=True)  # score, then docno, descending
        table[row, : len(ranking)] = [g for _, _, g in ranking]
    depth = max(map(len, ideals), default=0)
    ideal = np.full((len(topics), depth), -1, dtype=np.int32)
    for row, row_grades in enumerate(ideals):
        ideal[row, : len(row_grades)] = sorted(row_grades, reverse=True)
    return table, ideal
