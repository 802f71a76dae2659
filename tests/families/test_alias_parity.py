"""gpukit against ir_measures and ranx on a small fixed random collection.

The collection avoids the known convention differences: no score ties, every
judged query has a relevant document, no negative grades. It keeps the cases
where all three libraries agree: retrieved docs absent from the qrels, grade 0
judgments, graded qrels 0..3, runs shorter than the cutoffs, one qrels query
the run does not answer and one run query without judgments.

Conventions found empirically (ir_measures 0.4.x, ranx 0.3.x), each pinned by
a test below:

* Topics: ir_measures (every provider, via ``Evaluator.iter_calc``) and ranx
  (with ``make_comparable=True``; without it ranx refuses mismatched query
  sets) score a qrels query missing from the run as 0 and keep it in the mean,
  and ignore run queries without judgments: gpukit's
  ``convention="trec_eval", complete=True`` (``trec_eval -c``).
* R = 0 queries (only grade-0 judgments): ir_measures and ranx score them 0
  and keep them in the mean, as trec_eval. gpukit's default convention
  omits them instead; the comparison uses convention="trec_eval".
* Ties: trec_eval (and so ir_measures' pytrec_eval provider) breaks score ties
  by doc id descending. ir_measures' msmarco provider (RR@k) and judged
  provider (Judged@k) break them by doc id *ascending*; ranx keeps the
  run's insertion order. Hence no ties in the shared collection.
* Judged@k is ir_measures' judged provider's: it divides by min(k, |ranking|)
  and counts every doc present in the qrels as judged, negative ("in pool,
  unjudged") grades included (trec_eval's unj, gpukit's Unjudged@k, does not).
* nDCG(dcg='exp-log2')@k goes to the gdeval provider (perl), which prints 5
  decimals (compare to 1e-5) and wants numeric query ids. gpukit's parser
  rejects the quoted spelling ir_measures prints, ``nDCG(dcg='exp-log2')@10``
  (see test_gpukit_parses_ir_measures_quoted_dcg); it accepts
  ``nDCG(dcg=exp-log2)@10``, which ir_measures cannot parse.
* ranx ignores grade-0 (and negative) judgments (it only needs relevant docs)
  and gives negative grades gain 0 in nDCG; this changes none of the compared
  measures. ``map@100`` is AP@100 with denominator R, as trec_eval's map_cut.
"""
from __future__ import annotations

import math
import random
import warnings

import pytest

import gpukit

ir_measures = pytest.importorskip("ir_measures")
ranx = pytest.importorskip("ranx")

TOL = 1e-9

# ir_measures name -> gpukit name (the same name where gpukit parses it).
IR_MEASURES = {
    "nDCG@10": "nDCG@10",
    "P@5": "P@5",
    "R@100": "R@100",
    "RR@10": "RR@10",
    "AP": "AP",
    "Success@5": "Success@5",
    "P(rel=2)@5": "P(rel=2)@5",
}
RANX = ["ndcg@10", "precision@5", "mrr@10", "hit_rate@5", "map@100", "recall@100", "ndcg_burges@10"]


