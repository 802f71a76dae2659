"""Efficiency measurement on tiny synthetic data: five separate axes, ordered
latency percentiles, memory figures checked independently, the Pareto front
against a plain dominance check, and the plot."""
from __future__ import annotations

import json
import math
import os
import random

import numpy as np
import pytest
import torch

from gpukit.efficiency import (
    AXES,
    IndexSpec,
    PeakMemory,
    Prices,
    default_grid,
    dominates,
    exact_search_cost,
    measure_efficiency,
    pareto_front,
    probe_roofline,
    roofline_fraction,
    synthetic_dataset,
)
from gpukit.efficiency.latency import clip_batch_sizes
from gpukit.efficiency.roofline import DeviceRoofline, ivf_flat_search_cost
from gpukit.efficiency.timing import percentiles
from gpukit.errors import GpukitError
from gpukit.index import IndexUsageError

FAST = dict(repeats=2, warmup=1, latency_budget_s=0.02, latency_min_calls=3)


@pytest.fixture(scope="module")
def data():
    return synthetic_dataset(1500, 40, 16, seed=3)


@pytest.fixture(scope="module")
def roofline():
    # A small probe keeps the test fast; the runner takes it as given.
    return probe_roofline(torch.device("cpu"), matmul_n=128, copy_bytes=2**20, repeats=2)


def measure(data, roofline, index, **kwargs):
    return measure_efficiency(
        data.corpus, data.queries, index, device="cpu", qrels=data.qrels, query_ids=data.query_ids,
        doc_ids=data.doc_ids, roofline=roofline, **FAST, **kwargs,
    )


@pytest.fixture(scope="module")
def exact_report(data, roofline):
    return measure(data, roofline, "exact", prices=Prices(hardware_per_hour=3.0, power_per_kwh=0.25))


@pytest.fixture(scope="module")
def ivf_report(data, roofline, tmp_path_factory):
    # Only the faiss tests skip without faiss; the exact and CUDA ones still run.
    pytest.importorskip("faiss", exc_type=ImportError)
    folder = tmp_path_factory.mktemp("pareto")
    return measure(
        data, roofline, "IVF16,Flat", search_params={"nprobe": 2}, sweep_specs=["exact"],
        sweep_grids={"nprobe": [1, 16], "dtype": ["bf16"]},
        pareto_json=str(folder / "front.json"), pareto_png=str(folder / "front.png"),
    )


@pytest.mark.parametrize("which", ["exact_report", "ivf_report"])
def test_json_has_exactly_the_five_axes_plus_metadata(which, request):
    d = json.loads(request.getfixturevalue(which).to_json())
    assert set(AXES) == {"latency", "throughput", "build", "memory", "infrastructure"}
    assert set(d) == set(AXES) | {"setup", "quality"}
    k = d["quality"]["k"]
    for axis in AXES:
        # Each axis states the quality point it was measured at.
        assert d[axis]["quality_point"][f"recall@{k}"] == d["quality"][f"recall@{k}"]


@pytest.mark.parametrize("which", ["exact_report", "ivf_report"])
def test_latency_percentiles_are_ordered_and_batches_clipped(which, request):
    d = json.loads(request.getfixturevalue(which).to_json())
    batches = d["latency"]["batches"]
    assert [b["batch_size"] for b in batches] == [1, 32, 40]  # 256 and 4096 clipped to Q = 40
    for b in batches:
        assert 0 <= b["p50_ms"] <= b["p95_ms"] <= b["p99_ms"]
        assert b["samples"] >= 3
        assert b["per_query_p50_ms"] == pytest.approx(b["p50_ms"] / b["batch_size"])


@pytest.mark.parametrize("which", ["exact_report", "ivf_report"])
def test_memory_bytes_per_vector_and_disk_size(which, request, tmp_path):
    report = request.getfixturevalue(which)
    index = report.build.index
    memory = report.to_dict()["memory"]
    assert memory["bytes_per_vector"] == index.memory_bytes() / index.ntotal
    assert memory["host_bytes"] == index.memory_bytes() and memory["device_bytes"] == 0
    path = tmp_path / "again.idx"
    index.save(path)
    assert memory["disk_bytes"] == os.path.getsize(path)
    for step in ("build", "search"):
        peak = memory["peak_allocation"][step]
        assert peak["bytes"] >= 0 and peak["method"]


