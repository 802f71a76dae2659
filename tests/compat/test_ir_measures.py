"""gpukit.compat.ir_measures: a registry-driven ir_measures provider equal to the anchor providers.

Every measure the provider declares (with rel=1 and rel=2, a cutoff and, where
optional, none) is computed by gpukit and by each of ir_measures' pytrec_eval,
msmarco, cwl_eval and gdeval providers that supports it (except cwl_eval's AP, which
divides by the relevant documents *retrieved*; ir_measures' default pipeline
sends AP to pytrec_eval, which gpukit equals), on a random collection with
graded and negative grades, unjudged retrieved documents, queries missing from
the run or the qrels, and no score ties (the anchors break ties differently).
"""
from __future__ import annotations

import importlib.util
import shutil

import pytest
from random_collections import random_graded_collection

ir_measures = pytest.importorskip("ir_measures")

from gpukit.compat.ir_measures import GpukitProvider, register, to_gpukit  # noqa: E402

ANCHORS = ["pytrec_eval", "msmarco", "judged"] + (["cwl_eval"] if importlib.util.find_spec("cwl") else []) + (["gdeval"] if shutil.which("perl") else [])
# gdeval prints 5 decimals; the others are float64 computations of the same sums.
TOL = {"pytrec_eval": 1e-9, "msmarco": 1e-9, "judged": 1e-9, "cwl_eval": 1e-6, "gdeval": 5.1e-6}


def _concrete(proto):
    """Concrete measures for a declared prototype: rel 1 and 2, cutoff 5 / none / recall 0.3."""
    params = proto.params
    cut = repr(params.get("cutoff", params.get("recall", "absent")))
    base = proto.NAME
    out = []
    for rel in ([1, 2] if "rel" in params and repr(params["rel"]) == "ANY" else [None]):
        for c in ([] if cut in ("NOT_PROVIDED", "'absent'") else [0.3 if "recall" in params else 5]) + ([] if cut == "REQUIRED" else [None]):
            args = {} if rel is None else {"rel": rel}
            if c is not None:
                args["recall" if "recall" in params else "cutoff"] = c
            if repr(params.get("max_rel")) == "REQUIRED":  # cwl_eval's gain scale (SDCG, INST, ...)
                args["max_rel"] = 3
            out.append(ir_measures.measures.registry[base](**args))
    return out


def test_declared_measures_come_from_the_registry():
    provider = GpukitProvider()
    declared = {p.NAME for p in provider.SUPPORTED_MEASURES}
    assert {"nDCG", "AP", "P", "R", "RR", "Rprec", "Bpref", "Success", "ERR", "RBP", "SetF", "infAP", "NumRet"} <= declared
    assert {"SDCG", "NERR8", "NERR9", "NERR10", "NERR11", "INST", "INSQ", "BPM"} <= declared  # cwl_eval's, with max_rel
    # Defined differently: IPrec (trec_eval 9 vs 10 rounding); Compat (the compat provider's tie orders,
    # tests/families/test_ir_measures_compat.py).
    assert not declared & {"IPrec", "Compat"}
    assert "Judged" in declared
    assert provider.supports(ir_measures.parse_measure("P(judged_only=True)@5"))  # trec_eval's -J
    assert str(to_gpukit(ir_measures.parse_measure("nDCG(judged_only=True)@10"))) == "nDCG(judged_only=True)@10"
    assert not provider.supports(ir_measures.parse_measure("alpha_nDCG@10"))
    assert str(to_gpukit(ir_measures.parse_measure("NumRet(rel=2)"))) == "NumRelRet(rel=2)"
    assert str(to_gpukit(ir_measures.parse_measure("nDCG(dcg='exp-log2')@10"))) == "nDCG(gain=exp)@10"


def test_every_declared_measure_equals_the_anchor_providers():
    qrels, run = random_graded_collection()
    provider = GpukitProvider()
    measures = sorted({m for p in provider.SUPPORTED_MEASURES for m in _concrete(p)} |
                      {ir_measures.parse_measure(n) for n in ["nDCG(dcg='exp-log2')@10", "nDCG(gains={0:0,1:1,2:5,3:9})@5", "RBP(p=0.5)", "SetF(beta=0.5)", "SetP(relative=True)"]}, key=str)
    ours = {(m.measure, m.query_id): m.value for m in provider.iter_calc(measures, qrels, run)}
    compared, unanchored, used = 0, [], set()
    for measure in measures:
        anchors = [a for a in ANCHORS if ir_measures.providers.registry[a].supports(measure)
                   and not (a == "cwl_eval" and measure.NAME == "AP")]
        if not anchors:
            unanchored.append(str(measure))
        for name in anchors:
            theirs = list(ir_measures.providers.registry[name].iter_calc([measure], qrels, run))
            assert len(theirs) == len(qrels), (name, measure)
            for metric in theirs:
                got = ours[(measure, metric.query_id)]
                assert abs(got - metric.value) <= TOL[name], f"{measure} q{metric.query_id}: {name} {metric.value}, gpukit {got}"
            compared += 1
            used.add(name)
    assert compared >= 40 and used == set(ANCHORS), (compared, used)
    # No anchor computes these: graded RBP (cwl_eval wants rel=), ERR without a cutoff
    # (gdeval needs one), NumRel at rel=2 (pytrec_eval's provider only takes rel=1). Accuracy's
    # provider divides by zero on some queries: compared query by query in test_ir_measures_names.
    assert {m for m in unanchored if not m.startswith("Accuracy")} <= {"RBP", "RBP(p=0.5)", "ERR", "NumRel(rel=2)"}, unanchored


