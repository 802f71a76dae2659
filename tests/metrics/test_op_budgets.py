"""Op, sync and copy budgets of the device (CUDA) paths, proved on CPU.

The kernels run on the meta device (the non-CPU branch of every kernel;
no data, so a host sync would raise) under a dispatch mode that counts ops
and host/device copies. Budgets from the GPU-readiness issue: evaluate's
kernels at Q = 10k, K = 1000 with six measures <= 200 ops and no sync;
``RetrievalEvaluator.update`` on 1,024 x 100,000 candidates with uncut AP and
nDCG <= 300 ops, 0 syncs, 0 host-to-device copies; results read back in one
device-to-host transfer.
"""
from __future__ import annotations

import torch
from op_budget import DeviceOpCounter, meta_ranking

import gpukit
from gpukit.evaluation import compute_measures
from gpukit.measures import parse_measures
from gpukit.report import MeasureResult

SIX = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]


def test_evaluate_kernels_fit_the_op_budget_without_syncs():
    ranking = meta_ranking(10_000, 1000, 300)
    measures = parse_measures(SIX)
    compute_measures(ranking, measures)  # the first call per device copies the discount table there
    with DeviceOpCounter() as count:
        compute_measures(ranking, measures)
    assert count.syncs == 0 and count.host_to_device == 0, count.ops
    assert count.total <= 200, (count.total, count.ops.most_common(10))


def test_op_count_does_not_grow_with_the_ranking_depth():
    """The old device path launched one kernel per rank; now the count is O(1) in K."""
    measures = parse_measures(SIX + ["nDCG", "Bpref", "DCG@500"])
    counts = []
    compute_measures(meta_ranking(64, 100_000, 50), measures)  # discount table, once per device
    for k in (10, 1000, 100_000):
        with DeviceOpCounter() as count:
            compute_measures(meta_ranking(64, k, 50), measures)
        counts.append(count.total)
    assert counts[0] == counts[1] == counts[2], counts


def test_streaming_update_fits_the_budget():
    measures = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "nDCG"]
    evaluator = gpukit.RetrievalEvaluator(measures, device="meta")
    scores = torch.empty((1024, 100_000), device="meta")
    targets = torch.empty((1024, 100_000), dtype=torch.int64, device="meta")
    evaluator.update(scores, targets)  # first call builds the per-device discount table
    with DeviceOpCounter() as count:
        evaluator.update(scores, targets)
    assert count.syncs == 0 and count.host_to_device == 0 and count.device_to_host == 0, count.ops
    assert count.total <= 300, (count.total, count.ops.most_common(10))


def test_results_come_back_in_one_transfer(monkeypatch):
    """Means and counts of every measure are read back with one .cpu() call."""
    calls = []
    original = torch.Tensor.cpu

    def counting_cpu(self, *args, **kwargs):
        calls.append(tuple(self.shape))
        return original(self, *args, **kwargs)

    values = [torch.rand(50, dtype=torch.float64) for _ in range(6)]
    masks = [torch.rand(50) > 0.2 for _ in range(6)]
    measures = parse_measures(SIX)
    monkeypatch.setattr(torch.Tensor, "cpu", counting_cpu)
    results = MeasureResult.build_all(measures, values, masks, [{}] * 6, ["mean"] * 6)
    assert len(calls) == 1
    for r, v, keep in zip(results, values, masks):
        assert r.evaluated == int(keep.sum())
        assert abs(r.mean - sum(x for x, k in zip(v.tolist(), keep.tolist()) if k) / r.evaluated) < 1e-12
