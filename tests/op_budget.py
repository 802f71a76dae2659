"""Counting what a piece of code asks of a device (test utility).

:class:`DeviceOpCounter` is a ``TorchDispatchMode`` that sees every aten op
and counts: ops, host-to-device copies (an op reading a CPU tensor and
writing a tensor on another device), device-to-host copies, and syncs
(``_local_scalar_dense``: ``.item()``, ``int(t)``, ``bool(t)``). Run the code
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


class DeviceOpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter[str] = collections.Counter()
        self.host_to_device = 0
        self.device_to_host = 0
        self.syncs = 0

    @property
    def total(self) -> int:
        return sum(self.ops.values())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func.overloadpacket)
        self.ops[name] += 1
        if name == "aten._local_scalar_dense":
            self.syncs += 1
        out = func(*args, **kwargs)
        inputs, outputs = _devices((args, kwargs)), _devices(out)
        if "cpu" in inputs and outputs - {"cpu"}:
            self.host_to_device += 1
        if inputs - {"cpu"} and "cpu" in outputs:
            self.device_to_host += 1
        return out
