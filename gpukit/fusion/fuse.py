"""``gpukit.fuse``: rank fusion of runs as batched tensor ops (CPU and CUDA, same code)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch

from gpukit.data.run import Run
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import UsageError
from gpukit.fusion.align import AlignedRuns, align_runs, check_runs
from gpukit.fusion.combine import Entries, fuse_slice
from gpukit.fusion.methods import MethodSpec, method_spec, prepare, resolve_params, resolve_weights, run_values
from gpukit.fusion.normalise import inverted_order, norm_name, normalise

#: Entries (queries x the runs' summed depth) fused per slice: the kernel's
#: temporaries (a few dozen (R, M) tensors, 2 MiB each) stay in cache, where
#: its sorts and scans run 1.3-2x faster on CPU than on slices of 2^21.
SLICE_ENTRIES = 1 << 18


def fuse(
    runs: Sequence[Run],
    method: str = "wsum",
    norm: str | None = "min-max",
    weights: Sequence[float] | None = None,
    params: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    device: DeviceLike = None,
    **kwargs: Any,
) -> Run:
    """Fuse ``runs`` into one run (ranx's ``fuse``, as tensor ops).

    Args:
        runs: two or more :class:`~gpukit.Run` s. The fused run answers the
            union of their queries; a run that does not answer a query
            contributes nothing to it (an empty ranking). Runs sharing no
            query are an error.
        method: a name of :data:`gpukit.fusion.METHODS` (``rrf``, ``sum``,
            ``mnz``, ``wsum``, ``isr``, ``bordafuse``, ...; ``combsum``-style
            spellings accepted). Definitions: :mod:`gpukit.fusion.methods`.
        norm: score normalisation applied to each run first (ranx's default
            ``"min-max"``; ``None`` for raw scores); see :mod:`gpukit.fusion.normalise`.
        weights: one per run, for weighted methods (``wsum``, ``wmnz``,
            ``mixed``, ``w_bordafuse``); default 1 / N each.
        params: method parameters (ranx's ``params``: ``k`` for rrf, ``gamma``,
            ``sigma``, ``phi``, ``probs``, ``w``, ``log_odds``, ``map_scores``);
            may also be given as keyword arguments.
        name: the fused run's name (default: the method's).
        device: where to fuse; ``None``: the first run's device.

    Returns:
        A :class:`~gpukit.Run` of float64 fused scores in the runs' common
        doc key space, each row in ranking order (score descending, ties by
        doc id descending, as trec_eval; ranks used by rank-based methods
        follow the same order).
    """
    runs = check_runs(runs)
    spec = method_spec(method)
    norm = norm_name(norm)
    merged = dict(params or {})
    merged.update(kwargs)
    resolved = resolve_params(spec, merged, len(runs))
    w = resolve_weights(spec, weights, len(runs))
    if norm == "borda" and spec.rank_based:
        raise UsageError(f"norm 'borda' gives every candidate to every run without a rank; rank-based method {spec.name!r} needs another norm")
    dev = resolve_device(device, runs[0].device)
    aligned = align_runs(runs, dev)
    _check_depths(spec, resolved, aligned)
    return fuse_aligned(aligned, spec, norm, w, resolved, name or spec.name)


def _check_depths(spec: MethodSpec, params: dict, aligned: AlignedRuns) -> None:
    """BayesFuse has a log-odds per rank: a run ranked deeper than its table has no value there."""
    if spec.name != "bayesfuse":
        return
    for i, codes in enumerate(aligned.codes):
        depth = int((codes >= 0).sum(1).max()) if codes.numel() else 0
        if depth > len(params["log_odds"][i]):
            raise UsageError(f"run {i} ranks {depth} documents for a query but its log_odds has {len(params['log_odds'][i])} entries")


def fuse_aligned(
    aligned: AlignedRuns, spec: MethodSpec, norm: str | None, weights: list[float] | None, params: dict, name: str
) -> Run:
    """:func:`fuse` of runs already aligned, slice of queries by slice."""
    device = aligned.codes[0].device
    tensors = prepare(spec, params, device)
    w = torch.tensor(weights, dtype=torch.float64, device=device) if weights is not None else None
    borda_norm = norm == "borda"
    total_depth = sum(int(c.shape[1]) for c in aligned.codes)
    step = max(1, SLICE_ENTRIES // max(total_depth * (aligned.num_runs if spec.combine == "med" and borda_norm else 1), 1))
    pieces: list[tuple[torch.Tensor, torch.Tensor]] = []
    bad = torch.zeros((), dtype=torch.bool, device=device)
    for lo in range(0, aligned.num_queries, step):
        hi = min(lo + step, aligned.num_queries)
        entries = slice_entries(aligned, lo, hi, spec, norm, tensors)
        keys, scores = fuse_slice(entries, spec, tensors, w, borda_norm)
        bad |= ~torch.isfinite(scores.masked_fill(keys < 0, 0.0)).all()  # no host read per slice
        pieces.append((keys, scores))
        del entries
    if bool(bad):
        raise UsageError(f"fusion with {spec.name!r} gave a non-finite score (infinite input scores?)")
    codes, scores = _stack(pieces, device)
    return Run(aligned.query_ids, aligned.doc_space, codes, scores, name)


def slice_entries(aligned: AlignedRuns, lo: int, hi: int, spec: MethodSpec, norm: str | None, params: dict) -> Entries:
    """Union rows ``lo:hi`` of every run, normalised and valued, side by side.

    Runs of one depth next to each other are one (R, n, K) block: normalised
    and valued by the same few ops, whatever the number of runs."""
    parts = [aligned.slice_of(i, lo, hi) for i in range(aligned.num_runs)]
    widths = [int(c.shape[1]) for c, _ in parts]
    keys = torch.cat([c for c, _ in parts], 1)
    scores = torch.cat([s for _, s in parts], 1)
    rows, device = keys.shape[0], keys.device
    late = spec.value == "borda" or norm == "borda"
    # Rank values read no score: only min-max-inverted, which re-ranks rows, needs them normalised.
    scores_used = not late and spec.value != "rank"
    key_blocks, value_blocks, lengths = [], [], []
    start = 0
    for first, n, width in _blocks(widths):
        cols = slice(start, start + n * width)
        start += n * width
        codes = keys[:, cols].view(rows, n, width)
        block = scores[:, cols].view(rows, n, width)
        valid = codes >= 0
        lengths.append(valid.sum(2))
        if norm == "min-max-inverted":  # the only normalisation that changes a row's order
            block = normalise(block, valid, norm)
            order = inverted_order(block, valid)
            codes, block = codes.gather(2, order), block.gather(2, order)
        elif scores_used:
            block = normalise(block, valid, norm)
        key_blocks.append(codes.reshape(rows, n * width))
        if late:
            continue
        if spec.per_run:
            values = torch.stack([run_values(spec, params, first + j, block[:, j], valid[:, j]) for j in range(n)], 1)
        else:
            values = run_values(spec, params, first, block, valid)
        value_blocks.append(values.reshape(rows, n * width))
    lengths_t = torch.cat(lengths, 1)
    width_t = torch.tensor(widths, device=device)
    runs = torch.repeat_interleave(torch.arange(len(widths), device=device), width_t)
    ranks = (torch.arange(runs.numel(), device=device) - (torch.cumsum(width_t, 0) - width_t)[runs]).to(torch.float64)
    return Entries(
        keys=_cat(key_blocks),
        values=_cat(value_blocks) if value_blocks else None,
        runs=runs,
        ranks=ranks,
        lengths=lengths_t,
    )


def _blocks(widths: list[int]) -> list[tuple[int, int, int]]:
    """(first run, number of runs, width) of each maximal group of consecutive runs of one width."""
    out: list[tuple[int, int, int]] = []
    for i, w in enumerate(widths):
        if out and out[-1][2] == w:
            out[-1] = (out[-1][0], out[-1][1] + 1, w)
        else:
            out.append((i, 1, w))
    return out


def _cat(blocks: list[torch.Tensor]) -> torch.Tensor:
    return blocks[0] if len(blocks) == 1 else torch.cat(blocks, 1)


def _stack(pieces: list[tuple[torch.Tensor, torch.Tensor]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The slices' rows as one (Q, U) layout, U the widest; each slice freed once copied."""
    if len(pieces) == 1:
        return pieces[0]
    rows = sum(p[0].shape[0] for p in pieces)
    width = max(p[0].shape[1] for p in pieces)
    # torch.empty: pages are touched as slices are copied in, while each slice is freed.
    codes = torch.empty((rows, width), dtype=torch.int64, device=device)
    scores = torch.empty((rows, width), dtype=torch.float64, device=device)
    at = 0
    pieces.reverse()
    while pieces:
        k, s = pieces.pop()
        n, u = k.shape
        codes[at : at + n, :u] = k
        codes[at : at + n, u:] = -1
        scores[at : at + n, :u] = s
        scores[at : at + n, u:] = 0.0
        at += n
        del k, s
    return codes, scores

