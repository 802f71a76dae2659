"""Float sums are added in one fixed order on every device.

CUDA's row cumsum is a parallel scan whose rounding differs from the CPU's
sequential running sum; gpukit's device path scans the (K, Q) transpose over
its outer dimension, which CUDA walks sequentially per column. That path
runs on any device, so its bitwise agreement with a left-to-right sum is
checked here without a GPU, and on CUDA where one is present.
"""
from __future__ import annotations

import pytest
import torch

from gpukit.metrics.cutoffs import ordered_prefix_at, outer_scan_prefix_at


def column_by_column_prefix_at(values: torch.Tensor, cutoffs) -> torch.Tensor:
    """Reference: each column added to a running total, one at a time."""
    q, width = values.shape
    last = [width if k is None else min(int(k), width) for k in cutoffs]
    out = values.new_empty((q, len(cutoffs)))
    total = torch.zeros_like(values[:, 0])
    for col in range(max(last)):
        total = total + values[:, col]
        for c, stop in enumerate(last):
            if stop == col + 1:
                out[:, c] = total
    return out


def test_device_path_equals_sequential_cpu_path_bitwise():
    g = torch.Generator().manual_seed(7)
    values = torch.rand((257, 300), generator=g, dtype=torch.float64) * 10
    for cutoffs in ([1, 5, 10, 299, 300, 1000, None], [3], [7, 2]):
        a = ordered_prefix_at(values, cutoffs)
        assert torch.equal(a, column_by_column_prefix_at(values, cutoffs))
        assert torch.equal(outer_scan_prefix_at(values, cutoffs), a)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_outer_dimension_scan_adds_in_rank_order():
    """Pins the property the device path relies on: CUDA's outer-dimension
    scan gives the CPU's left-to-right sums bit for bit."""
    g = torch.Generator().manual_seed(9)
    for q, k in ((1, 1000), (10_000, 100), (3, 100_000)):
        values = torch.rand((q, k), generator=g, dtype=torch.float64) * 10
        cutoffs = [1, 10, k // 2, None]
        assert torch.equal(ordered_prefix_at(values.cuda(), cutoffs).cpu(), ordered_prefix_at(values, cutoffs))


def test_cpu_path_is_a_left_to_right_running_sum():
    g = torch.Generator().manual_seed(3)
    values = torch.rand((20, 150), generator=g, dtype=torch.float64)
    got = ordered_prefix_at(values, [None])[:, 0].tolist()
    for row, total in zip(values.tolist(), got):
        acc = 0.0
        for v in row:
            acc += v
        assert acc == total


def test_empty_ranking_gives_zeros():
    assert torch.equal(ordered_prefix_at(torch.zeros((3, 0), dtype=torch.float64), [5, None]), torch.zeros((3, 2), dtype=torch.float64))


def _dense_ap_sums(rel: torch.Tensor, cutoffs) -> torch.Tensor:
    """AP's numerator as the device path computes it: every column, added one at a time."""
    hits = rel.cumsum(1).to(torch.float64)
    ranks = torch.arange(1, rel.shape[1] + 1, dtype=torch.float64)
    return column_by_column_prefix_at((hits / ranks).masked_fill(~rel, 0.0), cutoffs)


def test_ap_kernel_equals_a_left_to_right_sum_of_precisions():
    from gpukit.metrics import average_precision

    g = torch.Generator().manual_seed(12)
    rel = torch.rand((40, 60), generator=g) < 0.2
    num_rel = rel.sum(1) + torch.randint(0, 3, (40,), generator=g)
    got = average_precision(rel, num_rel, [None, 10])
    for i, row in enumerate(rel.tolist()):
        for c, k in enumerate([None, 10]):
            acc, hits = 0.0, 0
            for rank, r in enumerate(row[: k or len(row)], start=1):
                if r:
                    hits += 1
                    acc += hits / rank
            r_count = int(num_rel[i])
            assert got[i, c].item() == (acc / r_count if r_count else 0.0)
