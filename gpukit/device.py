"""The one device rule of gpukit (explicit, never silent).

* ``device=None`` means *the input's device*: a run, tensor, model or index
  already on a device is computed on there, with no copy. An input that is
  not on any device yet (a file, a dict, an empty index) is on the host, so
  ``None`` is the CPU there. Every command line defaults to ``--device cpu``
  for that reason (files are read into host memory).
* ``"auto"`` picks CUDA (the current CUDA device) when present, else the CPU.
* ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device`` name a device;
  a bare ``cuda`` is pinned to the current CUDA ordinal, so that device
  comparisons are exact (tensors always report ``cuda:N``).

Asking for CUDA on a machine without it, an ordinal it does not have, or a
name torch cannot parse is a :class:`~gpukit.errors.DeviceError`, never a
silent fallback. A computation that must move an input (``device=`` differs
from the input's) copies it once, where the caller asked.
"""
from __future__ import annotations

import torch

from gpukit.errors import DeviceError

DeviceLike = str | torch.device | None


def resolve_device(device: DeviceLike, like: torch.device | None = None) -> torch.device:
    """The device ``device`` names under the rule above; ``like`` is the
    input's device (``None``: the input is on the host)."""
    if device is None:
        return _pinned(like) if like is not None else torch.device("cpu")
    if isinstance(device, str) and device == "auto":
        return _pinned(torch.device("cuda")) if torch.cuda.is_available() else torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:  # torch's own parse errors
        raise DeviceError(f"unknown device {device!r}; expected auto, cpu, cuda or cuda:N") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise DeviceError(f"device {dev} requested but CUDA is not available")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise DeviceError(f"device {dev} requested but only {torch.cuda.device_count()} CUDA device(s) are visible")
    return _pinned(dev)


def _pinned(dev: torch.device) -> torch.device:
    if dev.type == "cuda" and dev.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return dev
