"""trec_eval's experimental graded measures against trec_eval itself.

* pytrec_eval (trec_eval compiled in) exposes binG, G, ndcg_rel and Rndcg
  with the default gains: per-query parity on random runs with ties, graded
  qrels, unjudged and negative grades, at relevance levels 1 and 2, with
  trec_eval's -M (the run cut to its top documents before pytrec_eval sees
  it) and -c (queries missing from the run given trec_eval's one-document
  stand-in ranking).
* rbp, rbp_resid, unj and custom gains are not reachable through
  pytrec_eval: ``TREC_EVAL_OUTPUT`` holds the lines trec_eval 10.0 printed
  for a small fixed collection (``trec_eval -q [-M 4 | -l 2] -m <measure>``,
  one measure per call: trec_eval's rbp reads its gain range from
  uninitialised variables, so another measure run before it can change it).
* out.test.a/.aqc/.aqcM/.aql of trec_eval's test suite cover the default
  forms through tests/trec_eval/test_trec_eval_outputs.py (tests/trec_eval_names.py).
"""
from __future__ import annotations

import math
import random

import pytest
import torch
from reference import RefMeasure, rank, reference_evaluate
from reference_trec_graded import rbp
from test_pytrec_eval_parity import random_collection
from trec_eval_names import to_gpukit

import gpukit
from gpukit.errors import MeasureError
from gpukit.report import trec_name

pytrec_eval = pytest.importorskip("pytrec_eval")

TOL = 1e-9
PRINTED = 5e-5 + 1e-9  # half a unit of trec_eval's 4 printed decimals

# pytrec_eval output key -> gpukit canonical name
PYTREC = {"binG": "BinG", "G": "G", "ndcg_rel": "nDCGRel", "Rndcg": "RnDCG"}
BOGUS_DOC = "ceci_nest_pas_un_docno"  # trec_eval -c's ranking for a query missing from the run


def _cut(run: dict, depth: int | None) -> dict:
    """trec_eval -M: each ranking cut to its top ``depth`` after trec_eval's sort."""
    if depth is None:
        return run
    return {q: {d: docs[d] for d in rank(docs, depth)} for q, docs in run.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("relevance_level", [1, 2])
@pytest.mark.parametrize("max_depth,complete", [(None, False), (7, False), (None, True), (25, True)])
def test_matches_pytrec_eval(seed, relevance_level, max_depth, complete):
    qrels, run = random_collection(seed, n_queries=25, max_docs=80)
    assert sum(len(r) - len(set(r.values())) for r in run.values()) > 50  # ties
    pytrec_run = _cut(run, max_depth)
    if complete:
        missing = set(qrels) - set(run)
        assert missing
        pytrec_run = {**pytrec_run, **{q: {BOGUS_DOC: 1.0} for q in missing}}
    expected = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC), relevance_level=relevance_level).evaluate(pytrec_run)
    names = list(PYTREC.values())
    options = {"complete": complete, "max_depth": max_depth, "relevance_level": relevance_level}
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, convention="trec_eval",
                             **options)
    ref = reference_evaluate(qrels, run, names, convention="trec_eval", **options)
    assert sorted(expected) == report.query_ids
    for key, name in PYTREC.items():
        result = report[gpukit.parse_measures([name], rel=relevance_level)[0]]
        got = dict(zip(report.query_ids, result.per_query.tolist()))
        for q in report.query_ids:
            want = expected[q][key]
            assert abs(got[q] - want) <= TOL, f"{key} {q}: pytrec_eval {want}, gpukit {got[q]}"
            assert abs(ref["measures"][name]["per_query"][q] - want) <= TOL, f"reference {key} {q}"
        mean = sum(expected[q][key] for q in report.query_ids) / len(report.query_ids)
        assert math.isclose(result.mean, mean, rel_tol=1e-12, abs_tol=TOL), key


