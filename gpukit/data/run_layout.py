"""A run's flat (query, doc, score) rows laid out as padded (Q, K) blocks.

Rows of similar length share a block (memory bounded by the input however
lopsided the run); a file whose rows are already grouped by query is laid
out without sorting."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import torch

from gpukit.errors import InputFormatError
from gpukit.io.arrow_numpy import (
    numpy_values,
)
from gpukit.io.string_coding import CodeRuns

#: Padding (elements) a single (Q, K) layout may add beyond twice the run's
#: lines before queries are laid out in blocks by depth instead: runs whose
#: rankings are about equally deep keep one block, today's fast path.
LAYOUT_SLACK_ELEMENTS = 1 << 20


def host_empty(shape: int | tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised host array in torch's memory (``torch.from_numpy`` of it
    shares that memory): the layouts and join tables become tensors anyway.

    Why not ``np.empty``: NumPy advises transparent huge pages for arrays of
    4 MiB and more, and on the 2-core benchmark VM fresh huge pages fault in
    about six times slower than plain ones (80 MiB: ~185 ms against ~30 ms,
    2026-12-07); torch's host allocator asks for nothing. Only the pages
    differ, never a value; process settings are left alone."""
    return torch.empty(shape, dtype=_TORCH_DTYPE[np.dtype(dtype)]).numpy()


def host_full(shape: int | tuple[int, ...], fill, dtype) -> np.ndarray:
    """:func:`host_empty` filled with ``fill``."""
    out = host_empty(shape, dtype)
    out.fill(fill)
    return out


_TORCH_DTYPE = {np.dtype(d): t for d, t in (
    (np.int32, torch.int32), (np.int64, torch.int64), (np.uint64, torch.uint64), (np.float64, torch.float64),
    (np.float32, torch.float32), (np.bool_, torch.bool), (np.uint8, torch.uint8),
)}


def lopsided(n_rows: int, width: int, n_entries: int) -> bool:
    """Whether padding ``n_rows`` rows to ``width`` would cost more than twice
    the ``n_entries`` they hold (plus ``LAYOUT_SLACK_ELEMENTS``)."""
    return n_rows * width > 2 * n_entries + LAYOUT_SLACK_ELEMENTS


def length_classes(lengths: np.ndarray) -> np.ndarray:
    """ceil(log2(length)) per entry (0 for lengths 0 and 1): the depth bucket.
    Rows of one class differ at most twofold in length, so padding a class to
    its longest row at most doubles it."""
    powers = np.left_shift(np.int64(1), np.arange(63, dtype=np.int64))
    return np.searchsorted(powers, lengths, side="left")


def _block_layout(
    q_codes: np.ndarray, lengths: np.ndarray, d_codes: np.ndarray, scores: list, one_block: bool = False
) -> Iterator[tuple[np.ndarray, torch.Tensor, torch.Tensor]]:
    """(rows, codes, scores) blocks of the queries of each length class
    (:func:`length_classes`), rows ascending, each row in file order, padded
    (-1, 0) to the class's longest row: at most twice the lines in all.
    ``one_block``: a single (Q, K) block of every query (one class).

    One stable sort of the lines by (class, query); ``scores`` is a
    one-element list, emptied once copied (to free the flat scores early).
    """
    classes = np.zeros(len(lengths), dtype=np.int64) if one_block else length_classes(lengths)
    n = len(q_codes)
    row_bits, query_bits = max(1, (n - 1).bit_length()), max(1, (len(lengths) - 1).bit_length())
    if 6 + query_bits + row_bits <= 64:  # classes < 64: one direct sort of (class, query, line) keys
        key = q_codes.astype(np.uint64) << np.uint64(row_bits)
        if not one_block:
            key |= classes[q_codes].astype(np.uint64) << np.uint64(query_bits + row_bits)
        key |= np.arange(n, dtype=np.uint64)
        key.sort()
        order = (key & np.uint64((1 << row_bits) - 1)).astype(np.int64)
        del key
    else:  # more lines and queries than one 64-bit key holds
        order = np.lexsort((np.arange(n), q_codes, classes[q_codes]))
    flat_scores = scores.pop()
    line_q = q_codes[order]
    # Place of each sorted line within its query: its distance from the query's first line.
    firsts = np.concatenate([np.zeros(1, np.int64), np.flatnonzero(line_q[1:] != line_q[:-1]) + 1])
    place = np.arange(n, dtype=np.int64)
    place -= np.repeat(firsts, np.diff(np.append(firsts, n)))
    del firsts
    class_counts = np.array([n]) if one_block else np.bincount(classes[line_q], minlength=int(classes.max(initial=0)) + 1)
    at = 0
    for c in np.flatnonzero(class_counts):
        lines = slice(at, at + int(class_counts[c]))
        at = lines.stop
        rows = np.arange(len(lengths), dtype=np.int64) if one_block else np.flatnonzero(classes == c)
        width = int(lengths[rows].max())
        # A line's row within the block (in one block: its query code).
        slot = line_q[lines] * width if one_block else np.searchsorted(rows, line_q[lines]) * width
        slot += place[lines]
        codes = host_full(len(rows) * width, -1, np.int64)
        codes[slot] = d_codes[order[lines]]
        block_scores = host_full(len(rows) * width, 0.0, np.float64)
        block_scores[slot] = flat_scores[order[lines]]
        del slot
        yield rows.astype(np.int64), torch.from_numpy(codes.reshape(len(rows), width)), torch.from_numpy(block_scores.reshape(len(rows), width))


