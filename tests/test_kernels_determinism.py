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


def _dense_ap_sums(rel: torch.Tensor, cutoffs) -> torch.Tensor:
    """AP's numerator as the device path computes it: every column, added one at a time."""
    hits = rel.cumsum(1).to(torch.float64)
    ranks = torch.arange(1, rel.shape[1] + 1, dtype=torch.float64)
    return column_by_column_prefix_at((hits / ranks).masked_fill(~rel, 0.0), cutoffs)


def test_sparse_cpu_ap_equals_dense_device_path_bitwise():
    """The CPU path adds only the relevant ranks; the exact zeros it skips cannot change a sum."""
    from gpukit.metrics.binary import _sparse_precision_sums

    g = torch.Generator().manual_seed(11)
    for density in (0.0, 0.02, 0.3, 1.0):
        rel = torch.rand((301, 257), generator=g) < density
        rel[5] = False
        cutoffs = [1, 10, 100, 256, 257, 1000, None]
        assert torch.equal(_sparse_precision_sums(rel, cutoffs), _dense_ap_sums(rel, cutoffs))


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


def test_cpu_row_counts_equal_torch_sums():
    from gpukit.metrics.binary import row_counts

    g = torch.Generator().manual_seed(13)
    mask = torch.rand((64, 100), generator=g) < 0.3
    for view in (mask, mask[:, :10], mask[:, 37:38]):
        assert torch.equal(row_counts(view), view.sum(1))
