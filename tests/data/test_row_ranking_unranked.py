"""row_ranking.unranked_rows gives what a plain-Python reading of the
definition gives: random rows with padding (also before a document), ties,
inversions, NaN scores, float64 and float32, contiguous and strided."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gpukit.data.row_ranking import unranked_rows


def _reference(codes: torch.Tensor, scores: torch.Tensor) -> list[int]:
    """Rows where a document follows padding, or does not score strictly below its predecessor."""
    out = []
    for row, (c, s) in enumerate(zip(codes.tolist(), scores.tolist())):
        if any(c[j + 1] >= 0 and (c[j] < 0 or not s[j + 1] < s[j]) for j in range(len(c) - 1)):
            out.append(row)
    return out


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
def test_unranked_rows_match_the_definition(dtype):
    rng = np.random.default_rng(5)
    for _ in range(300):
        codes, scores = _rows(rng, int(rng.integers(1, 40)), int(rng.integers(2, 30)), dtype)
        got = unranked_rows(codes, scores)
        assert got.dtype == torch.int64 and got.tolist() == _reference(codes, scores)
        # Strided views (a slice of rows and columns), as the ranking passes them.
        assert unranked_rows(codes[::2, 1:], scores[::2, 1:]).tolist() == _reference(codes[::2, 1:], scores[::2, 1:])