# ------------------------------------------------- trec_eval's own output
QRELS = {
    "t1": {"a": 3, "b": 0, "c": 1, "d": 2, "e": -1, "f": 1, "g": 4, "h": 0},
    "t2": {"a": 1, "b": 1, "c": 0, "x": 2},
    "t3": {"b": 2, "c": 2, "d": 0, "e": 1, "z": -2},
    "t4": {"a": 0, "b": -1},
}
RUN = {
    "t1": {"a": 0.9, "b": 0.9, "c": 0.5, "q": 0.5, "e": 0.4, "g": 0.3, "h": 0.2, "r": 0.1},
    "t2": {"x": 1.0, "y": 0.8, "a": 0.8, "c": 0.1},
    "t3": {"z": 2.0, "c": 1.0, "b": 1.0, "d": 0.5, "w": 0.5, "e": 0.1, "v": 0.0},
    "t4": {"a": 1.0, "m": 0.5},
}
# trec_eval's printed name -> the gpukit measure (written from trec_eval's parameter syntax);
# the default forms (binG, rbp, unj_7...) map through tests/trec_eval_names.py.
GPUKIT = {
    "G_1=3,2=9": "G(gains={1:3,2:9})",
    "ndcg_rel_1=3,2=9,4=4.5": "nDCGRel(gains={1:3,2:9,4:4.5})",
    "Rndcg_1=2,2=2": "RnDCG(gains={1:2,2:2})",  # two levels of one gain: one R level
    # the ideal order is not the grade order (gains differ by >= 1: trec_eval sorts its gain table
    # with a comparator that truncates differences to integers)
    "Rndcg_1=4,3=1": "RnDCG(gains={1:4,3:1})",
    "rbp_p=0.95": "RBP(p=0.95)",
    "rbp_1=3,2=9": "RBP(p=0.9,gains={1:3,2:9})",
    "rbp_p=0.7,0=-1,3=0.5": "RBP(p=0.7,gains={0:-1,3:0.5})",  # negative gain: shifted and scaled
    "rbp_resid_p=0.5": "RBPResid(p=0.5)",
}
# Values for t1 t2 t3 t4 all.
TREC_EVAL_OUTPUT = {
    "": {
        "G_1=3,2=9": "0.1195 0.6861 0.3700 0.0000 0.2939",
        "ndcg_rel_1=3,2=9,4=4.5": "0.2574 0.8982 0.5704 0.0000 0.4315",
        "Rndcg_1=2,2=2": "0.2836 0.7039 0.6143 0.0000 0.4004",
        "Rndcg_1=4,3=1": "0.2381 0.4191 0.3167 0.0000 0.2435",
        "rbp_p=0.95": "0.0850 0.0726 0.1120 0.0000 0.0674",
        "rbp_1=3,2=9": "0.0805 0.1270 0.1907 0.0000 0.0996",
        "rbp_p=0.7,0=-1,3=0.5": "0.1546 0.3980 0.3906 0.0000 0.2358",
        "rbp_resid_p=0.5": "0.1641 0.3125 0.5781 0.5000 0.3887",
        "unj_1": "0.0000 0.0000 1.0000 0.0000 0.2500",
        "unj_3": "0.3333 0.3333 0.3333 0.3333 0.3333",
        "unj_7": "0.2857 0.1429 0.4286 0.1429 0.2500",
        "binG": "0.3123 0.5436 0.5642 0.0000 0.3550",
        "G": "0.2765 0.6577 0.5385 0.0000 0.3682",
        "ndcg_rel": "0.4194 0.8657 0.5614 0.0000 0.4616",
        "Rndcg": "0.2767 0.8992 0.5614 0.0000 0.4343",
        "rbp": "0.1448 0.1405 0.2005 0.0000 0.1214",
        "rbp_resid": "0.6249 0.7461 0.7043 0.9000 0.7438",
    },
    "-M 4": {
        "G_1=3,2=9": "0.0729 0.6861 0.3085 0.0000 0.2669",
        "ndcg_rel_1=3,2=9,4=4.5": "0.1965 0.8982 0.5484 0.0000 0.4108",
        "Rndcg_1=2,2=2": "0.2147 0.7039 0.5307 0.0000 0.3623",
        "Rndcg_1=4,3=1": "0.1886 0.4191 0.1806 0.0000 0.1971",
        "rbp_p=0.95": "0.0463 0.0726 0.0926 0.0000 0.0529",
        "rbp_1=3,2=9": "0.0543 0.1270 0.1710 0.0000 0.0881",
        "rbp_p=0.7,0=-1,3=0.5": "0.1042 0.3980 0.3570 0.0000 0.2148",
        "rbp_resid_p=0.5": "0.1875 0.3125 0.6250 0.5000 0.4062",
        "unj_7": "0.1429 0.1429 0.2857 0.1429 0.1786",
        "binG": "0.2262 0.5436 0.4206 0.0000 0.2976",
        "G": "0.1358 0.6577 0.4524 0.0000 0.3115",
        "ndcg_rel": "0.3085 0.8657 0.5298 0.0000 0.4260",
        "Rndcg": "0.2243 0.8992 0.4941 0.0000 0.4044",
        "rbp": "0.0857 0.1405 0.1710 0.0000 0.0993",
        "rbp_resid": "0.7371 0.7461 0.8290 0.9000 0.8031",
    },
    "-l 2": {
        "binG": "0.3393 1.0000 0.6309 0.0000 0.4925",
        "Rndcg": "0.2767 0.8992 0.5614 0.0000 0.4343",
        "Rndcg_1=2,2=2": "0.2836 0.7039 0.6143 0.0000 0.4004",
        "G": "0.2765 0.6577 0.5385 0.0000 0.3682",
        "rbp": "0.1448 0.1405 0.2005 0.0000 0.1214",  # -l does not change rbp
    },
}
FLAGS = {"": {}, "-M 4": {"max_depth": 4}, "-l 2": {"relevance_level": 2}}


