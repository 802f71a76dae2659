"""Search over a corpus sharded across ``torch.distributed`` ranks.

Layout: rank r holds rows ``[offset_r, offset_r + n_r)`` of the global corpus
in its own index, with ``offset_r = n_0 + ... + n_{r-1}`` (shards in rank
order), and every rank passes the *same* queries. Each rank searches its
shard, shifts its result positions by its offset, and all_gathers the
``(Q, k)`` scores and positions; every rank then merges the ``world * k``
candidates on its device and keeps the top ``k`` by (score descending,
global position ascending), the order :class:`~gpukit.index.ExactIndex`
uses, so the result equals an exact search of the whole corpus on one
process (given the same per-document scores).

Backends: gloo for CPU tensors, NCCL for CUDA tensors (all_gather on CUDA
tensors needs NCCL).
"""
from __future__ import annotations

from typing import Any

import torch

from gpukit.index.base import IndexUsageError, SearchIndex
from gpukit.index.topk import NO_INDEX, sort_by_score_then_index


def _distributed() -> Any:
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def shard_offsets(ntotal: int, device: torch.device, group: Any = None) -> list[int]:
    """Sizes of every rank's shard (all_gather), in rank order."""
    dist = _distributed()
    if dist is None:
        return [ntotal]
    world = dist.get_world_size(group)
    mine = torch.tensor([ntotal], dtype=torch.int64, device=device)
    sizes = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(sizes, mine, group=group)
    return [int(s) for s in torch.cat(sizes).cpu().tolist()]


def sharded_search(
    index_shard: SearchIndex,
    queries: Any,
    k: int,
    *,
    group: Any = None,
    shard_offset: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-``k`` over all ranks' shards: ``(scores, global positions)``, (Q, k) on every rank.

    Args:
        index_shard: this rank's index (may be empty).
        queries: (Q, d) queries on ``index_shard.device``, identical on all ranks.
        k: results per query, ``1 <= k <= `` total corpus size.
        group: process group (default: the world).
        shard_offset: global position of this shard's first row; default:
            the sum of the lower ranks' shard sizes. Pass 0 when the shard's
            index was filled with globally unique external ids.

    Without an initialised process group this is ``index_shard.search``.
    """
    dist = _distributed()
    device = index_shard.device
    queries = index_shard.queries_tensor(queries)
    sizes = shard_offsets(index_shard.ntotal, device, group)
    total = sum(sizes)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= total:
        raise IndexUsageError(f"k must be an int between 1 and the total corpus size {total}; got {k!r}")
    rank = 0 if dist is None else dist.get_rank(group)
    offset = sum(sizes[:rank]) if shard_offset is None else shard_offset

    local_k = min(k, index_shard.ntotal)
    scores = torch.full((queries.shape[0], k), float("-inf"), dtype=torch.float32, device=device)
    positions = torch.full((queries.shape[0], k), NO_INDEX, dtype=torch.int64, device=device)
    if local_k:
        found_scores, found = index_shard.search(queries, local_k)
        valid = found >= 0  # approximate indexes pad with -1
        scores[:, :local_k] = found_scores.to(torch.float32)
        positions[:, :local_k] = torch.where(valid, found + offset, torch.full_like(found, NO_INDEX))
    if dist is None:
        merged_scores, merged = scores, positions
    else:
        world = dist.get_world_size(group)
        all_scores = [torch.empty_like(scores) for _ in range(world)]
        all_positions = [torch.empty_like(positions) for _ in range(world)]
        dist.all_gather(all_scores, scores, group=group)
        dist.all_gather(all_positions, positions, group=group)
        merged_scores, merged = sort_by_score_then_index(torch.cat(all_scores, dim=1), torch.cat(all_positions, dim=1))
    merged_scores, merged = merged_scores[:, :k], merged[:, :k]
    return merged_scores, torch.where(merged == NO_INDEX, torch.full_like(merged, -1), merged)
