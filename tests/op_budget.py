"""Counting what a piece of code asks of a device (test utility).

:class:`DeviceOpCounter` is a ``TorchDispatchMode`` that sees every aten op
and counts: ops, host-to-device copies (an op reading a CPU tensor and
writing a tensor on another device), device-to-host copies, and syncs
(``_local_scalar_dense``: ``.item()``, ``int(t)``, ``bool(t)``), and the
bytes the ops write (host-to-device bytes separately). Run the code
on the ``meta`` device to trace the non-CPU (CUDA) branches without a GPU: a
meta tensor has no data, so any sync raises, and the counts are those of the
device path.
"""
from __future__ import annotations

import collections

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def _devices(tree) -> set[str]:
    return {t.device.type for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)}


def _nbytes(tree) -> int:
    return sum(t.numel() * t.element_size() for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor))


def _written_bytes(func, out) -> int:
    """Bytes of the op's results, views excluded (a view writes nothing;
    an in-place op writes its argument)."""
    returns = func._schema.returns
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = 0
    for i, value in enumerate(outs):
        alias = returns[i].alias_info if i < len(returns) else None
        if alias is None or alias.is_write:
            total += _nbytes(value)
    return total


def _answer_meta_read(name: str, args, kwargs):
    """Zeros for an op that reads meta data on the host; None for other ops."""
    first = args[0]
    if name == "aten._local_scalar_dense":
        return torch.zeros((), dtype=first.dtype).item()
    if name == "aten.nonzero":
        return torch.empty((0, first.dim()), dtype=torch.int64, device="meta")
    if name == "aten._to_copy" and torch.device(kwargs.get("device") or "meta").type == "cpu":
        return torch.zeros(first.shape, dtype=kwargs.get("dtype") or first.dtype)
    return None


# Ops that read only the elements an index selects (plus the index).
_INDEXED_READS = {"aten.gather", "aten.index", "aten.index_select", "aten.take"}


def _read_bytes(name: str, func, args, kwargs, out) -> int:
    if all(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns):
        return 0  # a view reads nothing
    if name in _INDEXED_READS:
        indices = [t for t in tree_flatten((args[1:], kwargs))[0] if isinstance(t, torch.Tensor)]
        return _nbytes(out) + _nbytes(indices)
    return _nbytes((args, kwargs))


class DeviceOpCounter(TorchDispatchMode):
    """With ``answer_syncs``, a read of a meta tensor by the host (a scalar,
    a copy to the CPU, ``nonzero``) counts as a sync and returns zeros (an
    empty ``nonzero``) instead of raising, so code that checks its inputs
    runs to the end on the meta device: the zeros must mean "no problem"."""

    def __init__(self, answer_syncs: bool = False) -> None:
        super().__init__()
        self.answer_syncs = answer_syncs
        self.ops: collections.Counter[str] = collections.Counter()
        self.host_to_device = 0
        self.host_to_device_bytes = 0
        self.device_to_host = 0
        self.syncs = 0
        # Bytes of every tensor the ops wrote (their outputs) and read (their
        # inputs; an indexed read as many as it gathers): memory traffic,
        # counting one pass per op (a multi-pass kernel such as topk reads more).
        self.bytes_written = 0
        self.bytes_read = 0

    @property
    def total(self) -> int:
        return sum(self.ops.values())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func.overloadpacket)
        self.ops[name] += 1
        if name == "aten._local_scalar_dense":
            self.syncs += 1
        if self.answer_syncs and "meta" in _devices((args, kwargs)):
            answer = _answer_meta_read(name, args, kwargs)
            if answer is not None:
                self.syncs += name != "aten._local_scalar_dense"
                self.device_to_host += name == "aten._to_copy"
                return answer
        out = func(*args, **kwargs)
        inputs, outputs = _devices((args, kwargs)), _devices(out)
        written = _written_bytes(func, out)
        self.bytes_written += written
        self.bytes_read += _read_bytes(name, func, args, kwargs, out)
        if "cpu" in inputs and outputs - {"cpu"}:
            self.host_to_device += 1
            self.host_to_device_bytes += written
        if inputs - {"cpu"} and "cpu" in outputs:
            self.device_to_host += 1
        return out


def meta_ranking(q: int, k: int, judged: int):
    """A RankedJudgments of ``q`` topics, ``k`` ranks and ``judged`` ideal
    grades on the meta device (shapes only): what the kernels' device
    branches read."""
    from gpukit.ranking import RankedJudgments

    meta = torch.device("meta")
    return RankedJudgments(
        query_ids=[""] * q,
        grades=torch.empty((q, k), dtype=torch.int32, device=meta),
        num_ret=torch.empty(q, dtype=torch.int64, device=meta),
        ideal=torch.empty((q, judged), dtype=torch.int32, device=meta),
        in_run=torch.empty(q, dtype=torch.bool, device=meta),
        run_queries_not_in_qrels=0,
    )
