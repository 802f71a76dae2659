"""ERR@k against ir_measures' gdeval provider (gdeval.pl, run by perl).

gdeval's stop probability is (2^grade - 1) / 2^4 (its MAX_JUDGMENT), the same
for every query; ir_measures reports every qrels query, 0 where gdeval prints
nothing (no positive judgment, or no ranking), which is gpukit's ERR under
both conventions with all qrels queries. gdeval prints five decimals.
"""
from __future__ import annotations

import math
import random
import shutil

import pytest
from reference import rank, reference_evaluate

import gpukit

ir_measures = pytest.importorskip("ir_measures")
pytestmark = pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval needs perl")

PRINTED = 5e-6 + 1e-12
CUTOFFS = (1, 3, 10, 50)  # 50 is past most rankings


def _collection(seed: int):
    """Numeric topic ids (gdeval's format), grades -2..4, many score ties, unjudged docs."""
    rng = random.Random(seed)
    pool = [f"d{rng.randrange(10**rng.randint(1, 4))}-{i}" for i in range(150)]
    qrels, run = {}, {}
    for q in (str(t) for t in rng.sample(range(1, 400), 25)):
        retrieved = rng.sample(pool, rng.randint(1, 40))
        if rng.random() < 0.85:
            run[q] = {d: round(rng.random() * 2, 1) for d in retrieved}
        judged = rng.sample(retrieved, rng.randint(0, len(retrieved))) + rng.sample(pool, rng.randint(1, 10))
        weights = [1, 0, 0, 0, 0, 1, 1] if rng.random() < 0.15 else [6, 3, 2, 1, 1, 1, 1]
        qrels[q] = {d: rng.choices([0, 1, 2, 3, 4, -1, -2], weights)[0] for d in judged}
    run[str(rng.randint(500, 600))] = {pool[0]: 1.0}  # a run query without judgments
    return qrels, run


def _gdeval(qrels, run, cutoffs):
    provider = ir_measures.providers.registry["gdeval"]
    measures = [ir_measures.ERR @ k for k in cutoffs]
    out = {k: {} for k in cutoffs}
    for metric in provider.evaluator(measures, qrels).iter_calc(run):
        out[metric.measure["cutoff"]][metric.query_id] = metric.value
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("convention", ["gpukit", "trec_eval"])
@pytest.mark.parametrize("max_depth", [None, 4])
def test_err_matches_gdeval(seed, convention, max_depth):
    qrels, run = _collection(seed)
    cut_run = run if max_depth is None else {q: {d: docs[d] for d in rank(docs, max_depth)} for q, docs in run.items()}
    expected = _gdeval(qrels, cut_run, CUTOFFS)
    names = [f"ERR@{k}" for k in CUTOFFS]
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, convention=convention,
                             complete=True, max_depth=max_depth)
    ref = reference_evaluate(qrels, run, names, convention=convention, complete=True, max_depth=max_depth)
    assert sorted(report.query_ids) == sorted(expected[CUTOFFS[0]]) == sorted(qrels)
    assert any(v > 0 for v in expected[10].values())
    for k, name in zip(CUTOFFS, names):
        result = report[name]
        assert result.evaluated == len(qrels) and result.omitted == 0
        got = dict(zip(report.query_ids, result.per_query.tolist()))
        for q, want in expected[k].items():
            assert abs(got[q] - want) <= PRINTED, f"{name} {q}: gdeval {want}, gpukit {got[q]}"
            assert abs(ref["measures"][name]["per_query"][q] - want) <= PRINTED, f"reference {name} {q}"
        mean = sum(expected[k].values()) / len(expected[k])
        assert math.isclose(result.mean, mean, abs_tol=PRINTED), name


def test_err_hand_checked():
    """Stop probabilities use gdeval's fixed maximum grade 4, not the query's highest grade."""
    qrels = {"1": {"a": 2, "b": 0, "c": 1}}
    run = {"1": {"a": 3.0, "b": 2.0, "c": 1.0}}
    r1, r3 = 3 / 16, 1 / 16
    want = r1 + (1 - r1) * r3 / 3
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["ERR", "ERR@1", "ERR(max_grade=2)"])
    assert report["ERR"].mean == pytest.approx(want)
    assert report["ERR@1"].mean == pytest.approx(r1)
    assert report["ERR(max_grade=2)"].mean == pytest.approx(3 / 4 + (1 / 4) * (1 / 4) / 3)
    assert _gdeval(qrels, run, [3])[3]["1"] == pytest.approx(want, abs=PRINTED)


def test_err_grades_above_max_grade_count_as_max_grade():
    qrels = {"1": {"a": 7}}
    run = {"1": {"a": 1.0}}
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["ERR", "ERR(max_grade=8)"])
    assert report["ERR"].mean == pytest.approx(15 / 16)
    assert report["ERR(max_grade=8)"].mean == pytest.approx(127 / 256)


@pytest.mark.parametrize("name,problem", [("ERR(max_grade=0)", "between 1 and 60"), ("ERR(max_grade=x)", "integer"),
                                          ("ERR(rel=2)@5", "takes no rel=")])
def test_err_errors_name_the_problem(name, problem):
    with pytest.raises(gpukit.errors.MeasureError, match=problem):
        gpukit.parse_measures([name])
