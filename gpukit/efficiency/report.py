"""The efficiency report: five cost axes, each on its own, at one quality point.

JSON layout (``to_dict``): exactly one top-level key per axis —
``latency``, ``throughput``, ``build``, ``memory``, ``infrastructure`` —
plus two metadata keys that are not costs: ``setup`` (what was measured,
where) and ``quality`` (the quality point, in full). Every axis also
carries ``quality_point`` (recall@k, nDCG@10 and the search parameters) so
that an axis copied out of the report still states the quality it was
measured at. No figure of one axis is ever added to another's: query costs
recur with traffic, build and infrastructure costs are paid sporadically.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from gpukit.efficiency.build import BuildResult
from gpukit.efficiency.latency import LatencyStats
from gpukit.efficiency.quality import QualityPoint
from gpukit.efficiency.throughput import ThroughputResult

AXES: tuple[str, ...] = ("latency", "throughput", "build", "memory", "infrastructure")
METADATA_KEYS: tuple[str, ...] = ("setup", "quality")


@dataclass
class EfficiencyReport:
    setup: dict[str, Any]
    quality: QualityPoint
    latency: list[LatencyStats]
    latency_info: dict[str, Any]
    throughput: ThroughputResult
    throughput_info: dict[str, Any]
    build: BuildResult
    build_info: dict[str, Any]
    memory: dict[str, Any]
    infrastructure: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        point = self.quality.short()
        return {
            "setup": self.setup,
            "quality": self.quality.to_dict(),
            "latency": {"quality_point": point, **self.latency_info, "batches": [s.to_dict() for s in self.latency]},
            "throughput": {"quality_point": point, **self.throughput.to_dict(), **self.throughput_info},
            "build": {"quality_point": point, **self.build.to_dict(), **self.build_info},
            "memory": {"quality_point": point, **self.memory},
            "infrastructure": {"quality_point": point, **self.infrastructure},
        }

    def to_json(self) -> str:
        return json.dumps(_clean(self.to_dict()), indent=2)

    def to_table(self) -> str:
        """Plain-text report, one section per axis (never a total across axes)."""
        d = self.to_dict()
        s, q = d["setup"], d["quality"]
        k = q["k"]
        lines = [
            f"index: {s['index']}  metric: {s['metric']}  device: {s['device']}  "
            f"N={s['corpus_vectors']} Q={s['queries']} d={s['dim']}  data: {s['data']}",
            f"quality point: recall@{k} = {_f(q[f'recall@{k}'])} (vs exact fp32)  nDCG@10 = {_f(q['nDCG@10'])}"
            + (f" ({q['ndcg_reason']})" if q["ndcg_reason"] else "")
            + f"  search params: {q['search_params'] or 'defaults'}",
            "each axis below is a separate cost; they are never added together",
            "",
            f"[latency]  {d['latency']['timer']}",
            f"  {'batch':>6} {'calls':>6} {'p50 ms':>10} {'p95 ms':>10} {'p99 ms':>10} {'p50 ms/query':>13}",
        ]
        for b in d["latency"]["batches"]:
            lines.append(
                f"  {b['batch_size']:>6} {b['samples']:>6} {b['p50_ms']:>10.3f} {b['p95_ms']:>10.3f} "
                f"{b['p99_ms']:>10.3f} {b['per_query_p50_ms']:>13.5f}"
            )
        t = d["throughput"]
        lines += ["", "[throughput]", f"  {t['qps']:.1f} queries/s  (median of {t['repeats']} x {t['queries']} queries: {t['median_seconds']:.4f} s)"]
        roof = t.get("roofline")
        if roof:
            probe = t["roofline_probe"]
            lines.append(
                f"  roofline fraction {roof['fraction']:.3f} ({roof['bound']}-bound); achieved "
                f"{roof['achieved_flops_per_s'] / 1e9:.1f} GFLOP/s of {probe['matmul_flops_per_s'] / 1e9:.1f} measured, "
                f"{roof['achieved_bytes_per_s'] / 1e9:.1f} GB/s of {probe['memory_bytes_per_s'] / 1e9:.1f} measured"
            )
        else:
            lines.append(f"  roofline: n/a ({t.get('roofline_reason')})")
        if t.get("pareto"):
            front = t["pareto"]["front"]
            lines.append(f"  sweep: {len(t['pareto']['points'])} points, Pareto front: " + "; ".join(
                f"{p['index']} {p['params'] or ''} recall={p['recall']:.3f} qps={p['qps']:.0f}" for p in front))
        b = d["build"]
        lines += ["", "[build]"]
        if b["encode"]:
            lines.append(f"  encode       {b['encode']['seconds']:.4f} s  ({b['encode']['what']}; not part of the index total)")
        for stage in b["stages"]:
            lines.append(f"  {stage['stage']:<12} {stage['seconds']:.4f} s  ({stage['what']})")
        lines.append(f"  index total  {b['index_seconds']:.4f} s")
        m = d["memory"]
        lines += [
            "",
            "[memory]",
            f"  index: {m['index_bytes']} B (device {m['device_bytes']} B, host {m['host_bytes']} B), "
            f"{_f(m['bytes_per_vector'], 1)} B/vector; on disk {m['disk_bytes']} B",
        ]
        for step, peak in m["peak_allocation"].items():
            lines.append(f"  peak during {step}: {peak['bytes']} B  ({peak['method']})")
        i = d["infrastructure"]
        dev = i["device"]
        e = i["energy"]
        lines += [
            "",
            "[infrastructure]",
            f"  device: {dev['name']} x{dev['count']} ({dev['type']})",
            "  energy: " + (
                f"{_f(e['per_query_joules'], 6)} J/query, {_f(e['per_build_joules'], 3)} J/build"
                if e["per_query_joules"] is not None or e["per_build_joules"] is not None
                else f"n/a ({e['reason']})"
            ),
        ]
        cost = i["cost"]
        for name in ("hardware_per_million_queries", "hardware_per_build", "power_per_million_queries", "power_per_build"):
            line = cost[name]
            value = f"{line['value']:.6g} {cost['currency']}" if line["value"] is not None else f"n/a ({line['reason']})"
            lines.append(f"  cost {name.replace('_', ' ')}: {value}")
        return "\n".join(lines)


def _f(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _clean(value: Any) -> Any:
    """JSON has no NaN/inf: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value
