"""Search output, (Q, K) scores and corpus indices, as a run's rows without
leaving the device (:meth:`gpukit.Run.from_topk`)."""
from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import torch

from gpukit.data.row_ranking import (
    _check_no_duplicates,
    _rank_rows_flagging_repeats,
    _syncs_are_cheap,
    rank_rows_inplace,
)
from gpukit.errors import DeviceError, InputFormatError
from gpukit.io.arrow_numpy import arrow_indices, pc
from gpukit.io.corpus_keys import CorpusKeys, corpus_keys


def topk_rows(scores: torch.Tensor, doc_indices: torch.Tensor, query_ids: Sequence[str],
              doc_ids: Sequence[str] | pa.Array | CorpusKeys, name: str) -> tuple:
    """(query ids, doc space, (Q', K) doc keys, (Q', K) scores) of the rows
    that hold a result, each in ranking order (see :meth:`gpukit.Run.from_topk`)."""
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
    corpus = corpus_keys(doc_ids, name)
    qids = pa.array([str(q) for q in query_ids], pa.string())
    if len(qids) > 1 and pc.count_distinct(qids).as_py() != len(qids):
        raise InputFormatError(name, None, "query_ids contains duplicates")
    idx = doc_indices.to(torch.int64)
    # Indices out of range gather the padding key; the checks below reject them.
    codes = corpus.table(scores.device)[idx.clamp(-1, len(corpus))]
    ranked_scores = scores.clone()  # the caller's tensor is left as it is
    if _syncs_are_cheap(scores.device):
        return _checked(idx, codes, ranked_scores, qids, corpus, name)
    # Off the CPU: rank every row (fixed shapes) and read all checks at once.
    repeated = _rank_rows_flagging_repeats(codes, ranked_scores)
    some = torch.ones((), dtype=torch.int64, device=idx.device)
    stats = torch.stack([
        idx.max() if idx.numel() else -some,
        idx.min() if idx.numel() else -some,
        (idx < 0).all(1).any().long() if idx.numel() else some * int(idx.shape[0] > 0),
        torch.isnan(scores).any().long(),
        repeated.long(),
    ]).tolist()
    highest, lowest, unanswered, nan, duplicate = stats
    if highest >= len(corpus) or lowest < -1 or nan or duplicate:
        # Some check fails: the CPU path names the problem.
        return _checked(idx.cpu(), codes.cpu(), ranked_scores.cpu(), qids, corpus, name)
    if unanswered:
        return _checked(idx, codes, ranked_scores, qids, corpus, name)
    return qids, corpus.space, codes, ranked_scores



def _checked(idx, codes, ranked_scores, qids, corpus, name) -> tuple:
    """``from_topk``'s checks one by one (errors name the problem), then the
    ranking of rows not in order. ``codes`` are ``idx`` mapped to keys."""
    if idx.numel() and int(idx.max()) >= len(corpus):
        raise InputFormatError(name, None, f"doc index {int(idx.max())} out of range for {len(corpus)} doc ids")
    if idx.numel() and int(idx.min()) < -1:
        row = int(torch.nonzero((idx < -1).any(1))[0])
        raise InputFormatError(name, None, f"row {row}: doc index {int(idx[row].min())}; only -1 may mark a missing result")
    answered = (idx >= 0).any(1)
    if not bool(answered.all()):
        if not bool(answered.any()):
            raise InputFormatError(name, None, "no result in any row (every doc index is -1)")
        kept = torch.nonzero(answered).flatten()
        codes, ranked_scores = codes[kept], ranked_scores[kept]
        qids = qids.take(arrow_indices(kept.cpu().numpy()))
    if torch.isnan(ranked_scores).any():
        raise InputFormatError(name, None, "scores contain NaN")
    _check_no_duplicates(codes, qids, corpus.space, name, None, None)
    rank_rows_inplace(codes, ranked_scores)
    return qids, corpus.space, codes, ranked_scores

