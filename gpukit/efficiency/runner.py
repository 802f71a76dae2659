"""``measure_efficiency``: build, search and measure one index on all five axes.

Order of work (each step timed or measured on its own):

1. build the index stage by stage (build axis), under a peak-memory and an
   energy span;
2. index size in memory and on disk (memory axis);
3. the exact float32 ground truth (not timed);
4. one full-query-set search under a peak-memory span (also the warm-up),
   then the timed repeats (throughput axis) and, from their output, the
   quality point;
5. per-batch-size latency (latency axis);
6. the roofline probe and the search's cost model (throughput axis);
7. energy per query over >= 2 s of searches when NVML is present, device
   description and cost lines (infrastructure axis);
8. optionally, the parameter sweep and its Pareto front.
"""
from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Callable, Mapping, Sequence

import torch

import gpukit
from gpukit.judgments.qrels import Qrels
from gpukit.device import DeviceLike, resolve_device
from gpukit.efficiency.build import build_index, time_encoding
from gpukit.efficiency.energy import MIN_ENERGY_SPAN_S, EnergyMeter, EnergySpan
from gpukit.efficiency.infrastructure import Prices, cost_lines, describe_device
from gpukit.efficiency.latency import DEFAULT_BATCH_SIZES, measure_latency
from gpukit.efficiency.memory import PeakMemory, disk_bytes, index_memory
from gpukit.efficiency.plot import plot_pareto
from gpukit.efficiency.quality import exact_ground_truth, quality_point
from gpukit.efficiency.report import EfficiencyReport
from gpukit.efficiency.roofline import (
    DeviceRoofline,
    SearchCost,
    exact_search_cost,
    ivf_flat_search_cost,
    probe_roofline,
    roofline_fraction,
)
from gpukit.efficiency.specs import IndexSpec, check_search_params, compute_dtype
from gpukit.efficiency.sweep import run_sweep
from gpukit.efficiency.throughput import measure_throughput
from gpukit.efficiency.timing import synchronize, time_call, timer_description
from gpukit.errors import GpukitError
from gpukit.index import ExactIndex, SearchIndex
from gpukit.index.faiss_index import faiss, faiss_device
from gpukit.index.memory import DEFAULT_QUERY_BATCH

_IVF_FLAT = re.compile(r"^IVF(\d+),Flat$")


def resolve_bench_device(spec: IndexSpec, device: DeviceLike) -> torch.device:
    """The device the index will live on (faiss: only CUDA when faiss has GPU support)."""
    return resolve_device(device) if spec.is_exact else faiss_device(device)


def search_cost(spec: IndexSpec, index: SearchIndex, n_queries: int, params: Mapping[str, Any]) -> tuple[SearchCost | None, str | None]:
    """The FLOP/byte model of one full-query-set search, or None with the reason."""
    n, d = index.ntotal, index.dim
    if isinstance(index, ExactIndex):
        batch = index.query_batch_size or DEFAULT_QUERY_BATCH
        return exact_search_cost(n_queries, n, d, torch.empty(0, dtype=compute_dtype(index)).element_size(), batch), None
    if spec.factory == "Flat":
        return exact_search_cost(n_queries, n, d, 4, n_queries), None
    match = _IVF_FLAT.match(spec.factory)
    if match:
        # faiss's default nprobe is 1.
        return ivf_flat_search_cost(n_queries, n, d, int(match.group(1)), int(params.get("nprobe", 1))), None
    return None, f"no FLOP/byte model for faiss index {spec.factory!r} (models: exact, Flat, IVF<n>,Flat)"


