"""Runs brought onto one query list and one document key space, for fusion.

Fusion compares documents across runs by key, so every run's keys must be
in one :mod:`~gpukit.io.doc_space` space: when the runs already share one
(packed ids, the usual case for short ids, or one vocabulary) their tensors
are used as they are; otherwise their keys are translated into a vocabulary
of the union of their ids (one int64 copy of each run's keys).

Queries: the fused run answers the union of the runs' queries. A query that
a run does not answer is an empty ranking in that run (as a TREC file with
no line for it), so it contributes nothing there; runs that share no query
at all are an error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from gpukit.data.run import Run
from gpukit.errors import UsageError, UsageTypeError
from gpukit.io.doc_space import DocSpace, Vocabulary, translate_keys
from gpukit.io.string_coding import string_codes


@dataclass(frozen=True, eq=False)
class AlignedRuns:
    """Runs on one query list and one key space.

    Attributes:
        query_ids: the union of the runs' query ids, byte-wise sorted.
        doc_space: the key space of every entry of ``codes``.
        codes: per run, its (Q_i, K_i) int64 keys in ``doc_space`` (rows in
            ranking order, -1 padding at the end), on ``device``.
        scores: per run, its (Q_i, K_i) float64 scores aligned with ``codes``.
        rows: per run, a (Q,) int64 tensor giving, for each union query, the
            run's row (-1: the run does not answer it); ``None`` when the run's
            rows are the union's, in order.
    """

    query_ids: pa.Array
    doc_space: DocSpace
    codes: list[torch.Tensor]
    scores: list[torch.Tensor]
    rows: list[torch.Tensor | None]

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    @property
    def num_runs(self) -> int:
        return len(self.codes)

    def slice_of(self, i: int, lo: int, hi: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Run ``i``'s (hi - lo, K_i) keys and scores for union rows ``lo:hi``
        (a row the run does not answer is all padding)."""
        rows = self.rows[i]
        if rows is None:
            return self.codes[i][lo:hi], self.scores[i][lo:hi]
        at = rows[lo:hi]
        missing = (at < 0)[:, None]
        codes = self.codes[i].index_select(0, at.clamp(min=0)).masked_fill_(missing, -1)
        scores = self.scores[i].index_select(0, at.clamp(min=0)).masked_fill_(missing, 0.0)
        return codes, scores


def _same_space(a: DocSpace, b: DocSpace) -> bool:
    if isinstance(a, Vocabulary) and isinstance(b, Vocabulary):
        return a.ids is b.ids or a.ids.equals(b.ids)
    return type(a) is type(b) and a == b


def check_runs(runs: Sequence[Run]) -> list[Run]:
    """``runs`` as a list of at least two :class:`Run` (one-line errors otherwise)."""
    if isinstance(runs, Run):
        raise UsageTypeError("fuse takes a list of runs, got a single Run")
    runs = list(runs)
    for i, run in enumerate(runs):
        if not isinstance(run, Run):
            raise UsageTypeError(f"run {i} is a {type(run).__name__}, not a gpukit Run (build it with Run.from_dict or Run.from_trec)")
    if len(runs) < 2:
        raise UsageError(f"fusion needs at least two runs, got {len(runs)}")
    return runs


def align_runs(runs: Sequence[Run], device: torch.device) -> AlignedRuns:
    """The runs' union query list, common key space and per-run tensors on ``device``."""
    runs = check_runs(runs)
    union = _union_queries(runs)
    rows: list[torch.Tensor | None] = []
    for run in runs:
        if run.query_ids.equals(union):
            rows.append(None)
            continue
        place = np.full(len(union), -1, dtype=np.int64)
        at = pc.index_in(run.query_ids, value_set=union).to_numpy(zero_copy_only=False).astype(np.int64)
        place[at] = np.arange(len(at), dtype=np.int64)
        rows.append(torch.from_numpy(place).to(device))
    space, codes = _common_keys(runs, device)
    scores = [run.scores.to(device=device, dtype=torch.float64) for run in runs]
    return AlignedRuns(union, space, codes, scores, rows)


def _union_queries(runs: list[Run]) -> pa.Array:
    """The union of the runs' query ids, byte-wise sorted; an error when no
    query is shared by two runs (nothing would be fused)."""
    first = runs[0].query_ids
    if all(r.query_ids.equals(first) for r in runs[1:]):
        if _is_sorted(first):
            return first
    all_ids = pa.concat_arrays([r.query_ids.cast(pa.string()) for r in runs])
    _, union = string_codes(all_ids)
    counts = np.zeros(len(union), dtype=np.int64)
    for run in runs:
        counts[pc.index_in(run.query_ids, value_set=union).to_numpy(zero_copy_only=False)] += 1
    if not (counts > 1).any():
        names = ", ".join(repr(r.name) for r in runs)
        raise UsageError(f"runs {names} share no query id: nothing to fuse")
    return union


def _is_sorted(ids: pa.Array) -> bool:
    if len(ids) < 2:
        return True
    _, vocab = string_codes(ids)
    return vocab.equals(ids)


def _common_keys(runs: list[Run], device: torch.device) -> tuple[DocSpace, list[torch.Tensor]]:
    """One key space for every run, and each run's (Q_i, K_i) keys in it.

    When the runs share a space their keys are used as they are (moved to
    ``device``); else every key is translated into the sorted vocabulary of
    the union of their ids (the padding, -1, stays -1)."""
    space = runs[0].doc_space
    if all(_same_space(space, r.doc_space) for r in runs[1:]):
        return space, [r.doc_codes.to(device) for r in runs]
    _, vocab = string_codes(pa.concat_arrays([r.doc_ids.cast(pa.string()) for r in runs]))
    target = Vocabulary(vocab)
    out = []
    for run in runs:
        codes = run.doc_codes.cpu().numpy()
        keys = np.full(codes.shape, -1, dtype=np.int64)
        valid = codes >= 0
        keys[valid] = translate_keys(codes[valid], run.doc_space, target)
        out.append(torch.from_numpy(keys).to(device))
    return target, out
