"""Device resolution shared by every layer (explicit, never silent)."""
from __future__ import annotations

import torch

from gpukit.errors import DeviceError

DeviceLike = str | torch.device | None


def resolve_device(device: DeviceLike = "auto") -> torch.device:
    """Turn ``"auto" | "cpu" | "cuda[:n]" | torch.device | None`` into a device.

    ``"auto"`` and ``None`` pick CUDA when available, else CPU. Asking for
    CUDA on a machine without it, a CUDA ordinal it does not have, or a
    string torch cannot parse is a DeviceError rather than a silent fallback.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:  # torch's own parse errors
        raise DeviceError(f"unknown device {device!r}; expected auto, cpu, cuda or cuda:N") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise DeviceError(f"device {dev} requested but CUDA is not available")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise DeviceError(f"device {dev} requested but only {torch.cuda.device_count()} CUDA device(s) are visible")
    return dev
