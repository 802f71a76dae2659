"""Retrieval efficiency on five separate cost axes, at a stated quality point.

Quality alone says nothing about cost, and costs of different kinds must not
be added up: query costs recur with traffic, index and infrastructure costs
are paid sporadically (the Big-ANN and ann-benchmarks practice). So
:func:`measure_efficiency` reports, for one index at one quality point
(recall@k against exact search, nDCG@10 when judgments are given):

1. ``latency``: p50/p95/p99 per call at batch sizes 1, 32, 256, 4096;
2. ``throughput``: queries/s over the full query set (median of repeats)
   and the fraction of the device's measured roofline;
3. ``build``: train / add / graph-build seconds (and corpus encoding);
4. ``memory``: index bytes (device, host, per vector), peak allocation,
   size on disk;
5. ``infrastructure``: device, energy per query and per build (NVML),
   hardware and power cost lines from user-given prices.

Sweeps of ``nprobe`` / ``efSearch`` / ``dtype`` give the recall–throughput
Pareto front (:func:`run_sweep`, :func:`pareto_front`, :func:`plot_pareto`).
See docs/efficiency.md.
"""
from gpukit.efficiency.build import BuildResult, BuildStage, build_index
from gpukit.efficiency.energy import EnergyMeter
from gpukit.efficiency.infrastructure import Prices, cost_lines, describe_device
from gpukit.efficiency.latency import DEFAULT_BATCH_SIZES, LatencyStats, measure_latency
from gpukit.efficiency.memory import PeakMemory, disk_bytes, index_memory
from gpukit.efficiency.pareto import dominates, pareto_front
from gpukit.efficiency.plot import plot_pareto
from gpukit.efficiency.quality import QualityPoint
from gpukit.efficiency.report import AXES, EfficiencyReport
from gpukit.efficiency.roofline import DeviceRoofline, exact_search_cost, probe_roofline, roofline_fraction
from gpukit.efficiency.runner import measure_efficiency
from gpukit.efficiency.specs import IndexSpec
from gpukit.efficiency.sweep import SweepPoint, SweepResult, default_grid, run_sweep
from gpukit.efficiency.synthetic import SyntheticData, synthetic_dataset
from gpukit.efficiency.throughput import ThroughputResult, measure_throughput

__all__ = [
    "AXES",
    "BuildResult",
    "BuildStage",
    "DEFAULT_BATCH_SIZES",
    "DeviceRoofline",
    "EfficiencyReport",
    "EnergyMeter",
    "IndexSpec",
    "LatencyStats",
    "PeakMemory",
    "Prices",
    "QualityPoint",
    "SweepPoint",
    "SweepResult",
    "SyntheticData",
    "ThroughputResult",
    "build_index",
    "cost_lines",
    "default_grid",
    "describe_device",
    "disk_bytes",
    "dominates",
    "exact_search_cost",
    "index_memory",
    "measure_efficiency",
    "measure_latency",
    "measure_throughput",
    "pareto_front",
    "plot_pareto",
    "probe_roofline",
    "roofline_fraction",
    "run_sweep",
    "synthetic_dataset",
]