def measure_efficiency(
    corpus: torch.Tensor | None,
    queries: torch.Tensor,
    index: str | IndexSpec = "exact",
    *,
    k: int = 10,
    metric: str = "ip",
    dtype: str = "fp32",
    device: DeviceLike = "auto",
    search_params: Mapping[str, Any] | None = None,
    qrels: Qrels | None = None,
    query_ids: Sequence[str] | None = None,
    doc_ids: Sequence[str] | None = None,
    batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
    repeats: int = 3,
    warmup: int = 2,
    latency_budget_s: float = 2.0,
    latency_min_calls: int = 5,
    prices: Prices | None = None,
    encoder: Callable[[Sequence[str]], Any] | None = None,
    corpus_texts: Sequence[str] | None = None,
    train_size: int | None = None,
    roofline: bool | DeviceRoofline = True,
    sweep_specs: Sequence[str | IndexSpec] | None = None,
    sweep_grids: Mapping[str, Sequence[Any]] | None = None,
    pareto_json: str | None = None,
    pareto_png: str | None = None,
    data_description: str = "arrays",
) -> EfficiencyReport:
    """Measure one index at one quality point on the five cost axes.

    Args:
        corpus, queries: ``(N, d)`` / ``(Q, d)`` float embeddings (any device;
            they are copied to the benchmark device before any timing).
            ``corpus`` may be None when ``encoder`` and ``corpus_texts`` are
            given: encoding is then timed as the build's ``encode`` line.
        index: ``"exact"`` or a faiss factory string, or an IndexSpec.
        k: results per query; recall@k is measured against exact search.
        search_params: ``{"nprobe": ..}`` / ``{"efSearch": ..}`` for faiss.
        qrels, query_ids, doc_ids: judgments and row ids for nDCG@10.
        batch_sizes: latency batch sizes (clipped to Q).
        repeats, warmup: timed and untimed full-query-set searches.
        latency_budget_s, latency_min_calls: per-batch-size time budget.
        prices: hardware (per hour) and power (per kWh) prices for cost lines.
        train_size: cap on the faiss training sample.
        roofline: True to probe the device, False to skip, or a probe result.
        sweep_specs: extra index specs swept with the main one (an empty
            list sweeps only the main index; None: no sweep).
        sweep_grids: override ``{"nprobe": [...], "efSearch": [...], "dtype": [...]}``.
        pareto_json, pareto_png: where to write the sweep and its plot.
        data_description: what the data is, for the report's ``setup``.
    """
    spec = index if isinstance(index, IndexSpec) else IndexSpec(index, metric, dtype)
    params = check_search_params(spec, search_params)
    dev = resolve_bench_device(spec, device)
    if k < 1:
        raise GpukitError(f"k must be >= 1; got {k}")

    encode_stage = None
    if corpus is None:
        if encoder is None or corpus_texts is None:
            raise GpukitError("give corpus embeddings, or an encoder with corpus_texts")
        corpus, encode_stage = time_encoding(encoder, corpus_texts, dev)
    # The benchmark device was chosen by the caller: this copy is explicit.
    corpus = torch.as_tensor(corpus).float().to(dev)
    queries = torch.as_tensor(queries).float().to(dev)
    if corpus.ndim != 2 or queries.ndim != 2 or corpus.shape[1] != queries.shape[1]:
        raise GpukitError(f"corpus {tuple(corpus.shape)} and queries {tuple(queries.shape)} must be (N, d) and (Q, d)")
    n, q, d = corpus.shape[0], queries.shape[0], corpus.shape[1]
    if k > n:
        raise GpukitError(f"k={k} exceeds the corpus size {n}")

    # 1. build
    meter = EnergyMeter(dev)
    with PeakMemory(dev) as build_peak, meter.span() as build_energy:
        built = build_index(spec, corpus, dev, train_size)
    built.encode = encode_stage
    idx = built.index

    # 2. memory and disk
    memory = index_memory(idx)
    memory["disk_bytes"] = disk_bytes(idx)
    memory["disk_format"] = f"{type(idx).__name__}.save (torch.save of the index state)"

    # 3. ground truth
    exact = exact_ground_truth(corpus, queries, k, spec.metric)

    # 4. throughput and quality
    def search(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return idx.search(batch, k, **params)

    with PeakMemory(dev) as search_peak:
        time_call(lambda: search(queries), dev)
    measured = measure_throughput(search, queries, dev, repeats=repeats, warmup=max(0, warmup - 1))
    scores, indices = measured.output
    point = quality_point(scores, indices, exact, k, spec.metric, params, qrels, query_ids, doc_ids)
    memory["peak_allocation"] = {"build": build_peak.to_dict(), "search": search_peak.to_dict()}

    # 5. latency
    stats = measure_latency(
        search, queries, dev, batch_sizes, warmup=warmup, min_calls=latency_min_calls, time_budget_s=latency_budget_s
    )

    # 6. roofline
    throughput_info: dict[str, Any] = {"timer": timer_description(dev), "warmup_calls": warmup}
    throughput_info.update(_roofline_entries(spec, idx, q, params, measured.median_seconds, roofline))

    # 7. infrastructure
    energy = _energy(meter, build_energy.result, search, queries, dev)
    infrastructure = {
        "device": describe_device(dev),
        "energy": energy,
        "cost": cost_lines(
            prices or Prices(), measured.qps, built.index_seconds, energy["per_query_joules"], energy["per_build_joules"], meter.reason
        ),
    }

    # 8. sweep
    if sweep_specs is not None:
        specs = [spec]
        for extra in sweep_specs:
            extra = extra if isinstance(extra, IndexSpec) else IndexSpec(extra, spec.metric)
            # One curve per index kind: an exact entry next to an exact main index adds nothing.
            if extra.factory not in {s.factory for s in specs}:
                specs.append(extra)
        result = run_sweep(specs, corpus, queries, exact, k, dev, sweep_grids, repeats=repeats, warmup=1, built={spec: idx})
        if pareto_json:
            result.save_json(pareto_json)
        if pareto_png:
            plot_pareto(result, pareto_png)
        throughput_info["pareto"] = {**result.to_dict(), "json": pareto_json, "png": pareto_png}

    setup = _setup(spec, k, n, q, d, dev, data_description)
    build_info = {"timer": timer_description(dev)}
    latency_info = {"timer": timer_description(dev), "warmup_calls_per_batch_size": warmup, "budget_seconds_per_batch_size": latency_budget_s}
    return EfficiencyReport(
        setup=setup,
        quality=point,
        latency=stats,
        latency_info=latency_info,
        throughput=measured,
        throughput_info=throughput_info,
        build=built,
        build_info=build_info,
        memory=memory,
        infrastructure=infrastructure,
    )


def _roofline_entries(
    spec: IndexSpec,
    index: SearchIndex,
    n_queries: int,
    params: Mapping[str, Any],
    seconds: float,
    roofline: bool | DeviceRoofline,
) -> dict[str, Any]:
    """``roofline_probe``, ``roofline`` and ``roofline_reason`` of the throughput axis."""
    cost, reason = search_cost(spec, index, n_queries, params)
    if isinstance(roofline, DeviceRoofline):
        probe: DeviceRoofline | None = roofline
    else:
        probe = probe_roofline(index.device, compute_dtype(index)) if roofline else None
    if probe is None:
        reason = reason or "roofline probe skipped"
    fraction = roofline_fraction(cost, seconds, probe) if cost is not None and probe is not None else None
    return {
        "roofline_probe": None if probe is None else probe.to_dict(),
        "roofline": fraction,
        "roofline_reason": None if fraction is not None else reason,
    }


def _energy(
    meter: EnergyMeter,
    build: EnergySpan | None,
    search: Callable[[torch.Tensor], Any],
    queries: torch.Tensor,
    device: torch.device,
) -> dict[str, Any]:
    """Energy per build (measured around it) and per query (>= MIN_ENERGY_SPAN_S of searches)."""
    energy: dict[str, Any] = {
        "source": "NVML nvmlDeviceGetTotalEnergyConsumption (whole board)",
        "per_query_joules": None,
        "per_build_joules": build.joules if build else None,
        "build_span_seconds": build.seconds if build else None,
        "query_span_seconds": None,
        "reason": meter.reason,
    }
    if not meter.available:
        return energy
    searched = 0
    with meter.span() as span:
        # The counter is coarse: keep searching until the span is long enough.
        while searched == 0 or span.elapsed() < MIN_ENERGY_SPAN_S:
            search(queries)
            synchronize(device)
            searched += queries.shape[0]
    if span.result is not None and span.result.joules is not None:
        energy["per_query_joules"] = span.result.joules / searched
        energy["query_span_seconds"] = span.result.seconds
    return energy


def _setup(spec: IndexSpec, k: int, n: int, q: int, d: int, device: torch.device, data: str) -> dict[str, Any]:
    """What was measured, where and when (metadata, not a cost)."""
    return {
        "index": spec.label,
        "factory": spec.factory,
        "metric": spec.metric,
        "dtype": spec.dtype,
        "k": k,
        "corpus_vectors": n,
        "queries": q,
        "dim": d,
        "device": str(device),
        "data": data,
        "versions": {
            "gpukit": gpukit.__version__,
            "torch": torch.__version__,
            "faiss": getattr(faiss, "__version__", None) if faiss is not None else None,
        },
        "measured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
