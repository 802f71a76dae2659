"""The host (NumPy) path of run.unranked_rows gives what its torch path
gives: random rows with padding (also before a document), ties,
inversions, NaN scores, float64 and float32, contiguous and strided."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gpukit.data.run import _unranked_rows_torch, unranked_rows


def _rows(rng: np.random.Generator, n: int, k: int, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    scores = np.sort(rng.integers(0, 6, size=(n, k)).astype(np.float64), axis=1)[:, ::-1].copy()
    flip = rng.random(n) < 0.3  # some rows with an inversion
    scores[flip] = rng.permutation(scores[flip].T).T
    if rng.random() < 0.3:
        scores[rng.random((n, k)) < 0.05] = np.nan
    codes = rng.integers(0, 50, size=(n, k))
    lengths = rng.integers(0, k + 1, size=n)
    codes[np.arange(k)[None, :] >= lengths[:, None]] = -1
    holes = rng.random((n, k)) < 0.05  # padding before a document
    codes[holes] = -1
    return torch.from_numpy(codes), torch.from_numpy(scores).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_host_unranked_rows_equal_torch(dtype):
    rng = np.random.default_rng(5)
    for _ in range(300):
        codes, scores = _rows(rng, int(rng.integers(1, 40)), int(rng.integers(2, 30)), dtype)
        got = unranked_rows(codes, scores)
        assert got.dtype == torch.int64 and torch.equal(got, _unranked_rows_torch(codes, scores))
        # Strided views (a slice of rows and columns), as the ranking passes them.
        assert torch.equal(unranked_rows(codes[::2, 1:], scores[::2, 1:]), _unranked_rows_torch(codes[::2, 1:], scores[::2, 1:]))