def _flat_rows(values: np.ndarray | list | ParsedScores) -> int:
    """Rows of a flat array, or of one wrapped in a one-element list, or of parsed scores."""
    return len(values[0]) if isinstance(values, list) else len(values)


class ParsedScores:
    """A run file's parsed score column, in file order, as the reader's chunks;
    a NaN is an error naming its line, raised when the chunk holding it is read."""

    def __init__(self, chunks: list[pa.Array], source: str, line_of: Callable[[int], int | None]):
        self._chunks = list(chunks)
        self._rows = sum(len(c) for c in self._chunks)
        self.source, self.line_of = source, line_of

    @staticmethod
    def _check(values: np.ndarray, first_row: int, source: str, line_of) -> None:
        nan = np.flatnonzero(np.isnan(values))
        if len(nan):
            raise InputFormatError(source, line_of(first_row + int(nan[0])), "score is NaN")

    def __len__(self) -> int:
        return self._rows

    def pieces(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, float64 values) of each chunk in order, NaN checked;
        each chunk is dropped once the next is asked for."""
        at = 0
        while self._chunks:
            values = numpy_values(self._chunks.pop(0)).astype(np.float64, copy=False)
            self._check(values, at, self.source, self.line_of)
            yield at, values
            at += len(values)
            del values

    def to_flat(self) -> np.ndarray:
        """Every row's score as one float64 array, NaN checked, filled chunk by
        chunk: each chunk is dropped once copied, so a full Arrow column and a
        full NumPy copy are never both alive."""
        out = np.empty(self._rows, dtype=np.float64)
        for at, values in self.pieces():
            out[at : at + len(values)] = values
        return out


def query_groups(q_codes: np.ndarray | CodeRuns, n_queries: int, n_rows: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(first row, int64 query code) of each group of a file whose queries'
    lines are contiguous, one group per query; None if some query's lines are split."""
    if isinstance(q_codes, CodeRuns):
        return (q_codes.starts, q_codes.codes.astype(np.int64, copy=False)) if q_codes.each_code_once() else None
    change = np.flatnonzero(q_codes[1:] != q_codes[:-1]) + 1 if n_rows else np.zeros(0, np.int64)
    if len(change) != n_queries - 1:
        return None
    starts = np.concatenate([np.zeros(1, np.int64), change])
    return starts, q_codes[starts].astype(np.int64)


def _listed(values) -> list:
    """``values`` as the one-element list the layouts empty (to free it early)."""
    return values if isinstance(values, list) else [values]


