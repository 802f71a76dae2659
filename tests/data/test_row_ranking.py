"""Rows of a run put in trec_eval's ranking order (score descending, ties by
doc key descending, padding last), checked against a plain Python sort.

Covers :func:`gpukit.data.row_ranking.rank_rows_inplace` on rows already in
order (left as they are), rows whose scores only tie, rows with an
inversion, and slices mixing them.
"""
from __future__ import annotations

import random
import warnings

import pytest
import torch

import gpukit
import gpukit.data.row_ranking as row_ranking
from gpukit.data.row_ranking import rank_rows_inplace


def reference_row(codes: list[int], scores: list[float]) -> tuple[list[int], list[float]]:
    """trec_eval's order from the definition: by score descending, then key descending; padding (-1) last."""
    docs = sorted(((s, c) for c, s in zip(codes, scores) if c >= 0), key=lambda sc: (-sc[0], -sc[1]))
    pads = [(s, c) for c, s in zip(codes, scores) if c < 0]
    return [c for _, c in docs] + [c for _, c in pads], [s for s, _ in docs] + [s for s, _ in pads]


def random_rows(rng: random.Random, n_rows: int, width: int) -> tuple[list[list[int]], list[list[float]]]:
    codes, scores = [], []
    for _ in range(n_rows):
        n = rng.randint(0, width)
        keys = rng.sample(range(3 * width), n)
        kind = rng.choice(["sorted", "ties", "shuffled"])
        values = [rng.choice([0.0, -0.0, 0.5, 1.0, 2.0, float("-inf"), float("inf")]) if kind != "sorted" else rng.random() for _ in range(n)]
        if kind != "shuffled":
            values.sort(reverse=True)
        codes.append(keys + [-1] * (width - n))
        scores.append(values + [0.0] * (width - n))
    return codes, scores


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("slice_elements", [None, 7])
def test_rank_rows_matches_python_sort(seed, slice_elements, monkeypatch):
    if slice_elements is not None:
        monkeypatch.setattr(row_ranking, "ROW_SLICE_ELEMENTS", slice_elements)
    rng = random.Random(seed)
    codes, scores = random_rows(rng, 40, 9)
    c, s = torch.tensor(codes, dtype=torch.int64), torch.tensor(scores, dtype=torch.float64)
    rank_rows_inplace(c, s)
    for row in range(len(codes)):
        want_codes, want_scores = reference_row(codes[row], scores[row])
        assert c[row].tolist() == want_codes
        assert s[row].tolist() == want_scores


def test_only_tied_rows_keep_untied_entries_in_place():
    # One row with two tie groups and a pad scored like the last document.
    c = torch.tensor([[4, 9, 7, 2, 5, 3, -1]])
    s = torch.tensor([[3.0, 2.0, 2.0, 1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    rank_rows_inplace(c, s)
    assert c.tolist() == [[4, 9, 7, 2, 5, 3, -1]]
    c = torch.tensor([[4, 7, 9, 2, 3, 5, -1]])
    rank_rows_inplace(c, s)
    assert c.tolist() == [[4, 9, 7, 2, 5, 3, -1]]


@pytest.mark.parametrize("reader", ["from_trec", "from_dict"])
def test_scores_beyond_float32_range_rank_as_float64_without_a_warning(tmp_path, reader):
    """Scores past float32's range are valid float64 values: ranked by them (1e301
    before 1e300, which float32 would tie), and the host ranking's float32 check,
    which casts them to infinity, warns nothing."""
    scores = {"b": 1e300, "a": 1e301, "c": -1e300, "d": 2.5, "e": 3.0e38}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if reader == "from_trec":
            path = tmp_path / "run.txt"
            path.write_text("".join(f"q Q0 {d} {i} {s!r} tag\n" for i, (d, s) in enumerate(scores.items(), 1)))
            run = gpukit.Run.from_trec(path)
        else:
            run = gpukit.Run.from_dict({"q": scores})
        ranked = run.to_dict()["q"]
    expected, _ = reference_row(list(range(len(scores))), list(scores.values()))
    assert list(ranked) == [list(scores)[i] for i in expected] == ["a", "b", "e", "d", "c"]
    assert list(ranked.values()) == sorted(scores.values(), reverse=True)
