"""Per-query parity with pyndeval (ndeval.c itself, compiled) on random subtopic
qrels and runs with ties, graded and negative grades, unjudged documents,
queries without relevant subtopics, alpha/beta/rel variants, ndeval's -c and
-M, and ir_measures' judged_only, to 1e-9.

pyndeval ranks by score descending, ties by docno *ascending*; gpukit (as
trec_eval and ``ndeval -traditional``) by docno descending. So the test ranks
each query itself (plain Python: score descending, docno descending, cut at
max_depth, judged docs only where asked) and hands pyndeval distinct scores in
that order. ndeval prints NaN for nNRBP where no subtopic has a relevant
document (0/0); gpukit's trec_eval convention gives 0 there.
"""
from __future__ import annotations

import math
import random

import pytest

import gpukit
from gpukit.judgments.subtopics import SubtopicQrels

pyndeval = pytest.importorskip("pyndeval")

CUTS = (1, 2, 3, 5, 10, 20)
TOL = 1e-9
NDEVAL_NAME = {"ERR_IA": "ERR-IA", "nERR_IA": "nERR-IA", "alpha_DCG": "alpha-DCG", "alpha_nDCG": "alpha-nDCG",
               "P_IA": "P-IA", "StRecall": "strec"}


def _random_case(seed: int):
    rnd = random.Random(seed)
    docs = [f"d{i}" for i in range(rnd.randint(3, 30))]
    qrels, run = {}, {}
    for q in range(rnd.randint(1, 6)):
        qid = f"{q + 1}"
        qrels[qid] = {}
        for s in range(1, rnd.randint(1, 7) + 1):
            judged = rnd.sample(docs, rnd.randint(1, len(docs)))
            qrels[qid][str(s)] = {d: rnd.choice([-1, 0, 0, 0, 1, 1, 2, 3]) for d in judged}
        if rnd.random() < 0.8:
            ranked = rnd.sample(docs + [f"u{i}" for i in range(5)], rnd.randint(1, len(docs) + 5))
            run[qid] = {d: float(rnd.randint(0, 6)) for d in ranked}  # ties
    return qrels, run


def _ranked(docs: dict[str, float], max_depth, judged=None) -> list[str]:
    order = sorted(sorted(docs, reverse=True), key=lambda d: docs[d], reverse=True)[:max_depth]
    return [d for d in order if judged is None or d in judged]


def _pyndeval(qrels, run, names, rel, alpha, beta, max_depth, judged_only):
    lines = [(q, s, d, g) for q in qrels for s in sorted(qrels[q], key=int) for d, g in qrels[q][s].items()]
    ev = pyndeval.RelevanceEvaluator(lines, names, relevance_level=rel, alpha=alpha, beta=beta)
    tuples = []
    for q, docs in run.items():
        judged = {d for s in qrels.get(q, {}).values() for d in s} if judged_only else None
        for i, d in enumerate(_ranked(docs, max_depth, judged)):
            tuples.append((q, d, float(10000 - i)))
    return ev.evaluate(tuples)


CONFIGS = [
    # (rel, alpha, beta, max_depth, judged_only)
    (1, 0.5, 0.5, None, False),
    (1, 0.5, 0.5, 4, False),
    (2, 0.5, 0.5, None, False),
    (1, 0.3, 0.8, None, False),
    (1, 0.9, 0.2, 7, False),
    (1, 1.0, 0.5, None, False),
    (1, 0.5, 0.5, None, True),
    (0, 0.5, 0.5, None, False),
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("config", CONFIGS, ids=[f"rel{c[0]}-a{c[1]}-b{c[2]}-M{c[3]}-J{c[4]}" for c in CONFIGS])
def test_per_query_values_equal_pyndeval(seed, config):
    rel, alpha, beta, max_depth, judged_only = config
    qrels, run = _random_case(seed)
    if not set(run) & set(qrels):
        run = {next(iter(qrels)): {"d0": 1.0}}
    ours, theirs = {}, []
    for fam, nd in NDEVAL_NAME.items():
        if judged_only and fam == "StRecall":
            continue  # StRecall has no judged_only (ir_measures): pyndeval scores it on the unfiltered run
        for k in CUTS:
            params = [f"rel={rel}"]
            if fam in ("ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG"):
                params.append(f"alpha={alpha}")
            if judged_only:
                params.append("judged_only=True")
            ours[f"{fam}({','.join(params)})@{k}"] = f"{nd}@{k}"
    for fam, nd in (("NRBP", "NRBP"), ("nNRBP", "nNRBP")) if not judged_only else ():  # no judged_only either
        ours[f"{fam}(rel={rel},alpha={alpha},beta={beta})"] = nd
    ours[f"AP_IA(rel={rel}{',judged_only=True' if judged_only else ''})"] = "MAP-IA"
    theirs = sorted(set(ours.values()))
    expected = _pyndeval(qrels, run, theirs, rel, alpha, beta, max_depth, judged_only)
    report = gpukit.evaluate(SubtopicQrels.from_dict(qrels), gpukit.Run.from_dict(run), list(ours),
                                       convention="trec_eval", max_depth=max_depth)
    # judged_only can empty a ranking: pyndeval then never sees the query, gpukit scores it 0.
    assert set(expected) <= set(report.query_ids) == set(qrels) & set(run)
    checked = 0
    for name, nd in ours.items():
        result = report[gpukit.parse_measure(name)]
        for q, v in zip(report.query_ids, result.per_query.tolist()):
            want = expected[q][nd] if q in expected else 0.0
            want = 0.0 if math.isnan(want) else want
            assert abs(v - want) <= TOL, (name, q, v, want)
            checked += 1
    assert checked >= len(ours)


def test_complete_scores_queries_missing_from_the_run_zero():
    """ndeval -c: judged queries the run lacks count as 0 in the mean."""
    qrels = {"1": {"1": {"a": 1}, "2": {"b": 1}}, "2": {"1": {"a": 1}}}
    run = {"1": {"b": 2.0, "a": 1.0}}
    lines = [(q, s, d, g) for q in qrels for s in qrels[q] for d, g in qrels[q][s].items()]
    one = pyndeval.ndeval(lines, [("1", "b", 2.0), ("1", "a", 1.0)], ["alpha-nDCG@5"])["1"]["alpha-nDCG@5"]
    got = gpukit.evaluate(SubtopicQrels.from_dict(qrels), gpukit.Run.from_dict(run), "alpha_nDCG@5",
                                    convention="trec_eval", complete=True)["alpha_nDCG@5"]
    assert got.per_query.tolist() == [pytest.approx(one, abs=TOL), 0.0]
    assert got.mean == pytest.approx(one / 2, abs=TOL)