def _group_layout(
    starts: np.ndarray, group_q: np.ndarray, n: int, n_queries: int, d_codes: list, scores: list
) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """(Q, K) int64 keys (-1 padding), float64 scores, each row in file order,
    and the file row of each query's first line, for ``n`` rows in groups of
    one query each (:func:`query_groups`: group ``g`` starts at row
    ``starts[g]`` and holds query ``group_q[g]``, int64; every one of the
    ``n_queries`` queries has one group).

    ``d_codes`` is a one-element list of a flat array, emptied (the array
    freed) once laid out, before the scores' (Q, K) array is allocated:
    freed pages are reused instead of new ones faulted in (slow on some
    machines). ``scores`` is a one-element list of the parsed column (laid
    out chunk by chunk, no flat copy) or of a flat array. When every query has
    the same number of lines, a piece of the file is whole rows (and at most
    two partial ones) that are only permuted into query-code order.
    """
    lengths = np.diff(np.append(starts, n))
    width = int(lengths.max()) if n else 0
    first_lines = np.empty(n_queries, dtype=np.int64)
    first_lines[group_q] = starts
    if n and int(lengths.min()) == width:
        place = None
    else:
        # Flat slot of row i: its query's row start plus its place within the group.
        place = np.repeat(group_q * width - starts, lengths) + np.arange(n, dtype=np.int64)
    flat_codes = d_codes.pop()
    codes = _lay_out([(0, flat_codes)], n_queries, width, group_q, place, -1, np.int64)
    del flat_codes
    score_column = scores.pop()
    pieces = score_column.pieces() if isinstance(score_column, ParsedScores) else [(0, score_column)]
    del score_column
    score_np = _lay_out(pieces, n_queries, width, group_q, place, 0, np.float64)
    return torch.from_numpy(codes), torch.from_numpy(score_np), first_lines


def _lay_out(pieces, n_queries: int, width: int, group_q: np.ndarray, place: np.ndarray | None, fill, dtype) -> np.ndarray:
    """A (Q, K) array of the file's values, given as (first row, values)
    pieces in file order: row ``group_q[g]`` holds group ``g``'s lines, in
    file order (``place``: each line's flat slot, when groups differ in
    length; else group ``g`` is lines ``g * width`` to ``(g + 1) * width``)."""
    if place is not None:
        out = host_full((n_queries, width), fill, dtype)
        flat = out.reshape(-1)
        for at, values in pieces:
            flat[place[at : at + len(values)]] = values
        return out
    out = host_empty((n_queries, width), dtype)
    for at, values in pieces:
        end = at + len(values)
        first_whole, after_whole = -(-at // width), end // width
        if first_whole > after_whole:  # the piece lies inside one row
            out[group_q[at // width], at % width : at % width + len(values)] = values
            continue
        if at % width:  # the tail of a row begun in the previous piece
            out[group_q[first_whole - 1], at % width :] = values[: first_whole * width - at]
        if after_whole > first_whole:
            whole = values[first_whole * width - at : after_whole * width - at]
            out[group_q[first_whole:after_whole]] = whole.reshape(-1, width)
        if end % width:  # the head of a row that the next piece ends
            out[group_q[after_whole], : end % width] = values[after_whole * width - at :]
    return out


@dataclass(frozen=True, eq=False)
class RunBlock:
    """Rows of a run padded to their own deepest ranking.

    Attributes:
        rows: (R,) int64 run rows held, ascending, on the run's device;
            ``None``: every row of the run, in order.
        doc_codes: (R, K_b) int64, as :attr:`Run.doc_codes` for these rows.
        scores: (R, K_b) float, aligned with ``doc_codes`` (on their device
            when read; see :meth:`to`).
    """

    rows: torch.Tensor | None
    doc_codes: torch.Tensor
    _scores: torch.Tensor

    @property
    def scores(self) -> torch.Tensor:
        return _scores_on_codes_device(self, "_scores", self.doc_codes)

    @property
    def score_dtype(self) -> torch.dtype:
        """dtype of :attr:`scores`, without copying them to the device."""
        return self._scores.dtype

    def to(self, device: torch.device) -> "RunBlock":
        """Rows and doc keys copied to ``device``; scores on their first read."""
        rows = None if self.rows is None else self.rows.to(device)
        return RunBlock(rows, self.doc_codes.to(device), _deferred(self._scores, device))


def _deferred(scores: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Scores for a copy on ``device``: host scores stay where they are until
    read (they hold no device memory); device scores are copied now, so that
    moving a run off a device frees it."""
    return scores if scores.device.type == "cpu" else scores.to(device)


def _scores_on_codes_device(owner, field: str, codes: torch.Tensor) -> torch.Tensor:
    """``owner.<field>`` moved, once, to the device of ``codes``: ``to`` defers
    the copy of scores because evaluation reads them only to compare them in
    a narrower precision than stored (see :func:`gpukit.ranking.form_ranking`)."""
    scores = getattr(owner, field)
    if scores.device != codes.device:
        scores = scores.to(codes.device)
        object.__setattr__(owner, field, scores)  # frozen dataclass: a cache, not a change of value
    return scores
