"""A run's rows in trec_eval's order: score descending, ties by docno descending.

Pure tensor code (CPU and CUDA alike): a stable sort by doc key then by
score, checks that rows hold no document twice, and the permutation that
orders a row."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import torch

from gpukit.errors import InputFormatError, echo
from gpukit.io.doc_space import DocSpace

#: Elements per slice of rows in row-wise sorts: bounds the sort's temporaries
#: (values and int64 indices) and keeps each slice cache-sized on CPU.
ROW_SLICE_ELEMENTS = 1 << 22


#: Elements per slice of the host's duplicate check (2 MiB of int64 keys).
CHECK_SLICE_ELEMENTS = 1 << 18


def row_slices(n_rows: int, width: int, elements: int | None = None):
    """Slices of rows holding about ``elements`` (default ``ROW_SLICE_ELEMENTS``) elements each."""
    step = max(1, (elements or ROW_SLICE_ELEMENTS) // max(width, 1))
    for lo in range(0, n_rows, step):
        yield slice(lo, min(lo + step, n_rows))


def _sort_rows_inplace(codes: torch.Tensor, scores: torch.Tensor) -> None:
    """``_sort_rows`` on tensors this module owns, slice by slice, in place."""
    for rows in row_slices(*codes.shape):
        sorted_codes, perm = torch.sort(codes[rows], dim=1, descending=True, stable=True)
        scores[rows] = scores[rows].gather(1, perm)
        codes[rows] = sorted_codes
        del sorted_codes, perm


def unranked_rows(codes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """(R,) indices of the rows not in ranking order: some adjacent pair is
    not strictly decreasing in score (a tie, an inversion or a NaN), or
    padding precedes a document. Rows in order need no sort at all."""
    if codes.shape[1] < 2:
        return torch.zeros(0, dtype=torch.int64, device=codes.device)
    doc = codes >= 0
    later = doc[:, 1:]
    in_order = (later & (scores[:, 1:] < scores[:, :-1])) | ~later
    in_order &= doc[:, :-1] | ~later
    return torch.nonzero(~in_order.all(1)).flatten()


def adjacent_repeats(keys):
    """(R, K - 1) bool: entry ``j + 1`` of a key-sorted row repeats entry ``j``
    (padding -1 never counts). The same operators on NumPy arrays or torch tensors
    (the host duplicate check sorts in NumPy)."""
    return (keys[:, 1:] == keys[:, :-1]) & (keys[:, 1:] >= 0)


def ranking_permutation(codes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Per row, the permutation into ranking order: score descending, ties by
    key (docno) descending, padding last. Two stable sorts: by key, then by score."""
    return _permutation_after_key_sort(scores, *torch.sort(codes, dim=1, descending=True, stable=True))


def _permutation_after_key_sort(scores: torch.Tensor, keys: torch.Tensor, by_key: torch.Tensor) -> torch.Tensor:
    """:func:`ranking_permutation` given the rows' keys sorted descending (stable) and that sort's indices."""
    keyed = scores.gather(1, by_key).masked_fill(keys < 0, -torch.inf)
    by_score = torch.sort(keyed, dim=1, descending=True, stable=True).indices
    return by_key.gather(1, by_score)


def _syncs_are_cheap(device: torch.device) -> bool:
    """On the CPU a host read of a tensor costs nothing special (no device sync)."""
    return device.type == "cpu"


def _rank_rows_flagging_repeats(codes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Every row put in ranking order in place, with no host sync (fixed
    shapes: all rows are permuted, not just those out of order); returns a
    0-dim bool tensor, whether some row holds a document twice (found on the
    key sort the ranking does anyway)."""
    repeated = torch.zeros((), dtype=torch.bool, device=codes.device)
    for rows in row_slices(*codes.shape):
        c, s = codes[rows], scores[rows]
        keys, by_key = torch.sort(c, dim=1, descending=True, stable=True)
        repeated |= adjacent_repeats(keys).any()
        perm = _permutation_after_key_sort(s, keys, by_key)
        c.copy_(c.gather(1, perm))
        s.copy_(s.gather(1, perm))
    return repeated


def rank_rows_inplace(codes: torch.Tensor, scores: torch.Tensor) -> None:
    """Put every row of a run in ranking order, sorting only the rows that are not.

    The rows out of order are found slice by slice, then gathered and sorted
    together (usually a few percent of the rows): one round of ops for all of
    them rather than one per slice. A whole row is sorted even when only
    ties need ordering: on 100k rows of 100 with tied scores that is about a
    quarter of the time of ordering each run of ties alone (2026-12-07, CPU)."""
    found = [unranked_rows(codes[rows], scores[rows]) + rows.start for rows in row_slices(*codes.shape)]
    unranked = torch.cat(found) if len(found) > 1 else found[0]
    for part in row_slices(unranked.numel(), codes.shape[1]):
        bad = unranked[part]
        cb, sb = codes[bad], scores[bad]
        perm = ranking_permutation(cb, sb)
        codes[bad], scores[bad] = cb.gather(1, perm), sb.gather(1, perm)
        del bad, cb, sb, perm


def _sort_rows(codes: torch.Tensor, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sort each row by doc code descending (stable; padding -1 goes last)."""
    sorted_codes, perm = torch.sort(codes, dim=1, descending=True, stable=True)
    return sorted_codes, scores.gather(1, perm), perm


def _check_no_duplicates(
    codes: torch.Tensor,
    query_ids: pa.Array,
    doc_space: DocSpace,
    source: str,
    line_of: Callable[[int], int | None] | None,
    rows_of: Callable[[int, int], list[int]] | None,
) -> None:
    """Raise on a document repeated within a row (rows in any order).

    ``rows_of(q, code)`` gives the input rows of that pair in file order; it is
    called only to name the lines of a duplicate in the error message.
    """
    if codes.shape[1] < 2:
        return
    on_host = codes.device.type == "cpu"
    buffer = None
    # On the host: small slices sorted in one reused buffer (a row sort needs
    # no more), so that the check takes no fresh memory, slow to fault in.
    for rows in row_slices(*codes.shape, CHECK_SLICE_ELEMENTS if on_host else None):
        if on_host:  # values only: NumPy's row sort and tests are several times faster here
            block = codes[rows].numpy()
            if buffer is None:
                buffer = np.empty_like(block)
            keys = buffer[: len(block)]
            np.copyto(keys, block)
            keys.sort(axis=1)
        else:
            keys = torch.sort(codes[rows], dim=1).values
        repeated = adjacent_repeats(keys)
        if bool(repeated.any()):
            q, k = (int(x) for x in torch.nonzero(torch.as_tensor(repeated))[0])
            _raise_duplicate(rows.start + q, int(keys[q, k + 1]), query_ids, doc_space, source, line_of, rows_of)


def _raise_duplicate(q, code, query_ids, doc_space, source, line_of, rows_of) -> None:
    qid = query_ids[q].as_py()
    did = doc_space.ids_of(np.array([code]))[0].as_py()
    if line_of is not None and rows_of is not None:
        lines = sorted(line_of(int(row)) or 0 for row in rows_of(q, code))
        raise InputFormatError(
            source, lines[1], f"document {echo(did)} retrieved twice for query {echo(qid)} (lines {lines[0]} and {lines[1]}); pass dedup='max' or 'first' to keep one"
        )
    raise InputFormatError(source, None, f"document {echo(did)} retrieved twice for query {echo(qid)}")
