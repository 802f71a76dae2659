"""Exact search's device paths, checked on CPU: low-precision ties, block
sizes under 2^31 elements, IEEE fp32 under a TF32 setting, L2's matmul dtype."""
from __future__ import annotations

import torch

from gpukit.index import ExactIndex
from gpukit.index.exact import matmul_dtype
from gpukit.index.memory import MAX_BLOCK_ELEMENTS, plan_blocks
from gpukit.index.topk import block_topk
from op_budget import DeviceOpCounter


def _reference_topk(scores: torch.Tensor, k: int) -> tuple[list, list]:
    """Per row: the k best (score desc, column asc), plain Python."""
    out_scores, out_cols = [], []
    for row in scores.tolist():
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))[:k]
        out_scores.append(sorted((row[j] for j in order), reverse=True))
        out_cols.append(sorted(order))
    return out_scores, out_cols


def test_block_topk_with_bf16_rounded_scores_needs_no_full_sort():
    """Scores rounded to the storage dtype tie across the k-th place in most
    rows; the tie fill keeps fixed shapes instead of sorting those rows."""
    g = torch.Generator().manual_seed(0)
    queries = torch.nn.functional.normalize(torch.randn(64, 32, generator=g), dim=1)
    docs = torch.nn.functional.normalize(torch.randn(2000, 32, generator=g), dim=1)
    scores = (queries @ docs.T).to(torch.bfloat16).float()
    for k in (10, 100):
        with DeviceOpCounter() as count:
            values, cols = block_topk(scores, k)
        # On the CPU one sync checks for a tie across the cut (here there is one:
        # the tie fill runs); the device path has none (test_exact_search_blocks_do_no_host_sync).
        assert count.ops["aten.sort"] == 0 and count.syncs == 1, count.ops
        want_scores, want_cols = _reference_topk(scores, k)
        assert cols.sort(1).values.tolist() == want_cols
        assert [sorted(r, reverse=True) for r in values.tolist()] == want_scores
        tied_rows = sum(1 for row, v in zip(scores.tolist(), values.tolist()) if sum(x >= min(v) for x in row) > k)
        assert tied_rows > 10  # the case the test is about does occur


def test_block_topk_on_cpu_skips_the_tie_fill_only_without_a_tie_across_the_cut():
    """Integer scores: ties inside the top k (kept either way), across the cut
    (the tie fill runs), or none; every case equals the reference."""
    g = torch.Generator().manual_seed(1)
    k = 5
    distinct = torch.randperm(200, generator=g)[:60].float().view(3, 20)
    inside = distinct.clone()
    inside[:, 1] = inside.sort(1, descending=True).values[:, 0]  # the best score twice: a tie within the top k
    across = distinct.clone()
    across[0, 7] = across[0].sort(descending=True).values[k - 1]  # row 0: the k-th score twice
    for scores, fill in ((distinct, False), (inside, False), (across, True)):
        with DeviceOpCounter() as count:
            values, cols = block_topk(scores, k)
        assert (count.ops["aten.where"] > 0) == fill, count.ops
        want_scores, want_cols = _reference_topk(scores, k)
        assert cols.sort(1).values.tolist() == want_cols
        assert [sorted(r, reverse=True) for r in values.tolist()] == want_scores


def test_blocks_stay_below_2_31_elements():
    plan = plan_blocks(n_queries=7000, n_docs=8_800_000, bytes_per_score=12, bytes_per_doc_row=0, budget=70 * 2**30)
    assert plan.query_batch * plan.corpus_chunk <= MAX_BLOCK_ELEMENTS
    assert plan.query_batch >= 1 and plan.corpus_chunk >= 1


def test_exact_fp32_search_ignores_a_tf32_setting(monkeypatch):
    seen = []
    original = torch.matmul

    def recording(*args, **kwargs):
        seen.append(torch.get_float32_matmul_precision())
        return original(*args, **kwargs)

    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        monkeypatch.setattr(torch, "matmul", recording)
        index = ExactIndex(8, metric="ip", device="cpu")
        index.add(torch.randn(50, 8))
        index.search(torch.randn(3, 8), 5)
        assert seen and set(seen) == {"highest"}
        assert torch.get_float32_matmul_precision() == "high"  # the user's setting is restored
    finally:
        torch.set_float32_matmul_precision(previous)


def test_l2_multiplies_in_fp32_on_every_device():
    cuda = torch.device("cuda")
    assert matmul_dtype(cuda, torch.bfloat16, "l2") == torch.float32
    assert matmul_dtype(cuda, torch.float16, "l2") == torch.float32
    assert matmul_dtype(cuda, torch.bfloat16, "ip") == torch.bfloat16
    assert matmul_dtype(torch.device("cpu"), torch.bfloat16, "ip") == torch.float32


def test_exact_search_blocks_do_no_host_sync():
    """On the meta device (the CUDA branch, no data): no sync, no host copy,
    and no sort wider than a merge of two top-k sets in any block."""
    index = ExactIndex(16, metric="ip", device="meta", dtype="bf16", max_memory=2**20)
    index.add(torch.empty(20_000, 16, device="meta"))
    queries = torch.empty(100, 16, device="meta")
    widths = []

    class SortWidths(DeviceOpCounter):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func.overloadpacket) == "aten.sort":
                widths.append(args[0].shape[-1])
            return super().__torch_dispatch__(func, types, args, kwargs)

    with SortWidths() as count:
        index._scan(queries, 10)
    assert count.syncs == 0 and count.host_to_device == 0 and count.device_to_host == 0
    assert widths and max(widths) <= 20


def test_check_finite_sums_first_and_still_names_the_bad_row():
    """The one-pass sum test passes finite data, also when the sum itself
    overflows to inf (then the element check decides), and a NaN or inf
    row is still named."""
    import pytest

    from gpukit.index.base import IndexUsageError, check_finite

    check_finite(torch.ones(4, 3), "v", IndexUsageError)
    check_finite(torch.full((4, 3), 3e38), "v", IndexUsageError)  # sum is inf, every value finite
    check_finite(torch.full((4, 3), 60000.0, dtype=torch.float16), "v", IndexUsageError)
    for bad in (float("nan"), float("inf"), float("-inf")):
        x = torch.zeros(5, 3)
        x[3, 1] = bad
        with pytest.raises(IndexUsageError, match="row 3"):
            check_finite(x, "v", IndexUsageError)
    big = torch.full((4, 3), 3e38)
    big[2, 0] = float("nan")
    with pytest.raises(IndexUsageError, match="row 2"):
        check_finite(big, "v", IndexUsageError)
