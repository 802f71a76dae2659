"""Retrieval runs as padded (Q, K) tensors.

A ``Run`` stores, for each query row, the retrieved documents as integer codes
into a byte-wise sorted vocabulary, and their scores. Rows are kept sorted by
document code descending with padding (code -1) at the end, which makes the
"form ranking" stage a single stable sort by score: ties then fall to the
larger doc id first, exactly trec_eval's tie-break (score desc, docno desc).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from gpukit.data.text_table import Column, dictionary_codes, read_table
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import DeviceError, InputFormatError

Dedup = Literal["error", "max", "first"]

_TREC_RUN_COLUMNS = (
    Column("query_id", "id"),
    Column("q0", "skip"),
    Column("doc_id", "id"),
    Column("rank", "skip"),
    Column("score", "float"),
    Column("run_tag", "skip"),
)


@dataclass(frozen=True, eq=False)
class Run:
    """A ranked retrieval run.

    Attributes:
        query_ids: query id of each row (``pa.StringArray``, unique).
        doc_ids: document vocabulary, byte-wise sorted, unique.
        doc_codes: (Q, K) int64 tensor of codes into ``doc_ids``; each row
            sorted descending, -1 marks padding (always at the row's end).
        scores: (Q, K) float tensor aligned with ``doc_codes``.
        name: run name used in reports (file name for files).
    """

    query_ids: pa.Array
    doc_ids: pa.Array
    doc_codes: torch.Tensor
    scores: torch.Tensor
    name: str = "run"

    # ------------------------------------------------------------------ build
    @classmethod
    def from_trec(cls, path: str | os.PathLike, name: str | None = None, dedup: Dedup = "error") -> "Run":
        """Read a TREC run ``qid Q0 docno rank score tag`` (plain or gzip).

        The rank column is ignored (trec_eval re-ranks by score), and so is
        anything after the run tag on a line, as trec_eval does. NaN scores are
        an error. A document retrieved twice for one query is an error naming
        both lines, unless ``dedup`` is ``"max"`` (keep the higher score) or
        ``"first"`` (keep the first line).
        """
        table = read_table(path, _TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True)
        q_codes, q_vocab = dictionary_codes(table.columns["query_id"])
        d_codes, d_vocab = dictionary_codes(table.columns["doc_id"])
        scores = table.columns["score"].to_numpy()
        source = table.source
        nan = np.flatnonzero(np.isnan(scores))
        if len(nan):
            raise InputFormatError(source, table.line_of(int(nan[0])), "score is NaN")
        run_name = name if name is not None else os.path.basename(source)
        return cls._from_flat(q_codes, q_vocab, d_codes, d_vocab, scores, run_name, dedup, source, table.line_of)

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], name: str = "run", dedup: Dedup = "error") -> "Run":
        """Build from ``{query_id: {doc_id: score}}`` (pytrec_eval / ranx shape)."""
        queries, docs, scores = [], [], []
        for qid, docs_of_q in run.items():
            for did, score in docs_of_q.items():
                queries.append(str(qid))
                docs.append(str(did))
                scores.append(float(score))
        return cls.from_arrays(queries, docs, scores, name=name, dedup=dedup)

    @classmethod
    def from_arrays(cls, query_ids, doc_ids, scores, name: str = "run", dedup: Dedup = "error") -> "Run":
        """Build from three parallel sequences (lists, NumPy or Arrow arrays)."""
        q = pa.chunked_array([pa.array(query_ids, pa.string()).dictionary_encode()])
        d = pa.chunked_array([pa.array(doc_ids, pa.string()).dictionary_encode()])
        s = np.asarray(scores, dtype=np.float64)
        if not (len(q) == len(d) == len(s)):
            raise InputFormatError(name, None, "query_ids, doc_ids and scores differ in length")
        if len(s) == 0:
            raise InputFormatError(name, None, "empty run: no retrieved documents")
        nan = np.flatnonzero(np.isnan(s))
        if len(nan):
            raise InputFormatError(name, None, f"row {int(nan[0])}: score is NaN")
        q_codes, q_vocab = dictionary_codes(q)
        d_codes, d_vocab = dictionary_codes(d)
        return cls._from_flat(q_codes, q_vocab, d_codes, d_vocab, s, name, dedup, name, None)

    @classmethod
    def from_topk(
        cls,
        scores: torch.Tensor,
        doc_indices: torch.Tensor,
        query_ids: Sequence[str],
        doc_ids: Sequence[str] | pa.Array,
        name: str = "run",
    ) -> "Run":
        """Wrap search output without leaving the device.

        ``scores`` and ``doc_indices`` are (Q, K) tensors on one device as
        returned by a search; ``doc_indices`` index ``doc_ids`` (the corpus in
        index order) and may hold -1 for "no result" (FAISS). Corpus positions
        are mapped to sorted-vocabulary codes by one on-device gather, and each
        row is re-sorted by code; no per-query Python structure is built.
        """
        scores = torch.as_tensor(scores)
        doc_indices = torch.as_tensor(doc_indices)
        if scores.shape != doc_indices.shape or scores.dim() != 2:
            raise InputFormatError(name, None, f"scores {tuple(scores.shape)} and doc_indices {tuple(doc_indices.shape)} must be the same (Q, K) shape")
        if scores.device != doc_indices.device:
            raise DeviceError(f"scores on {scores.device} but doc_indices on {doc_indices.device}; move one explicitly")
        if len(query_ids) != scores.shape[0]:
            raise InputFormatError(name, None, f"{len(query_ids)} query ids for {scores.shape[0]} rows")
        if not scores.is_floating_point():
            raise InputFormatError(name, None, f"scores must be floating point, got {scores.dtype}")
        corpus = doc_ids if isinstance(doc_ids, pa.Array) else pa.array(list(doc_ids), pa.string())
        order = pc.sort_indices(corpus).to_numpy()
        vocab = corpus.take(pa.array(order))
        if len(vocab) > 1 and pc.any(pc.equal(vocab[1:], vocab[:-1])).as_py():
            raise InputFormatError(name, None, "doc_ids contains duplicates")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        device = scores.device
        rank_t = torch.from_numpy(rank).to(device)
        idx = doc_indices.to(torch.int64)
        if idx.numel() and int(idx.max()) >= len(order):
            raise InputFormatError(name, None, f"doc index {int(idx.max())} out of range for {len(order)} doc ids")
        valid = idx >= 0
        codes = torch.where(valid, rank_t[idx.clamp(min=0)], torch.full_like(idx, -1))
        if torch.isnan(scores).any():
            raise InputFormatError(name, None, "scores contain NaN")
        qids = pa.array([str(q) for q in query_ids], pa.string())
        if len(qids) > 1 and pc.count_distinct(qids).as_py() != len(qids):
            raise InputFormatError(name, None, "query_ids contains duplicates")
        codes, sorted_scores, _ = _sort_rows(codes, scores)
        _check_no_duplicates(codes, qids, vocab, name, None, None)
        return cls(qids, vocab, codes, sorted_scores, name)

    @classmethod
    def _from_flat(cls, q_codes, q_vocab, d_codes, d_vocab, scores, name, dedup, source, line_of) -> "Run":
        n_queries = len(q_vocab)
        rows = _padded_positions(q_codes, n_queries)
        order, q_sorted, pos, width = rows
        codes = torch.full((n_queries, width), -1, dtype=torch.int64)
        score_t = torch.zeros((n_queries, width), dtype=torch.float64)
        row_of = torch.full((n_queries, width), -1, dtype=torch.int64)
        qi = torch.from_numpy(q_sorted)
        pi = torch.from_numpy(pos)
        codes[qi, pi] = torch.from_numpy(np.ascontiguousarray(d_codes[order], dtype=np.int64))
        score_t[qi, pi] = torch.from_numpy(np.ascontiguousarray(scores[order], dtype=np.float64))
        row_of[qi, pi] = torch.from_numpy(np.ascontiguousarray(order, dtype=np.int64))
        del qi, pi, rows, order, q_sorted, pos
        if dedup == "max":
            # Highest score first within equal codes, so the kept copy is the max.
            by_score = torch.sort(score_t.masked_fill(codes < 0, -torch.inf), dim=1, descending=True, stable=True).indices
            codes, score_t, row_of = codes.gather(1, by_score), score_t.gather(1, by_score), row_of.gather(1, by_score)
        elif dedup == "first":
            by_row = torch.sort(row_of.masked_fill(codes < 0, torch.iinfo(torch.int64).max), dim=1, stable=True).indices
            codes, score_t, row_of = codes.gather(1, by_row), score_t.gather(1, by_row), row_of.gather(1, by_row)
        elif dedup != "error":
            raise ValueError(f"dedup must be 'error', 'max' or 'first', got {dedup!r}")
        codes, score_t, perm = _sort_rows(codes, score_t)
        row_of = row_of.gather(1, perm)
        if dedup == "error":
            _check_no_duplicates(codes, q_vocab, d_vocab, source, line_of, row_of)
        else:
            repeated = torch.zeros_like(codes, dtype=torch.bool)
            repeated[:, 1:] = (codes[:, 1:] == codes[:, :-1]) & (codes[:, 1:] >= 0)
            if bool(repeated.any()):
                codes = codes.masked_fill(repeated, -1)
                codes, score_t, _ = _sort_rows(codes, score_t)
                width = int((codes >= 0).sum(1).max())
                codes, score_t = codes[:, :width].contiguous(), score_t[:, :width].contiguous()
        return cls(q_vocab, d_vocab, codes, score_t, name)

    # ----------------------------------------------------------------- access
    @property
    def num_queries(self) -> int:
        return int(self.doc_codes.shape[0])

    @property
    def depth(self) -> int:
        """K: the padded width (the longest ranking)."""
        return int(self.doc_codes.shape[1])

    @property
    def device(self) -> torch.device:
        return self.doc_codes.device

    def lengths(self) -> torch.Tensor:
        """Number of retrieved documents per row."""
        return (self.doc_codes >= 0).sum(1)

    def to(self, device: DeviceLike) -> "Run":
        """A copy on ``device`` (explicit; evaluation never moves a run silently)."""
        dev = resolve_device(device)
        return Run(self.query_ids, self.doc_ids, self.doc_codes.to(dev), self.scores.to(dev), self.name)

    def query_id_list(self) -> list[str]:
        return self.query_ids.to_pylist()

    def to_dict(self) -> dict[str, dict[str, float]]:
        """The pytrec_eval / ranx shape ``{query_id: {doc_id: score}}``."""
        qids = self.query_ids.to_pylist()
        dids = self.doc_ids.to_pylist()
        codes = self.doc_codes.cpu().tolist()
        scores = self.scores.cpu().tolist()
        return {
            q: {dids[c]: s for c, s in zip(row_c, row_s) if c >= 0}
            for q, row_c, row_s in zip(qids, codes, scores)
        }

    def __repr__(self) -> str:
        return f"Run({self.name!r}, queries={self.num_queries}, depth={self.depth}, device={self.device})"


def _padded_positions(q_codes: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Where each flat row lands in a (Q, K) layout, keeping file order per query."""
    n = len(q_codes)
    q = q_codes.astype(np.int64, copy=False)
    changes = np.flatnonzero(q[1:] != q[:-1]) + 1 if n else np.zeros(0, np.int64)
    if len(changes) == n_queries - 1:
        # Grouped file (each query's lines contiguous, the usual case): no sort.
        order = np.arange(n, dtype=np.int64)
        q_sorted = q
    else:
        order = np.argsort(q, kind="stable")
        q_sorted = q[order]
        changes = np.flatnonzero(q_sorted[1:] != q_sorted[:-1]) + 1
    starts = np.concatenate([[0], changes]).astype(np.int64)
    lengths = np.diff(np.concatenate([starts, [n]]))
    pos = np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)
    width = int(lengths.max()) if n else 0
    return order, q_sorted, pos, width


