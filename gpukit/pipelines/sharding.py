"""Dealing encoding work across ``torch.distributed`` ranks, reproducibly.

Texts are put in one *global length order* (longest first, stable: the
order :func:`~gpukit.pipelines.encoders.encode_texts` batches in) and cut
into *units* of ``unit_rows`` consecutive texts, a multiple of
``batch_size``. Unit ``u`` goes to rank ``u mod world`` (round robin, so
long and short texts spread evenly). Because every unit starts on a batch
boundary of the global order, each text is encoded in exactly the batch it
would be in on one process: a batch-dependent encoder (padding) gives the
same vectors for any world size.

Collectives (all on the embeddings' device: gloo for CPU, NCCL for CUDA):
``max_int`` (one int64 all_reduce) and ``gather_rows`` (one all_gather of
``(max rows per rank, d)``, zero padded).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from gpukit.errors import UsageError


@dataclass(frozen=True)
class Ranks:
    """This process's place: ``dist`` is None on a single process."""

    dist: Any
    group: Any
    rank: int
    world: int

    @classmethod
    def current(cls, group: Any = None, distributed: bool | None = None) -> "Ranks":
        """The process group's ranks when one is initialised (``distributed=None``), else one process."""
        import torch.distributed as dist

        active = dist.is_available() and dist.is_initialized()
        if distributed and not active:
            raise UsageError("distributed=True but no torch.distributed process group is initialised")
        if distributed is False or not active:
            return cls(None, None, 0, 1)
        return cls(dist, group, dist.get_rank(group), dist.get_world_size(group))

    def barrier(self) -> None:
        if self.dist is not None:
            self.dist.barrier(group=self.group)

    def max_int(self, value: int, device: torch.device) -> int:
        """The largest ``value`` over all ranks."""
        if self.dist is None:
            return value
        tensor = torch.tensor([value], dtype=torch.int64, device=device)
        self.dist.all_reduce(tensor, op=self.dist.ReduceOp.MAX, group=self.group)
        return int(tensor.item())

    def gather_rows(self, local: torch.Tensor, rows_per_rank: Sequence[Sequence[int]], n: int, dim: int) -> torch.Tensor:
        """Assemble ``(n, dim)`` from every rank's ``local`` rows (rank r holds ``rows_per_rank[r]``, in order)."""
        if self.dist is None:
            out = torch.empty((n, dim), dtype=local.dtype, device=local.device)
            out[torch.as_tensor(rows_per_rank[0], dtype=torch.int64, device=local.device)] = local
            return out
        longest = max(len(rows) for rows in rows_per_rank)
        padded = torch.zeros((longest, dim), dtype=local.dtype, device=local.device)
        padded[: local.shape[0]] = local
        parts = [torch.empty_like(padded) for _ in range(self.world)]
        self.dist.all_gather(parts, padded, group=self.group)
        out = torch.empty((n, dim), dtype=local.dtype, device=local.device)
        for part, rows in zip(parts, rows_per_rank):
            if rows:
                out[torch.as_tensor(rows, dtype=torch.int64, device=local.device)] = part[: len(rows)]
        return out


def length_order(texts: Sequence[str]) -> list[int]:
    """Positions by text length, longest first; ties keep input order (as ``encode_texts``)."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


@dataclass(frozen=True)
class Deal:
    """Units of the global length order and which rank encodes each."""

    units: list[list[int]]
    world: int

    @classmethod
    def make(cls, texts: Sequence[str], unit_rows: int, world: int) -> "Deal":
        order = length_order(texts)
        return cls([order[s : s + unit_rows] for s in range(0, len(order), unit_rows)], world)

    def unit_ids(self, rank: int) -> list[int]:
        return list(range(rank, len(self.units), self.world))

    def rows(self, rank: int) -> list[int]:
        """Rank ``rank``'s text positions, unit after unit (still longest first)."""
        return [row for u in self.unit_ids(rank) for row in self.units[u]]
