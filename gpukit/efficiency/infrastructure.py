"""Infrastructure axis: which hardware, its energy, and what it costs.

Costs are separate lines and never added together or to other axes: query
costs recur with traffic, build costs are paid once per (re)build.

With ``H`` the hardware price per hour, ``p`` the power price per kWh,
``qps`` the measured throughput, ``T_b`` the build time in seconds and
``E_q``, ``E_b`` the measured energy per query and per build in joules
(1 kWh = 3.6e6 J):

* hardware per 1M queries  = H * (1e6 / qps) / 3600
* hardware per build       = H * T_b / 3600
* power per 1M queries     = p * E_q * 1e6 / 3.6e6
* power per build          = p * E_b / 3.6e6

The hardware lines assume the hardware is busy with this workload at the
measured rate and is billed by the hour; a line whose inputs are missing is
``None`` with the reason.
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import Any

import torch

from gpukit.errors import UsageError

J_PER_KWH = 3.6e6


def describe_device(device: torch.device) -> dict[str, Any]:
    """Name, kind and count of the compute device."""
    if device.type == "cuda":
        ordinal = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(ordinal)
        return {
            "type": "cuda",
            "name": props.name,
            "count": 1,
            "visible_devices": torch.cuda.device_count(),
            "total_memory_bytes": int(props.total_memory),
            "compute_capability": f"{props.major}.{props.minor}",
            "torch_cuda": torch.version.cuda,
        }
    return {
        "type": device.type,
        "name": _cpu_name(),
        "count": 1,
        "logical_cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


@dataclass(frozen=True)
class Prices:
    """User-given prices; either may be None (the matching lines are then None)."""

    hardware_per_hour: float | None = None
    power_per_kwh: float | None = None
    currency: str = "USD"

    def __post_init__(self) -> None:
        for name in ("hardware_per_hour", "power_per_kwh"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise UsageError(f"{name} must be a non-negative number; got {value!r}")


def _line(value: float | None, formula: str, reason: str | None) -> dict[str, Any]:
    return {"value": value, "formula": formula, "reason": None if value is not None else reason}


def cost_lines(
    prices: Prices,
    qps: float,
    build_seconds: float,
    energy_per_query_j: float | None,
    build_energy_j: float | None,
    energy_reason: str | None = None,
) -> dict[str, Any]:
    """The four cost lines of the module docstring, each with its formula."""
    h, p = prices.hardware_per_hour, prices.power_per_kwh
    no_h = "no hardware price given (--hardware-price-per-hour)"
    no_p = "no power price given (--power-price-per-kwh)"
    no_e = energy_reason or "no energy measurement"
    return {
        "currency": prices.currency,
        "hardware_per_million_queries": _line(
            None if h is None or not qps > 0 else h * (1e6 / qps) / 3600.0,
            "hardware_price_per_hour * (1e6 / qps) / 3600",
            no_h,
        ),
        "hardware_per_build": _line(
            None if h is None else h * build_seconds / 3600.0,
            "hardware_price_per_hour * build_seconds / 3600",
            no_h,
        ),
        "power_per_million_queries": _line(
            None if p is None or energy_per_query_j is None else p * energy_per_query_j * 1e6 / J_PER_KWH,
            "power_price_per_kwh * energy_per_query_J * 1e6 / 3.6e6",
            no_p if p is None else no_e,
        ),
        "power_per_build": _line(
            None if p is None or build_energy_j is None else p * build_energy_j / J_PER_KWH,
            "power_price_per_kwh * build_energy_J / 3.6e6",
            no_p if p is None else no_e,
        ),
    }