def _sort_rows(codes: torch.Tensor, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sort each row by doc code descending (stable; padding -1 goes last)."""
    sorted_codes, perm = torch.sort(codes, dim=1, descending=True, stable=True)
    return sorted_codes, scores.gather(1, perm), perm


def _check_no_duplicates(
    codes: torch.Tensor,
    query_ids: pa.Array,
    doc_ids: pa.Array,
    source: str,
    line_of: Callable[[int], int | None] | None,
    row_of: torch.Tensor | None,
) -> None:
    if codes.shape[1] < 2:
        return
    repeated = (codes[:, 1:] == codes[:, :-1]) & (codes[:, 1:] >= 0)
    if not bool(repeated.any()):
        return
    q, k = (int(x) for x in torch.nonzero(repeated)[0])
    qid = query_ids[q].as_py()
    did = doc_ids[int(codes[q, k + 1])].as_py()
    if line_of is not None and row_of is not None:
        lines = sorted(line_of(int(row_of[q, j])) or 0 for j in (k, k + 1))
        raise InputFormatError(
            source, lines[1], f"document {did!r} retrieved twice for query {qid!r} (lines {lines[0]} and {lines[1]}); pass dedup='max' or 'first' to keep one"
        )
    raise InputFormatError(source, None, f"document {did!r} retrieved twice for query {qid!r}")