def test_exact_quality_point_and_axes(exact_report):
    d = json.loads(exact_report.to_json())
    assert d["quality"]["recall@10"] == 1.0  # exact fp32 against itself
    assert 0.0 < d["quality"]["nDCG@10"] <= 1.0
    assert d["build"]["stages"][0]["stage"] == "add"
    assert d["memory"]["index_bytes"] == 1500 * 16 * 4  # fp32 vectors, no ids, ip metric
    t = d["throughput"]
    assert t["qps"] == pytest.approx(40 / t["median_seconds"])
    assert t["roofline"]["flops"] == 2 * 40 * 1500 * 16
    assert t["roofline"]["fraction"] > 0
    infra = d["infrastructure"]
    assert infra["device"]["type"] == "cpu"
    assert infra["energy"]["per_query_joules"] is None and "NVML" in infra["energy"]["reason"]
    cost = infra["cost"]
    assert cost["hardware_per_million_queries"]["value"] == pytest.approx(3.0 * (1e6 / t["qps"]) / 3600)
    assert cost["hardware_per_build"]["value"] == pytest.approx(3.0 * d["build"]["index_seconds"] / 3600)
    assert cost["power_per_million_queries"]["value"] is None  # no energy on CPU
    assert "NVML" in cost["power_per_million_queries"]["reason"]
    assert "never added" in exact_report.to_table()


