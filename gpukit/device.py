"""Device resolution shared by every layer (explicit, never silent)."""
from __future__ import annotations

import torch

from gpukit.errors import DeviceError

DeviceLike = str | torch.device | None


def resolve_device(device: DeviceLike = "auto") -> torch.device:
    """Turn ``"auto" | "cpu" | "cuda[:n]" | torch.device | None`` into a device.

    ``"auto"`` and ``None`` pick CUDA when available, else CPU. Asking for
    CUDA on a machine without it is an error rather than a silent fallback.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise DeviceError(f"device {dev} requested but CUDA is not available")
    return dev