def collection(seed: int = 7):
    """20 numeric queries (gdeval needs them), unique scores, >= 1 relevant doc each."""
    rng = random.Random(seed)
    pool = [f"doc{i:03d}" for i in range(300)]
    qrels, run = {}, {}
    for qi in range(1, 21):
        q = str(qi)
        retrieved = rng.sample(pool, rng.choice([3, 8, rng.randint(10, 150)]))
        scores = rng.sample(range(10**6), len(retrieved))  # distinct: no ties
        run[q] = {d: s / 1000.0 for d, s in zip(retrieved, scores)}
        judged = rng.sample(retrieved, len(retrieved) // 2) + rng.sample(pool, 10)
        grades = {d: rng.choice([0, 0, 0, 1, 2, 3]) for d in judged}
        if not any(g >= 1 for g in grades.values()):
            grades[judged[0]] = 1
        qrels[q] = grades
    qrels["99"] = {"doc001": 2, "doc002": 0}  # judged, not in the run
    run["98"] = {"doc001": 1.0, "doc003": 0.5}  # in the run, not judged
    return qrels, run


@pytest.fixture(scope="module")
def data():
    qrels, run = collection()
    names = list(IR_MEASURES.values()) + RANX + ["Judged@10", "NumRet", "nDCG(gain=exp)@10"]
    report = gpukit.evaluate(
        gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, convention="trec_eval", complete=True
    )
    assert report.query_ids == sorted(qrels)
    return qrels, run, report


def _per_query(report, name):
    return dict(zip(report.query_ids, report[name].per_query.tolist()))


def test_ir_measures_pytrec_and_msmarco_providers(data):
    qrels, run, report = data
    measures = {ir_measures.parse_measure(n): g for n, g in IR_MEASURES.items()}
    agg = ir_measures.calc_aggregate(list(measures), qrels, run)
    for m, name in measures.items():
        assert math.isclose(agg[m], report[name].mean, abs_tol=TOL), f"{m}: ir_measures {agg[m]}, gpukit {report[name].mean}"
    for metric in ir_measures.iter_calc(list(measures), qrels, run):
        got = _per_query(report, measures[metric.measure])[metric.query_id]
        assert abs(got - metric.value) <= TOL, f"{metric.measure} {metric.query_id}: {metric.value} vs {got}"


def test_ir_measures_judged_divides_by_ranking_length(data):
    qrels, run, report = data
    m = ir_measures.parse_measure("Judged@10")
    judged = _per_query(report, "Judged@10")
    num_ret = _per_query(report, "NumRet")
    seen = 0
    for metric in ir_measures.iter_calc([m], qrels, run):
        q = metric.query_id  # a query missing from the run: ir_measures' default 0, gpukit's empty ranking 0
        assert abs(metric.value - judged[q]) <= TOL, (q, metric.value, judged[q], num_ret[q])
        seen += 1
    assert seen == len(report.query_ids)
    assert any(0 < n < 10 for n in num_ret.values())  # the rescaling was exercised
    assert any(n >= 10 for n in num_ret.values())  # ... and so was plain equality


def test_ir_measures_gdeval_exp_gain(data):
    qrels, run, report = data
    m = ir_measures.parse_measure("nDCG(dcg='exp-log2')@10")
    got = _per_query(report, "nDCG(gain=exp)@10")
    values = {metric.query_id: metric.value for metric in ir_measures.iter_calc([m], qrels, run)}
    assert set(values) == set(report.query_ids)
    for q, v in values.items():
        assert abs(v - got[q]) <= 5.1e-6, (q, v, got[q])  # gdeval prints %.5f
    agg = ir_measures.calc_aggregate([m], qrels, run)[m]
    assert abs(agg - report["nDCG(gain=exp)@10"].mean) <= 5.1e-6


def test_gpukit_parses_ir_measures_quoted_dcg():
    """ir_measures spells the exp gain ``nDCG(dcg='exp-log2')@10`` (quoted, as
    ``str()`` of its measure prints it); gpukit documents ir_measures names as
    canonical and maps ``dcg=exp-log2`` to gain=exp, so the quoted form should
    parse to the same measure. Fails on gpukit 0.1.0 (MeasureError: "dcg must be
    'log2' or 'exp-log2', got \"'exp-log2'\"")."""
    name = str(ir_measures.parse_measure("nDCG(dcg='exp-log2')@10"))
    assert name == "nDCG(dcg='exp-log2')@10"
    assert gpukit.parse_measure(name) == gpukit.parse_measure("nDCG(gain=exp)@10")


def test_ranx(data):
    qrels, run, report = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rx_run = ranx.Run(run)
        means = ranx.evaluate(ranx.Qrels(qrels), rx_run, RANX, make_comparable=True)
    for name in RANX:
        assert math.isclose(float(means[name]), report[name].mean, abs_tol=TOL), (
            f"{name}: ranx {means[name]}, gpukit {report[name].mean}"
        )
        per_query = _per_query(report, name)
        ranx_per_query = rx_run.scores[name]
        assert set(ranx_per_query) == set(report.query_ids)
        for q, v in ranx_per_query.items():
            assert abs(float(v) - per_query[q]) <= TOL, (name, q, v, per_query[q])


# ----------------------------------------------- documented differences
def test_convention_differences_on_ties_and_negative_grades():
    """Pins the tie and "judged" conventions described in the module docstring."""
    qrels = {"1": {"a": 1, "b": 0, "c": -1}}
    # a and b tie. trec_eval: b (id descending) first; msmarco/judged providers: a first.
    run = {"1": {"a": 1.0, "b": 1.0, "c": 0.5}}
    report = gpukit.evaluate(
        gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["RR@10", "nDCG@10", "Judged@2", "Judged@3"],
        convention="trec_eval",
    )
    assert report["RR@10"].per_query.item() == 0.5
    rr, ndcg = ir_measures.parse_measure("RR@10"), ir_measures.parse_measure("nDCG@10")
    agg = ir_measures.calc_aggregate([rr, ndcg], qrels, run)
    assert agg[rr] == 1.0  # msmarco provider: ties by doc id ascending
    assert math.isclose(agg[ndcg], report["nDCG@10"].mean, abs_tol=TOL)  # pytrec_eval provider: as trec_eval
    # Judged@3: c (-1) is in the qrels, so judged for both: 1.
    j3 = ir_measures.parse_measure("Judged@3")
    assert report["Judged@3"].per_query.item() == 1.0
    assert ir_measures.calc_aggregate([j3], qrels, run)[j3] == 1.0
