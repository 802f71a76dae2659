"""Report totals summed over the whole (measures, topics) host table
(report._row_totals) equal the per-measure sums they replace, bit for bit:
random values, masks and aggregates, topic counts around the SIMD widths and
the batching bound, one and two torch threads."""
from __future__ import annotations

import pytest
import torch

from gpukit.report import BATCHED_TOTALS_MAX_TOPICS, MIN_GEO_MEAN, _row_totals


def _one_by_one(values: torch.Tensor, mask: torch.Tensor, aggregates: list[str]) -> tuple[list[float], list[int]]:
    """The former per-measure loop of MeasureResult.build_all."""
    totals, counts = [], []
    for row, keep, aggregate in zip(values, mask, aggregates):
        counts.append(int(keep.sum()))
        if aggregate == "gmean":
            row = row.clamp(min=MIN_GEO_MEAN).log()
        totals.append(float(row.masked_fill(~keep, 0.0).sum()))
    return totals, counts


TOPICS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 50, 63, 64, 65, 100, 127, 128, 129, 250, 1000, 4097,
          BATCHED_TOTALS_MAX_TOPICS, BATCHED_TOTALS_MAX_TOPICS + 1]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("topics", TOPICS)
def test_batched_totals_equal_row_by_row(topics, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(topics * 7 + threads)
        for measures in (1, 2, 6, 13, 40):
            scale = torch.rand(measures, 1, generator=gen, dtype=torch.float64) * 10.0 ** torch.randint(-6, 4, (measures, 1), generator=gen)
            values = torch.rand(measures, topics, generator=gen, dtype=torch.float64) * scale
            values[torch.rand(measures, topics, generator=gen) < 0.1] = 0.0
            mask = torch.rand(measures, topics, generator=gen) < 0.85
            aggregates = [["mean", "sum", "gmean"][int(i)] for i in torch.randint(0, 3, (measures,), generator=gen)]
            assert _row_totals(values, mask, aggregates) == _one_by_one(values, mask, aggregates)
    finally:
        torch.set_num_threads(before)
