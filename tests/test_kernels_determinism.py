"""Float sums are added in one fixed order on every device.

CUDA's cumsum is a parallel scan whose rounding differs from the CPU's
sequential running sum; gpukit's CUDA path adds columns one at a time. That
path runs on any device, so its bitwise agreement with the CPU path is
checked here without a GPU.
"""
from __future__ import annotations

import torch

from gpukit.metrics.cutoffs import column_by_column_prefix_at, ordered_prefix_at


def test_column_path_equals_sequential_cpu_path_bitwise():
    g = torch.Generator().manual_seed(7)
    values = torch.rand((257, 300), generator=g, dtype=torch.float64) * 10
    cutoffs = [1, 5, 10, 299, 300, 1000, None]
    a = ordered_prefix_at(values, cutoffs)
    b = column_by_column_prefix_at(values, cutoffs)
    assert torch.equal(a, b)


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
