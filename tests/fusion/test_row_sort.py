"""gpukit.fusion.row_sort against torch.sort(dim=1, descending=True, stable=True).

The radix path packs (row, key code) into one integer; each case below is
built to take one of its branches: codes that fit int32, codes that fit
int64 only, keys spanning too many bits until their shared trailing zero
bits are shifted out (short packed ids), keys that fit no way (the
comparison sort), several chunks, rows of padding only.
"""
from __future__ import annotations

import pytest
import torch

from gpukit.fusion.row_sort import descending_keys, ranking_order


def _with_padding(keys: torch.Tensor, gen: torch.Generator, share: float = 0.3) -> torch.Tensor:
    return keys.masked_fill(torch.rand(keys.shape, generator=gen) < share, -1)


def _keys(case: str, rows: int, width: int, gen: torch.Generator) -> torch.Tensor:
    if case == "int32":  # a vocabulary's positions
        return torch.randint(0, 50, (rows, width), generator=gen)
    if case == "int64":
        return torch.randint(0, 1 << 40, (rows, width), generator=gen)
    if case == "shift":  # ids of at most 7 bytes: the eighth is 0 in every packed key
        first = torch.randint(0x21, 0x7F, (rows, width), generator=gen) << 56
        return first | (torch.randint(0, 1 << 20, (rows, width), generator=gen) << 8)
    if case == "wide":  # 8-byte ids: no shared zero bits, span near 2^63
        return torch.randint(1 << 50, (1 << 63) - 1, (rows, width), generator=gen) | 1
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["int32", "int64", "shift", "wide"])
@pytest.mark.parametrize("chunk", [None, 1, 37, 200])
@pytest.mark.parametrize("seed", range(3))
def test_descending_keys_is_a_stable_descending_sort(case, chunk, seed):
    gen = torch.Generator().manual_seed(seed)
    rows, width = int(torch.randint(2, 30, (), generator=gen)), int(torch.randint(1, 50, (), generator=gen))
    keys = _keys(case, rows, width, gen)
    keys = keys.gather(1, torch.randint(0, width, (rows, width), generator=gen))  # repeated keys: ties
    keys = _with_padding(keys, gen)
    keys[0] = -1  # a row of padding only
    want = torch.sort(keys, dim=1, descending=True, stable=True)
    got = descending_keys(keys, chunk=chunk)
    assert torch.equal(got[0], want.values)
    assert torch.equal(got[1], want.indices)


def test_descending_keys_of_padding_only_and_empty():
    keys = torch.full((3, 4), -1, dtype=torch.int64)
    got = descending_keys(keys)
    want = torch.sort(keys, dim=1, descending=True, stable=True)
    assert torch.equal(got[0], want.values) and torch.equal(got[1], want.indices)
    empty = torch.zeros((0, 5), dtype=torch.int64)
    assert descending_keys(empty)[0].shape == (0, 5)


@pytest.mark.parametrize("rows,width,chunk", [(40, 30, None), (40, 30, 30 * 3), (700, 4, 4 * 300), (70, 4, 4 * 40000), (5, 1, None)])
@pytest.mark.parametrize("seed", range(3))
def test_ranking_order_is_a_stable_descending_sort(rows, width, chunk, seed):
    # chunk of 3 and 300 rows: row sorts in uint8 and int16; 40000 rows: int64.
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randint(-3, 4, (rows, width), generator=gen).to(torch.float64)  # ties
    scores = torch.where(torch.rand(rows, width, generator=gen) < 0.5, scores, scores * torch.rand(rows, width, generator=gen, dtype=torch.float64) * 1e300)
    scores[torch.rand(rows, width, generator=gen) < 0.1] = -0.0
    present = torch.rand(rows, width, generator=gen) < 0.8
    want = torch.sort(scores.masked_fill(~present, -torch.inf), dim=1, descending=True, stable=True).indices
    assert torch.equal(ranking_order(scores, present, chunk=chunk), want)


def test_key_sort_reads_nothing_back_off_the_cpu():
    """Off the CPU the key sort is torch.sort itself and reads nothing back
    (the radix path's key range is a host read: two more CUDA syncs per fused
    slice beside the slice's one read of its candidate count). On the meta
    device any host read raises, so this fails if one remains."""
    keys = torch.tensor([[5, -1, 3, 3], [-1, -1, -1, -1], [0, 9, 2, 7]], dtype=torch.int64)
    out, perm = descending_keys(keys.to("meta"))
    assert out.device.type == "meta" and out.shape == keys.shape and perm.shape == keys.shape
