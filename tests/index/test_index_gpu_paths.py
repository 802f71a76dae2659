"""Exact search's device paths, checked on CPU: low-precision ties, block
sizes under 2^31 elements, IEEE fp32 under a TF32 setting, L2's matmul dtype."""
from __future__ import annotations

import pytest
import torch
from op_budget import DeviceOpCounter

from gpukit.index import ExactIndex
from gpukit.index.exact import matmul_dtype
from gpukit.index.memory import MAX_BLOCK_ELEMENTS, plan_blocks
from gpukit.index.topk import block_topk


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


def _previous_block_topk(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """block_topk before it worked in the block's dtype: the reference path
    (upcast to fp32 by the caller, one int32 tie key over the whole row)."""
    rows, n = scores.shape
    k = min(k, n)
    values, positions = torch.topk(scores, k, dim=1, sorted=True)
    kth = values[:, -1:]
    n_above = (values > kth).sum(1, keepdim=True)
    columns = torch.arange(n, 0, -1, dtype=torch.int32)
    tied = n - torch.topk(torch.where(scores == kth, columns, 0), k, dim=1).values.to(torch.int64)
    slot = torch.arange(k)
    chosen = torch.where(slot < n_above, positions, tied.gather(1, (slot - n_above).clamp(min=0)))
    return scores.gather(1, chosen), chosen


def _rounded_scores(rows: int, n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Inner products of random unit vectors, rounded to ``dtype``: ties across
    the k-th place (fp16 keeps 3 more bits than bf16, so its scores are first
    put on a grid of 1/256 to tie as often)."""
    g = torch.Generator().manual_seed(seed)
    queries = torch.nn.functional.normalize(torch.randn(rows, 32, generator=g), dim=1)
    docs = torch.nn.functional.normalize(torch.randn(n, 32, generator=g), dim=1)
    scores = queries @ docs.T
    if dtype == torch.float16:
        scores = (scores * 256).round() / 256
    return scores.to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("n, k, group", [(2000, 10, None), (2000, 300, None), (5000, 7, 512), (5000, 60, 512),
                                         (4096, 5, 512), (40_000, 100, None), (40_000, 5000, None)])
def test_block_topk_in_the_stored_dtype_matches_the_references(dtype, n, k, group, monkeypatch):
    """Selected from bf16/fp16 scores as they are (several tie groups and a
    short last group when ``group`` is set): the plain-Python top-k and the
    previous upcast path give the same columns and values."""
    import gpukit.index.topk as topk_module

    if group is not None:
        monkeypatch.setattr(topk_module, "TIE_GROUP", group)
    scores = _rounded_scores(32 if n < 10_000 else 4, n, dtype, seed=n + k)
    values, cols = block_topk(scores, k)
    assert values.dtype == dtype
    want_scores, want_cols = _reference_topk(scores.float(), k)
    assert cols.sort(1).values.tolist() == want_cols
    assert [sorted(r, reverse=True) for r in values.float().tolist()] == want_scores
    old_values, old_cols = _previous_block_topk(scores.float(), k)
    assert torch.equal(cols.sort(1).values, old_cols.sort(1).values)
    tied_rows = sum(int((scores[r] == values[r].min()).sum()) > int((values[r] == values[r].min()).sum())
                    for r in range(scores.shape[0]))
    assert tied_rows >= 1  # ties cut by the k-th place do occur


def _cuda_matmul_dtype(monkeypatch) -> None:
    """The CUDA branch of the scan on any device: matmul in the storage dtype."""
    import gpukit.index.exact as exact_module

    monkeypatch.setattr(exact_module, "matmul_dtype", lambda device, storage, metric: storage if metric != "l2" else torch.float32)


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_scan_in_the_stored_dtype_gives_the_previous_results_bit_for_bit(metric, monkeypatch):
    """The CUDA scan (bf16 matmul on CPU here) selecting from the bf16 block
    returns exactly what the previous path (fp32 copy, then top-k) returned."""
    import gpukit.index.exact as exact_module

    _cuda_matmul_dtype(monkeypatch)
    g = torch.Generator().manual_seed(3)
    index = ExactIndex(24, metric=metric, device="cpu", dtype="bf16", chunk_size=700, query_batch_size=16)
    index.add(torch.randn(3000, 24, generator=g))
    queries = torch.randn(40, 24, generator=g)
    for k in (1, 10, 100):
        new_scores, new_positions = index._scan(queries, k)
        monkeypatch.setattr(exact_module, "block_topk", lambda block, k: _previous_block_topk(block.float(), k))
        old_scores, old_positions = index._scan(queries, k)
        monkeypatch.setattr(exact_module, "block_topk", block_topk)
        assert new_scores.dtype == torch.float32
        assert torch.equal(new_scores, old_scores) and torch.equal(new_positions, old_positions)


@pytest.mark.parametrize("k, budget", [(10, 14.0), (100, 14.0), (1000, 18.0)])
def test_scan_traffic_per_score_on_the_cuda_path(k, budget, monkeypatch):
    """Bytes read plus written per score by the scan's ops (one pass per op),
    bf16 storage on the CUDA branch (meta device): the block is selected from
    as the matmul wrote it (2 bytes), with a bool comparison and an int16 tie
    key. The previous path (fp32 copy, int32 key) measured 26.8 at k = 10,
    100 and 28.6 at k = 1000 here. No (B, n) fp32 tensor is made."""
    _cuda_matmul_dtype(monkeypatch)
    rows, n = 256, 200_000
    index = ExactIndex(64, metric="ip", device="meta", dtype="bf16", chunk_size=n, query_batch_size=rows)
    index.add(torch.empty(n, 64, device="meta"))
    wide_fp32 = []

    class Watch(DeviceOpCounter):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = super().__torch_dispatch__(func, types, args, kwargs)
            for t in (out if isinstance(out, (tuple, list)) else (out,)):
                if isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.numel() >= rows * n // 4:
                    wide_fp32.append(str(func))
            return out

    with Watch() as count:
        index._scan(torch.empty(rows, 64, device="meta"), k)
    per_score = (count.bytes_read + count.bytes_written) / (rows * n)
    assert per_score <= budget, (per_score, count.ops.most_common(8))
    assert not wide_fp32 and count.syncs == 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("n, k", [(5000, 10), (5000, 1000), (70_000, 100)])
def test_block_topk_on_cuda_matches_the_cpu_reference(dtype, n, k):
    """torch.topk on CUDA over bf16/fp16 blocks (one and several tie groups):
    the same columns as the plain-Python top-k of the same values."""
    scores = _rounded_scores(4, n, dtype, seed=7)
    values, cols = block_topk(scores.cuda(), k)
    want_scores, want_cols = _reference_topk(scores.float(), k)
    assert cols.sort(1).values.cpu().tolist() == want_cols
    assert [sorted(r, reverse=True) for r in values.float().cpu().tolist()] == want_scores


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
