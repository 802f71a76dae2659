"""gpukit.fuse against ranx's fuse: every method and normalisation, per query, to 1e-9.

Random runs have tied scores, documents missing from some runs, different
depths per query and run, and queries that some runs do not answer (an
empty ranking for ranx). ranx is given each run in gpukit's ranking order
(see tests/fusion_ranx.py), so that rank-based methods see the same ranks.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import gpukit
from gpukit.fusion import METHODS, NORMS
from gpukit.io.doc_space import PackedIds

from fusion_ranx import assert_ranking_order, assert_same_values, gpukit_runs, random_run_dicts, ranx_runs

ranx = pytest.importorskip("ranx")

SCORE_METHODS = ["sum", "mnz", "anz", "max", "min", "med", "wsum", "wmnz", "mixed"]
#: ranx's zmuv drops the queries after an empty one in its parallel loop
#: (ranx 0.3.21), so it is compared on runs that answer every query.
FULL_RUNS_ONLY = {"zmuv"}
#: ranx's CombMAX / CombMIN give a run that does not rank a document the
#: score -1e9 / +1e9 (gpukit takes the max / min over the runs that rank it):
#: the two differ only past those bounds, which max-normalising a row of
#: negative scores (denominator floored at 1e-9) reaches; compared on
#: non-negative scores there.
NON_NEGATIVE_ONLY = {("max", "max"), ("min", "max")}
RANK_METHODS = ["rrf", "isr", "log_isr", "logn_isr", "rbc", "bordafuse", "w_bordafuse"]
NORMALISATIONS = [None, *NORMS]


def _params(method: str, n_runs: int, rng: np.random.Generator, depth: int):
    """Parameters for ``method`` (random where the method takes a table)."""
    weights = [float(x) for x in np.round(rng.random(n_runs), 2)] if METHODS[method].weighted else None
    params = {
        "gmnz": {"gamma": 0.3},
        "rrf": {"k": 10},
        "logn_isr": {"sigma": 0.05},
        "rbc": {"phi": 0.8},
        "mapfuse": {"map_scores": [float(x) for x in rng.random(n_runs)]},
        "posfuse": {"probs": [rng.random(int(rng.integers(3, depth + 5))) for _ in range(n_runs)]},
        "probfuse": {"probs": [rng.random(int(rng.integers(1, 8))) for _ in range(n_runs)]},
        "segfuse": {"probs": [rng.random(10) for _ in range(n_runs)]},
        "slidefuse": {"probs": [rng.random(int(rng.integers(3, depth + 5))) for _ in range(n_runs)], "w": 2},
        "bayesfuse": {"log_odds": [rng.normal(size=depth + 3) for _ in range(n_runs)]},
    }.get(method, {})
    return weights, params


def _compare(dicts, method: str, norm, seed: int) -> None:
    runs = gpukit_runs(dicts)
    ranx_in, _ = ranx_runs(runs)
    depth = max(r.depth for r in runs)
    weights, params = _params(method, len(runs), np.random.default_rng(seed), depth)
    fused = gpukit.fuse(runs, method=method, norm=norm, weights=weights, params=params)
    ranx_params = dict(params)
    if weights is not None:
        ranx_params["weights"] = weights
    ranx_method = {"sum": "sum"}.get(method, method)
    expected = ranx.fuse(ranx_in, norm=norm, method=ranx_method, params=ranx_params)
    assert_same_values(fused, expected.to_dict())
    assert_ranking_order(fused)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("norm", NORMALISATIONS)
@pytest.mark.parametrize("method", SCORE_METHODS + ["gmnz"])
def test_score_methods_match_ranx(method, norm, seed):
    dicts = random_run_dicts(seed, n_runs=3, every_query=norm in FULL_RUNS_ONLY)
    if (method, norm) in NON_NEGATIVE_ONLY:
        dicts = [{q: {d: abs(s) for d, s in docs.items()} for q, docs in run.items()} for run in dicts]
    _compare(dicts, method, norm, seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("norm", [None, "min-max", "min-max-inverted", "zmuv", "rank"])
@pytest.mark.parametrize("method", RANK_METHODS + ["mapfuse", "posfuse", "probfuse", "segfuse", "slidefuse", "bayesfuse"])
def test_rank_methods_match_ranx(method, norm, seed):
    # min-max-inverted re-ranks each run, and ranx's sort leaves ties in no
    # defined order: compared on tie-free runs.
    ties = norm != "min-max-inverted"
    _compare(random_run_dicts(seed + 10, n_runs=3, every_query=norm in FULL_RUNS_ONLY, ties=ties), method, norm, seed)


@pytest.mark.parametrize("method", ["sum", "rrf", "wsum", "med", "bordafuse"])
def test_more_runs_and_long_ids(method):
    # Five runs of ids longer than 8 bytes: each run has its own key space
    # (radix alphabet or vocabulary), translated into one for fusion.
    dicts = random_run_dicts(7, n_runs=5, n_queries=20, pool=60, long_ids=True)
    runs = gpukit_runs(dicts)
    assert len({type(r.doc_space) for r in runs}) >= 1
    _compare(dicts, method, "min-max", 7)


def test_mixed_key_spaces():
    # One run of short ids (packed keys), one with a long id among them (another space).
    a = {"q1": {"d1": 0.5, "d2": 0.4, "d3": 0.4}, "q2": {"d2": 1.0}}
    b = {"q1": {"d3": 2.0, "a-very-long-document-id": 1.0, "d1": 1.0}, "q2": {"d9": 3.0, "d2": 3.0}}
    runs = gpukit_runs([a, b])
    assert runs[0].doc_space != runs[1].doc_space
    for method in ("sum", "rrf", "mnz"):
        _compare([a, b], method, "min-max", 0)


@pytest.mark.parametrize("norm", [n for n in NORMALISATIONS if n not in (None, "borda")])
def test_normalisation_matches_ranx_norm(norm):
    # The normalised scores themselves: fusing a run with a run of one
    # unrelated document per query leaves each document's normalised score
    # under CombMAX; compared with ranx's norm functions directly.
    from ranx.normalization import norm_switch

    dicts = random_run_dicts(3, n_runs=1, n_queries=15, every_query=True)
    run = gpukit_runs(dicts)[0]
    ranx_in, queries = ranx_runs([run])
    expected = norm_switch(norm)(ranx_in[0]).to_dict()
    other = gpukit.Run.from_dict({q: {"zz-unrelated": -1e6} for q in queries})
    fused = gpukit.fuse([run, other], method="max", norm=norm)
    got = fused.to_dict()
    for q, docs in expected.items():
        for doc, value in docs.items():
            assert abs(got[q][doc] - value) <= 1e-9, (q, doc, got[q][doc], value)


@pytest.mark.parametrize("ids", ["numeric", "eight_bytes"])
@pytest.mark.parametrize("method", ["sum", "rrf", "mnz", "med", "bordafuse"])
def test_ids_spanning_the_packed_key_range(ids, method):
    # Packed keys of 1-7 digit ids span ~2^60: the key sort shifts out their
    # zero eighth byte to pack the row above them; random 8-byte ids span
    # ~2^63 with no shared zero bit: it falls back to a comparison sort.
    rng = np.random.default_rng(11)
    if ids == "numeric":
        names = {"1", "9999999"} | {str(int(x)) for x in rng.integers(1, 10 ** rng.integers(1, 8, 400))}
    else:
        names = {"!!!!!!!!", "~~~~~~~~"} | {"".join(chr(c) for c in rng.integers(0x21, 0x7F, 8)) for _ in range(400)}
    names = sorted(names)
    names = [names[0], names[-1], *rng.choice(names[1:-1], 38, replace=False).tolist()]
    rename = {f"d{i}": names[i] for i in range(40)}
    dicts = [{q: {rename[d]: s for d, s in docs.items()} for q, docs in run.items()} for run in random_run_dicts(5, n_runs=3, n_queries=20)]
    runs = gpukit_runs(dicts)
    assert all(isinstance(r.doc_space, PackedIds) for r in runs)
    codes = torch.cat([r.doc_codes[r.doc_codes >= 0] for r in runs])
    assert (int(codes.max()) - int(codes.min())).bit_length() >= 59
    _compare(dicts, method, "min-max", 5)