@pytest.mark.parametrize("flags", list(TREC_EVAL_OUTPUT))
def test_matches_trec_eval_printed_values(flags):
    lines = TREC_EVAL_OUTPUT[flags]
    options = FLAGS[flags]
    names = [GPUKIT.get(n) or to_gpukit(n) for n in lines]
    report = gpukit.evaluate(gpukit.Qrels.from_dict(QRELS), gpukit.Run.from_dict(RUN), names, convention="trec_eval",
                             **options)
    assert report.query_ids == ["t1", "t2", "t3", "t4"]
    level = options.get("relevance_level")
    for trec, name in zip(lines, names):
        *per_query, mean = (float(v) for v in lines[trec].split())
        result = report[gpukit.parse_measures([name], rel=level)[0]]
        for q, want, got in zip(report.query_ids, per_query, result.per_query.tolist()):
            assert abs(got - want) <= PRINTED, (flags, trec, q, want, got)
        assert abs(result.mean - mean) <= PRINTED, (flags, trec, "all")
        # --format trec prints trec_eval's own name where gpukit can parse it back
        if "p=" not in trec:
            assert trec_name(result.measure, rel=level or 1) == trec


def test_custom_gain_rbp_matches_the_reference():
    """RBP with p and custom gains (the registry-wide test cannot spell both in one name)."""
    rng = random.Random(5)
    qrels, run = random_collection(11, n_queries=20, max_docs=40)
    cases = [(0.9, {1: 3.0, 2: 9.0}), (0.6, {0: 0.5}), (0.8, {0: -1.0, 3: 0.25}), (0.95, {2: 0.5, 7: 4.0})]
    for p, gains in cases:
        name = f"RBP(p={p},gains={{{','.join(f'{g}:{v}' for g, v in gains.items())}}})"
        depth = rng.choice([None, 5])
        report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), [name],
                                 convention="trec_eval", max_depth=depth)
        m = RefMeasure("RBP", None, None, gains, (("p", p),))
        got = dict(zip(report.query_ids, report.results[gpukit.parse_measure(name)].per_query.tolist()))
        for q in report.query_ids:
            judged = qrels[q]
            grades = [judged.get(d) for d in rank(run[q], depth)]
            want, _ = rbp(m, grades, judged)
            assert abs(got[q] - want) <= 1e-12, (name, q)


# ------------------------------------------------------- hand-checked values
def _one(qrels, run, name, **options):
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), [name], **options)
    result = report.results[gpukit.parse_measure(name)]
    return result.per_query.tolist()[0], result.mask.tolist()[0]