def test_ivf_build_stages_sweep_and_plot(ivf_report):
    d = json.loads(ivf_report.to_json())
    assert [s["stage"] for s in d["build"]["stages"]] == ["train", "add"]
    assert d["build"]["index_seconds"] == pytest.approx(sum(s["seconds"] for s in d["build"]["stages"]))
    assert d["throughput"]["roofline"]["cost_model"].startswith("IVF-Flat")
    pareto = d["throughput"]["pareto"]
    assert {p["index"] for p in pareto["points"]} == {"IVF16,Flat", "exact"}
    assert len(pareto["points"]) == 2 + 1
    with open(pareto["json"], encoding="utf-8") as handle:
        saved = json.load(handle)
    coords = [(p["recall"], p["qps"]) for p in saved["points"]]
    expected = {i for i, a in enumerate(coords) if not any(dominates(b, a) for b in coords)}
    assert {i for i, p in enumerate(saved["points"]) if p["on_front"]} == expected
    with open(pareto["png"], "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    recalls = {p["params"]["nprobe"]: p["recall"] for p in saved["points"] if p["index"] == "IVF16,Flat"}
    assert recalls[16] == 1.0  # every list probed: exact


@pytest.mark.parametrize("seed", range(20))
def test_pareto_front_matches_plain_dominance(seed):
    rng = random.Random(seed)
    # Coarse values force ties and duplicate points.
    points = [(rng.randint(0, 6) / 6, float(rng.randint(1, 8))) for _ in range(rng.randint(0, 30))]
    front = pareto_front(points)
    expected = [i for i, a in enumerate(points) if not any(dominates(b, a) for b in points)]
    assert sorted(front) == expected
    recalls = [points[i][0] for i in front]
    assert recalls == sorted(recalls)


def test_dominance_definition():
    assert dominates((0.9, 10.0), (0.8, 10.0))
    assert not dominates((0.9, 10.0), (0.9, 10.0))  # equal points do not dominate
    assert not dominates((0.9, 5.0), (0.8, 10.0))


def test_percentiles_and_batch_clipping():
    assert percentiles([5.0, 1.0, 3.0]) == sorted(percentiles([5.0, 1.0, 3.0]))
    assert percentiles([1.0, 2.0, 3.0, 4.0, 5.0], (50,)) == [3.0]
    assert clip_batch_sizes([1, 32, 256, 4096], 100) == [1, 32, 100]
    assert clip_batch_sizes([4096, 1], 5000) == [1, 4096]


def test_cost_models_and_roofline_fraction():
    cost = exact_search_cost(n_queries=2500, n_docs=1000, dim=8, bytes_per_element=2, query_batch=1024)
    assert cost.flops == 2 * 2500 * 1000 * 8
    assert cost.bytes == math.ceil(2500 / 1024) * 1000 * 8 * 2
    probe = DeviceRoofline("cpu", "float32", matmul_flops_per_s=1e9, memory_bytes_per_s=1e8, matmul_n=1, copy_bytes=1, repeats=1)
    out = roofline_fraction(cost, 0.5, probe)
    compute_s, memory_s = cost.flops / 1e9, cost.bytes / 1e8
    assert out["bound"] == ("compute" if compute_s >= memory_s else "memory")
    assert out["fraction"] == pytest.approx(max(compute_s, memory_s) / 0.5)
    ivf = ivf_flat_search_cost(n_queries=10, n_docs=1000, dim=4, nlist=10, nprobe=2)
    assert ivf.flops == 2 * 10 * 4 * (10 + 2 * 1000 / 10)
    assert ivf.bytes == 4 * 4 * (10 + min(1000, 10 * 2 * 1000 / 10))


def test_default_grids():
    assert default_grid(IndexSpec("IVF16,Flat")) == [{"nprobe": v} for v in (1, 2, 4, 8, 16)]
    assert default_grid(IndexSpec("HNSW32"))[0] == {"efSearch": 16}
    assert default_grid(IndexSpec("exact")) == [{"dtype": d} for d in ("fp32", "fp16", "bf16")]
    assert default_grid(IndexSpec("IVF16,Flat"), {"nprobe": [3]}) == [{"nprobe": 3}]
    assert default_grid(IndexSpec("PQ4")) == [{}]


def test_user_errors(data):
    with pytest.raises(IndexUsageError):
        IndexSpec("IVF16,Flat", dtype="fp16")
    with pytest.raises(IndexUsageError):
        measure_efficiency(data.corpus, data.queries, "exact", device="cpu", search_params={"nprobe": 2})
    with pytest.raises(GpukitError):
        measure_efficiency(data.corpus, data.queries, "exact", device="cpu", k=5000)
    with pytest.raises(ValueError):
        Prices(hardware_per_hour=-1.0)


def test_peak_memory_sees_a_large_cpu_allocation_when_garbage_is_freed_inside():
    """Garbage left by earlier code (a cycle holding 128 MiB) freed by a collection
    inside the step lowered the resident set below the baseline, hiding the
    step's own 64 MiB (this test failed in the full suite under load)."""
    import gc

    class Cycle:
        pass

    garbage = Cycle()
    garbage.me, garbage.block = garbage, np.ones(128 * 2**20 // 8)
    del garbage
    with PeakMemory(torch.device("cpu")) as peak:
        gc.collect()  # what an allocation-triggered collection does
        _touch_fresh_pages(64 * 2**20)
    assert peak.peak_bytes >= 48 * 2**20


def _touch_fresh_pages(nbytes: int) -> None:
    """A fresh anonymous mapping, touched: new resident pages whatever the
    process freed before (np.ones could be served from heap memory that an
    earlier test freed but malloc kept resident, leaving RSS unchanged)."""
    import mmap

    mapping = mmap.mmap(-1, nbytes)
    block = np.frombuffer(mapping, dtype=np.uint8)
    block[:] = 1
    del block
    mapping.close()


def test_peak_memory_sees_a_large_cpu_allocation():
    with PeakMemory(torch.device("cpu")) as peak:
        _touch_fresh_pages(64 * 2**20)  # 64 MiB
    assert peak.peak_bytes >= 48 * 2**20


def test_encoder_is_its_own_build_line(data, roofline):
    texts = [f"doc {i}" for i in range(200)]
    encoder = lambda batch: data.corpus[: len(batch)]  # noqa: E731 - a stand-in encoder
    report = measure_efficiency(
        None, data.queries, "exact", device="cpu", encoder=encoder, corpus_texts=texts, roofline=False, batch_sizes=[1], **FAST
    )
    d = report.to_dict()
    assert d["build"]["encode"]["stage"] == "encode"
    assert d["build"]["index_seconds"] == pytest.approx(d["build"]["stages"][0]["seconds"])  # encode not in the total
    assert d["throughput"]["roofline"] is None and d["throughput"]["roofline_reason"]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_exact_uses_events_and_cuda_peak(data):
    report = measure_efficiency(data.corpus, data.queries, "exact", dtype="fp16", device="cuda", **FAST)
    d = report.to_dict()
    assert "CUDA events" in d["latency"]["timer"]
    assert d["memory"]["device_bytes"] == report.build.index.memory_bytes()
    assert "max_memory_allocated" in d["memory"]["peak_allocation"]["search"]["method"]
    assert d["infrastructure"]["device"]["type"] == "cuda"
    assert d["throughput"]["roofline_probe"]["dtype"] == "float16"
    for b in d["latency"]["batches"]:
        assert b["p50_ms"] <= b["p95_ms"] <= b["p99_ms"]
