"""Energy from NVML's cumulative counter (``nvmlDeviceGetTotalEnergyConsumption``).

The counter gives the GPU's energy in millijoules since the driver loaded
(Volta and newer). The energy of a step is the counter's difference across
it: ``E = (e_after - e_before) / 1000`` joules. It counts the whole board,
so other work on the GPU at the same time is included; the counter updates
every few milliseconds, so spans are kept to a second or more where
possible (:data:`MIN_ENERGY_SPAN_S`).

Without NVML (no ``nvidia-ml-py`` / ``pynvml``, a CPU device, a GPU without
the counter) every reading is ``None`` with the reason, never a guess.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

#: Spans of full-query-set searches for energy per query run at least this long.
MIN_ENERGY_SPAN_S = 2.0


@dataclass
class EnergySpan:
    """Energy of one step: ``joules`` or ``None`` with ``reason``."""

    joules: float | None
    seconds: float
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"joules": self.joules, "seconds": self.seconds, "reason": self.reason}


class EnergyMeter:
    """Reads the NVML energy counter of the GPU behind a torch device."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.reason: str | None = None
        self._nvml: Any = None
        self._handle: Any = None
        if device.type != "cuda":
            self.reason = f"NVML measures NVIDIA GPUs; device is {device.type} (no energy counter read)"
            return
        try:
            import pynvml  # provided by the nvidia-ml-py package
        except ImportError:
            self.reason = "pynvml not importable: pip install nvidia-ml-py"
            return
        try:
            pynvml.nvmlInit()
            self._handle = _handle_for(pynvml, device)
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        except Exception as exc:  # NVMLError subclasses, absent symbols
            self.reason = f"NVML energy counter unavailable: {exc}"
            self._handle = None
            return
        self._nvml = pynvml

    @property
    def available(self) -> bool:
        return self._handle is not None

    def read_joules(self) -> float | None:
        if not self.available:
            return None
        return self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle) / 1e3

    def span(self) -> "_SpanContext":
        """``with meter.span() as s: ...`` then ``s.result`` is an EnergySpan."""
        return _SpanContext(self)


class _SpanContext:
    def __init__(self, meter: EnergyMeter) -> None:
        self.meter = meter
        self.result: EnergySpan | None = None

    def __enter__(self) -> "_SpanContext":
        if self.meter.device.type == "cuda":
            torch.cuda.synchronize(self.meter.device)
        self._start_j = self.meter.read_joules()
        self._start_t = time.perf_counter()
        return self

    def elapsed(self) -> float:
        """Seconds since the span began."""
        return time.perf_counter() - self._start_t

    def __exit__(self, *exc: Any) -> None:
        if self.meter.device.type == "cuda":
            torch.cuda.synchronize(self.meter.device)
        seconds = time.perf_counter() - self._start_t
        end_j = self.meter.read_joules()
        if self._start_j is None or end_j is None:
            self.result = EnergySpan(None, seconds, self.meter.reason)
        else:
            self.result = EnergySpan(end_j - self._start_j, seconds)


def _handle_for(pynvml: Any, device: torch.device) -> Any:
    """NVML handle of the torch device, matched by UUID when torch reports one.

    CUDA ordinals and NVML indices differ under CUDA_VISIBLE_DEVICES, so the
    ordinal is only the fallback.
    """
    ordinal = device.index if device.index is not None else torch.cuda.current_device()
    uuid = getattr(torch.cuda.get_device_properties(ordinal), "uuid", None)
    if uuid is not None:
        text = str(uuid)
        for candidate in (text if text.startswith("GPU-") else f"GPU-{text}", text):
            try:
                return pynvml.nvmlDeviceGetHandleByUUID(candidate)
            except Exception:
                continue
    return pynvml.nvmlDeviceGetHandleByIndex(ordinal)