def test_rndcg_end_of_ranking_point_needs_two_documents_past_the_ideal():
    """Ideal [1, 1] (M = 2): the ranking's own point counts only when n >= M + 2."""
    qrels = {"q": {"a": 1, "b": 1}}
    ndcg_at_2 = 1 / (1 + 1 / math.log2(3))  # a at rank 1 only
    three, _ = _one(qrels, {"q": {"a": 3.0, "x": 2.0, "y": 1.0}}, "RnDCG", convention="trec_eval")
    assert three == pytest.approx(ndcg_at_2)  # n = 3 = M + 1: one point
    four, _ = _one(qrels, {"q": {"a": 4.0, "x": 3.0, "y": 2.0, "b": 1.0}}, "RnDCG", convention="trec_eval")
    full = (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert four == pytest.approx((ndcg_at_2 + full) / 2)  # n = 4: nDCG@2 and the whole ranking


def test_rbp_scales_graded_gains_by_the_highest_grade():
    # grades 0..3: table 0..3 lies outside [0, 1], so gains become grade / 3
    qrels = {"q": {"a": 3, "b": 1, "c": 0}}
    value, _ = _one(qrels, {"q": {"b": 2.0, "x": 1.5, "a": 1.0}}, "rbp", convention="trec_eval")
    assert value == pytest.approx(0.1 * (1 / 3 + 0.81 * 1.0))
    # ir_measures' default persistence for the bare canonical name
    value, _ = _one(qrels, {"q": {"b": 2.0, "x": 1.5, "a": 1.0}}, "RBP", convention="trec_eval")
    assert value == pytest.approx(0.2 * (1 / 3 + 0.64 * 1.0))


def test_rbp_resid_and_unjudged_count_absent_and_negative_grades():
    qrels = {"q": {"a": 1, "b": -1, "c": 0}}
    run = {"q": {"a": 3.0, "b": 2.0, "x": 1.0}}  # a judged, b in pool unjudged, x absent
    resid, _ = _one(qrels, run, "RBPResid(p=0.5)", convention="trec_eval")
    assert resid == pytest.approx(0.5**3 + 0.5 * (0.5 + 0.25))
    unj, _ = _one(qrels, run, "Unjudged@5", convention="trec_eval")
    judged, _ = _one(qrels, run, "Judged@5", convention="trec_eval")
    # Unjudged@5 is trec_eval's unj (top 5 not judged >= 0, over 5); Judged@5 is
    # ir_measures' (top 5 present in the qrels, negative grades too, over min(5, |ranking|)).
    assert unj == pytest.approx(2 / 5) and judged == pytest.approx(2 / 3)  # not 1 - Judged@5
    none, _ = _one({"q": {"a": 1}}, {"q": {"a": 1.0}}, "RBPResid(p=0.5)", convention="trec_eval")
    assert none == 0.0  # nothing unjudged: trec_eval leaves even the tail p^n out


def test_gpukit_convention_omits_undefined_queries():
    qrels = {"q": {"a": 0, "b": 0}}  # no positive gain, R = 0
    run = {"q": {"a": 1.0, "x": 0.5}}
    for name in ("BinG", "G", "nDCGRel", "RnDCG"):
        value, kept = _one(qrels, run, name)
        assert not kept and math.isnan(value), name
        value, kept = _one(qrels, run, name, convention="trec_eval")
        assert kept and value == 0.0, name
    for name in ("RBP(p=0.9)", "RBPResid(p=0.9)", "Unjudged@5"):
        assert _one(qrels, run, name)[1], name


def test_device_running_sums_and_products_equal_the_cpu_ones_bitwise():
    """The column-at-a-time path (CUDA) combines in the CPU's order, so both give the same bits."""
    from gpukit.metrics.trec_graded import (
        column_by_column_scan,
        ordered_cumprod,
        ordered_cumsum,
    )

    values = torch.rand((33, 257), generator=torch.Generator().manual_seed(4), dtype=torch.float64) * 7
    assert torch.equal(column_by_column_scan(values), ordered_cumsum(values))
    factors = 1.0 - values / 8  # survival probabilities, as ERR multiplies them
    assert torch.equal(column_by_column_scan(factors, product=True), ordered_cumprod(factors))


# ------------------------------------------------------------------ names
def test_names():
    assert str(gpukit.parse_measure("RBP")) == "RBP(p=0.8)"  # the name always carries p
    assert gpukit.parse_measure("rbp") == gpukit.parse_measure("RBP(p=0.9)")  # trec_eval's default
    assert gpukit.parse_measure("rbp_resid") == gpukit.parse_measure("RBPResid(p=0.9)")
    assert gpukit.parse_measure("rbp.1=3,2=9") == gpukit.parse_measure("RBP(p=0.9,gains={1:3,2:9})")
    assert gpukit.parse_measures(["unj"]) == gpukit.parse_measures(["Unjudged@5", "Unjudged@10", "Unjudged@20"])
    assert gpukit.parse_measure("G.1=3,2=9") == gpukit.parse_measure("G(gains={1:3,2:9})")
    assert gpukit.parse_measure("Rndcg") == gpukit.parse_measure("RnDCG")
    # every default-form line of trec_eval's all_trec output maps to one of these families
    mapped = {to_gpukit(n) for n in ("binG", "G", "ndcg_rel", "Rndcg", "rbp", "rbp_resid", "unj_5")}
    assert {gpukit.parse_measure(n).family for n in mapped} == {"BinG", "G", "nDCGRel", "RnDCG", "RBP", "RBPResid",
                                                              "Unjudged"}


@pytest.mark.parametrize("name,problem", [
    ("rbp.1=2,p=0.5", "RBP(p=0.95)"),
    ("RBP(p=1)", "graded RBP needs p < 1"),
    ("G(gains={-1:5})", "judged grades"),
    ("Unjudged", "needs a cutoff"),
    ("rbp_resid.5", "takes no parameters"),
])
def test_errors_name_the_problem(name, problem):
    with pytest.raises(MeasureError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        gpukit.parse_measures([name])
