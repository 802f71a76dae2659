"""gpukit (convention="trec_eval") against pytrec_eval (trec_eval compiled in).

Random runs with many score ties (scores rounded to 2 decimals), graded qrels
0..3 with some negative ("in pool, unjudged") grades, retrieved docs absent
from the qrels, qrels queries the run does not answer and run queries without
judgments. pytrec_eval scores the queries in both run and qrels, which is
gpukit's trec_eval convention with complete=False (the default).

Score precision: pytrec_eval compares scores as float32 (0.3 + 5e-8 ranks
above 0.3, 0.3 + 2e-8 ties with it: exactly float32 rounding). With scores
rounded to 2 decimals float32 and float64 give the same order, so the random
tests pass with both gpukit's default float64 and ``score_dtype=torch.float32``;
``test_float32_near_ties`` shows that near-ties (equal only after float32
rounding) need ``score_dtype=torch.float32`` to reproduce pytrec_eval.
"""
from __future__ import annotations

import math
import random

import pytest
import torch

import gpukit
from reference import reference_evaluate

pytrec_eval = pytest.importorskip("pytrec_eval")

TOL = 1e-9

PYTREC_MEASURES = {
    "map", "ndcg", "ndcg_cut.5,10", "P.5,10", "recall.10,100", "recip_rank", "Rprec", "bpref",
    "success.1,5", "map_cut.10", "num_ret", "num_rel", "num_rel_ret",
}
# pytrec_eval output key -> gpukit canonical name
NAMES = {
    "map": "AP",
    "ndcg": "nDCG",
    "ndcg_cut_5": "nDCG@5",
    "ndcg_cut_10": "nDCG@10",
    "P_5": "P@5",
    "P_10": "P@10",
    "recall_10": "R@10",
    "recall_100": "R@100",
    "recip_rank": "RR",
    "Rprec": "Rprec",
    "bpref": "Bpref",
    "success_1": "Success@1",
    "success_5": "Success@5",
    "map_cut_10": "AP@10",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
}
COUNTS = {"num_ret", "num_rel", "num_rel_ret"}


def random_collection(seed: int, n_queries: int = 30, max_docs: int = 200):
    rng = random.Random(seed)
    doc_pool = [f"D{rng.randrange(10**rng.randint(1, 5))}-{i}" for i in range(400)]
    qids = [f"{rng.randint(1, 500)}" for _ in range(n_queries)]
    qids = sorted(set(qids)) + ["q-extra-a", "q-extra-b"]
    qrels, run = {}, {}
    for i, q in enumerate(qids):
        retrieved = rng.sample(doc_pool, rng.randint(1, max_docs))
        in_qrels = q.isdigit()
        in_run = i % 7 != 3  # some qrels queries are missing from the run
        if in_run:
            run[q] = {d: round(rng.random() * rng.choice([1.0, 3.0]), 2) for d in retrieved}
        if in_qrels:
            judged = rng.sample(retrieved, rng.randint(0, len(retrieved) // 2))
            judged += rng.sample(doc_pool, rng.randint(1, 30))  # some never retrieved
            kind = rng.random()
            if kind < 0.1:
                weights = [1, 0, 0, 0, 0, 0]  # R = 0: only grade 0
            elif kind < 0.15:
                weights = [0, 0, 0, 0, 1, 1]  # nothing judged >= 0
            else:
                weights = [8, 3, 2, 1, 1, 1]
            qrels[q] = {d: rng.choices([0, 1, 2, 3, -1, -2], weights)[0] for d in judged}
    return qrels, run


def _gpukit(qrels, run, names, **kw):
    return gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, convention="trec_eval", **kw)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("relevance_level", [1, 2])
@pytest.mark.parametrize("score_dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_matches_pytrec_eval(seed, relevance_level, score_dtype):
    qrels, run = random_collection(seed)
    # the collection really has ties (distinct docs with equal scores)
    assert sum(len(r) - len(set(r.values())) for r in run.values()) > 100
    expected = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=relevance_level).evaluate(run)
    names = list(NAMES.values())
    report = _gpukit(qrels, run, names, relevance_level=relevance_level, score_dtype=score_dtype)
    ref = reference_evaluate(qrels, run, names, convention="trec_eval", relevance_level=relevance_level)
    assert sorted(expected) == report.query_ids == ref["query_ids"]
    assert len(report.query_ids) >= 20
    for key, name in NAMES.items():
        result = report[gpukit.parse_measures([name], rel=relevance_level)[0]]
        assert result.evaluated == len(report.query_ids) and result.omitted == 0
        got = dict(zip(report.query_ids, result.per_query.tolist()))
        for q in report.query_ids:
            want = expected[q][key]
            assert abs(got[q] - want) <= TOL, f"{key} {q}: pytrec_eval {want}, gpukit {got[q]}"
            # the reference agrees with trec_eval too (guards the reference itself)
            assert abs(ref["measures"][name]["per_query"][q] - want) <= TOL, f"reference {key} {q}"
        values = [expected[q][key] for q in report.query_ids]
        mean = sum(values) if key in COUNTS else sum(values) / len(values)
        assert math.isclose(result.mean, mean, rel_tol=1e-12, abs_tol=TOL), key


def test_float32_near_ties():
    """pytrec_eval ties scores that are equal in float32; score_dtype=float32 does too."""
    qrels = {"q": {"a": 1, "b": 0, "c": 2}}
    run = {"q": {"a": 0.3 + 2e-8, "b": 0.3, "c": 0.1 + 1e-9, "z": 0.1}}  # float64: a > b; float32: a == b
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "map", "ndcg"}).evaluate(run)["q"]
    as32 = _gpukit(qrels, run, ["RR", "AP", "nDCG"], score_dtype=torch.float32)
    as64 = _gpukit(qrels, run, ["RR", "AP", "nDCG"])
    for key, name in (("recip_rank", "RR"), ("map", "AP"), ("ndcg", "nDCG")):
        assert as32[name].per_query.item() == pytest.approx(expected[key], abs=TOL)
    # float32: ranking b, a, z, c (ties by doc id descending) -> RR = 1/2
    assert expected["recip_rank"] == 0.5
    # float64 separates a from b
    assert as64["RR"].per_query.item() == 1.0
