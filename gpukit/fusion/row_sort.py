"""The fusion kernel's two row sorts, as one-dimensional integer sorts.

Fusion sorts every query's entries twice: by doc key (to bring a document's
entries together) and, once fused, by score (the ranking). Both are stable,
row-wise, descending sorts of a (R, M) tensor. ``torch.sort`` along a
dimension is a comparison sort of each row; a one-dimensional stable sort
of int64 is a radix sort on CPU (and on CUDA), several times faster, and
fastest on chunks that stay in cache. So each row's values are mapped to
non-negative integers that ascend as the values descend, the row index is
packed above them, and a chunk of rows is sorted as one flat array: rows
come out in order, each sorted, ties in column order (the sort is stable),
exactly ``torch.sort(x, dim=1, descending=True, stable=True)``.

* doc keys (int64, -1 padding): the code of a key is ``(hi - key) >> shift``
  (``hi`` the slice's largest key; ``shift`` the trailing zero bits every
  ``hi - key`` shares, e.g. the zero padding of short packed ids), padding
  one past the largest code. When the row and code bits exceed 63, and
  off the CPU (the range is a host read), ``torch.sort`` is used instead.
* scores (float64): the bits of a float, its magnitude flipped when
  negative, ascend with it (:mod:`gpukit.float_order`); their complement
  descends. With no room left for the row, a chunk is sorted twice, by
  score and then (stably) by row.
"""
from __future__ import annotations

import torch

from gpukit.float_order import signed_order_bits64

#: Entries sorted as one flat array: chunks of about this many stay in cache,
#: where the radix sort is 2-4x faster per entry than on a slice of 2^21.
CHUNK_ENTRIES = 1 << 18


def _step(width: int, chunk: int | None) -> int:
    """Rows per chunk of about ``chunk`` (default :data:`CHUNK_ENTRIES`) entries."""
    return max(1, (chunk or CHUNK_ENTRIES) // max(width, 1))


def _sort_chunks(flat: torch.Tensor, rows: int, width: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``flat`` (rows x width values) sorted stably chunk by chunk of ``step``
    rows, and each sorted entry's flat index within its chunk."""
    index = torch.empty(flat.numel(), dtype=torch.int64, device=flat.device)
    values = torch.empty_like(flat)
    for a in range(0, rows, step):
        part = slice(a * width, min(a + step, rows) * width)
        torch.sort(flat[part], stable=True, out=(values[part], index[part]))
    return values, index


def descending_keys(keys: torch.Tensor, chunk: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.sort(keys, dim=1, descending=True, stable=True)`` of (R, M)
    int64 keys (-1 padding, every other key >= 0): sorted keys and the (R, M)
    column permutation."""
    rows, width = keys.shape
    # The packing needs the keys' range on the host; off the CPU that read
    # would sync the device once per fused slice, and torch.sort along a
    # dimension is already a segmented radix sort there.
    if keys.numel() == 0 or keys.device.type != "cpu":
        return torch.sort(keys, dim=1, descending=True, stable=True)
    valid = keys >= 0
    hi, lo = (int(v) for v in torch.stack([keys.amax(), keys.masked_fill(~valid, torch.iinfo(torch.int64).max).amin()]).tolist())
    if hi < 0:  # nothing but padding: already in order
        return keys.clone(), torch.arange(width, device=keys.device).expand(rows, width).contiguous()
    step = _step(width, chunk)
    row_bits = (min(rows, step) - 1).bit_length()
    span, shift = hi - lo, 0
    if row_bits + (span + 1).bit_length() > 63:
        shift = _common_trailing_zeros(hi - keys.masked_fill(~valid, hi))
        span >>= shift
    code_bits = (span + 1).bit_length()
    if row_bits + code_bits > 63:
        return torch.sort(keys, dim=1, descending=True, stable=True)
    local_row = torch.arange(rows, device=keys.device, dtype=torch.int64) % step
    row_base = (local_row << code_bits)[:, None]
    # hi - key of a padding entry is hi + 1 <= 2**63 - 1: no overflow, and replaced anyway.
    code = hi - keys
    if shift:
        code >>= shift
    code = torch.where(valid, code, span + 1).add_(row_base)
    if row_bits + code_bits <= 31:  # int32 sorts in half the radix passes of int64
        code = code.to(torch.int32)
    code, index = _sort_chunks(code.view(-1), rows, width, step)
    code = code.view(rows, width).to(torch.int64).sub_(row_base)
    out = torch.where(code <= span, hi - (code << shift), -1)
    return out, index.view(rows, width).sub_((local_row * width)[:, None])


def _common_trailing_zeros(d: torch.Tensor) -> int:
    """The number of trailing zero bits shared by every value of the
    non-negative int64 tensor ``d`` (62 when all are 0: any shift is exact)."""
    lowest = d & -d  # each value's lowest set bit (0 for 0)
    return int(lowest.masked_fill_(lowest == 0, 1 << 62).amin()).bit_length() - 1


def ranking_order(scores: torch.Tensor, present: torch.Tensor, chunk: int | None = None) -> torch.Tensor:
    """(R, U) permutation putting each row of float64 ``scores`` in ranking
    order: score descending, ties in column order, absent entries last (as
    ``torch.sort(scores.masked_fill(~present, -inf), dim=1, descending=True,
    stable=True).indices``). Scores are finite; -0.0 ranks as 0.0."""
    rows, width = scores.shape
    if scores.numel() == 0:
        return torch.zeros(rows, width, dtype=torch.int64, device=scores.device)
    step = _step(width, chunk)
    # + 0.0 turns -0.0 into 0.0; the complement of ascending bits descends.
    bits = (scores.masked_fill(~present, -torch.inf) + 0.0).view(torch.int64)
    by_score = _sort_chunks((~signed_order_bits64(bits)).view(-1), rows, width, step)[1]
    # Then stably by row within the chunk: the narrowest integers sort in the fewest passes.
    small = torch.uint8 if step <= 256 else (torch.int16 if step <= 1 << 15 else torch.int64)
    by_row = _sort_chunks(torch.div(by_score, width, rounding_mode="floor").to(small), rows, width, step)[1].view(rows, width)
    local_row = torch.arange(rows, device=scores.device, dtype=torch.int64) % step
    chunk_base = (torch.arange(rows, device=scores.device) - local_row)[:, None] * width
    return by_score.take(by_row + chunk_base).view(rows, width).sub_((local_row * width)[:, None])