def test_register_puts_gpukit_first_and_calc_aggregate_matches_pytrec_eval():
    qrels, run = random_graded_collection(5)
    measures = [ir_measures.nDCG @ 10, ir_measures.AP, ir_measures.P(rel=2) @ 5, ir_measures.Rprec]
    try:
        register()
        assert ir_measures.DefaultPipeline.providers[0] is ir_measures.gpukit
        evaluator = ir_measures.evaluator(measures, qrels)
        assert type(evaluator).__module__ == "gpukit.compat.ir_measures"  # gpukit answered them all
        ours = ir_measures.gpukit.calc_aggregate(measures, qrels, run)
        assert ir_measures.calc_aggregate(measures, qrels, run) == ours
        theirs = ir_measures.pytrec_eval.calc_aggregate(measures, qrels, run)
        assert ours == pytest.approx(theirs, abs=1e-12)
    finally:
        register(first=False)
    assert all(getattr(p, "NAME", "") != "gpukit" for p in ir_measures.DefaultPipeline.providers)


#: ir_measures names with judged_only=True: every qrels family of ir_measures that has the parameter
#: (IPrec aside: DIFFERENT), with the other parameters varied.
JUDGED_ONLY = ["P(judged_only=True)@5", "P(judged_only=True,rel=2)@10", "RR(judged_only=True)", "RR(judged_only=True,rel=2)",
               "Rprec(judged_only=True)", "AP(judged_only=True)", "AP(judged_only=True)@10", "AP(judged_only=True,rel=2)",
               "nDCG(judged_only=True)", "nDCG(judged_only=True)@10", "nDCG(judged_only=True,gains={0:0,1:1,2:5,3:9})@5",
               "R(judged_only=True)@10", "SetAP(judged_only=True)", "SetF(judged_only=True)",
               "SetF(judged_only=True,beta=0.5)", "SetP(judged_only=True)", "SetP(judged_only=True,relative=True)",
               "Success(judged_only=True)@3", "Success(judged_only=True,rel=2)@10"]


def test_judged_only_equals_the_pytrec_eval_provider():
    """ir_measures' judged_only=True (its pytrec_eval provider: trec_eval -J, the ranking without its
    unjudged documents) through the provider and through gpukit.evaluate with the same names, on a
    collection with unjudged retrieved documents and negative grades."""
    import gpukit

    qrels, run = random_graded_collection(7)
    measures = [ir_measures.parse_measure(n) for n in JUDGED_ONLY]
    names = {m.NAME for m in measures}
    with_param = {cls.NAME for cls in ir_measures.measures.registry.values() if "judged_only" in cls.SUPPORTED_PARAMS}
    # Left out: IPrec (DIFFERENT) and the subtopic measures (pyndeval's: tests/families/test_pyndeval_diversity.py).
    assert names == with_param - {"IPrec", "AP_IA", "ERR_IA", "nERR_IA", "P_IA", "alpha_DCG", "alpha_nDCG"}, with_param
    provider = GpukitProvider()
    ours = {(m.measure, m.query_id): m.value for m in provider.iter_calc(measures, qrels, run)}
    in_both = sorted(set(qrels) & set(run))
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict({q: run[q] for q in in_both}),
                             [str(m) for m in measures], convention="trec_eval")
    pytrec = ir_measures.providers.registry["pytrec_eval"]
    changed = 0
    for measure in measures:
        assert provider.supports(measure) and pytrec.supports(measure), measure
        plain = {(m.query_id): m.value for m in pytrec.iter_calc([measure.__class__(**{**measure.params, "judged_only": False})], qrels, run)}
        direct = dict(zip(report.query_ids, report[str(measure)].per_query.tolist()))
        for metric in pytrec.iter_calc([measure], qrels, run):
            assert abs(ours[(measure, metric.query_id)] - metric.value) <= 1e-9, (measure, metric.query_id)
            if metric.query_id in direct:
                assert abs(direct[metric.query_id] - metric.value) <= 1e-9, (measure, metric.query_id)
            changed += abs(plain[metric.query_id] - metric.value) > 1e-9
    assert changed >= 50  # dropping the unjudged documents changes values: the parameter is exercised
