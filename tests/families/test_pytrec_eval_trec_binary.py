"""trec_eval's further binary measures: gpukit (convention="trec_eval") against pytrec_eval.

Per query, on the random collections of test_pytrec_eval_parity (score ties,
graded qrels, unjudged and negative-grade documents, R = 0 queries), for
gm_map, gm_bpref, iprec_at_recall, 11pt_avg, relative_P, Rprec_mult, infAP,
set_P, set_relative_P, set_recall, set_map, set_F, num_nonrel_judged_ret,
utility and num_q, with their default and given parameters, and the
equivalents of trec_eval's -l (relevance_level), -M (the run cut to its top
M documents before pytrec_eval sees it) and -c (a query the run lacks is
given trec_eval's stand-in ranking, one unjudged document; trec_eval then
resets the default-weight utility to 0, trec_eval.c). Custom utility weights are not accepted
by pytrec_eval; trec_eval's own outputs cover them (test_trec_eval_outputs).

pytrec_eval-terrier bundles a trec_eval whose iprec_at_recall and 11pt_avg
turn a level into a number of relevant documents as trec_eval 9 did,
(long)(level * R + 0.9); trec_eval 10.0 (m_iprec_at_recall.c) rounds,
lround(level * R), and its expected outputs (test_trec_eval_outputs) tell
the two apart. Those two measures are compared here on the queries where
both conversions give the same number for every level involved.
"""
from __future__ import annotations

import math
import re
from collections import Counter

import pytest
from fixture_paths import TESTS
from reference import rank
from test_pytrec_eval_parity import random_collection

import gpukit

pytrec_eval = pytest.importorskip("pytrec_eval")

TOL = 1e-9
LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
#: trec_eval's stand-in document for a query the run lacks under -c (trec_eval.c).
BOGUS_DOC = "ceci_nest_pas_un_docno"

# One pytrec_eval evaluator each: it prints given 11pt_avg / set_F / utility
# parameters under the bare name, so two settings cannot share one.
INVOCATIONS = [
    (
        {"gm_map", "gm_bpref", "iprec_at_recall", "11pt_avg", "relative_P", "Rprec_mult", "infAP", "set_P",
         "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "utility", "num_q"},
        {
            "gm_map": "GMAP", "gm_bpref": "GMBpref", "11pt_avg": "IPrecAvg", "infAP": "infAP", "set_P": "SetP",
            "set_relative_P": "SetP(relative=True)", "set_recall": "SetR", "set_map": "SetAP", "set_F": "SetF",
            "num_nonrel_judged_ret": "NumNonRelJudgedRet", "utility": "Utility", "num_q": "NumQ",
            **{f"iprec_at_recall_{r:3.2f}": f"IPrec@{r}" for r in LEVELS},
            **{f"relative_P_{k}": f"RelativeP@{k}" for k in CUTS},
            **{f"Rprec_mult_{x:3.2f}": f"RprecMult(mult={x})" for x in MULTS},
        },
    ),
    (
        {"iprec_at_recall.0.05,0.25,0.33,0.45,0.95", "11pt_avg.0.25,0.5,0.75", "relative_P.1,3,7,50",
         "Rprec_mult.0.05,0.5,1.25,3.0", "set_F.0.5"},
        {
            **{f"iprec_at_recall_{r:3.2f}": f"IPrec@{r}" for r in (0.05, 0.25, 0.33, 0.45, 0.95)},
            "11pt_avg": "IPrecAvg(levels=0.25;0.5;0.75)",
            **{f"relative_P_{k}": f"RelativeP@{k}" for k in (1, 3, 7, 50)},
            **{f"Rprec_mult_{x:3.2f}": f"RprecMult(mult={x})" for x in (0.05, 0.5, 1.25, 3.0)},
            "set_F": "SetF(beta=0.5)",
        },
    ),
    # (pytrec_eval's trec_eval also drops repeated 11pt_avg levels, which 10.0 counts; the reference test has them)
    ({"11pt_avg.0.2,0.9", "set_F.2.5"}, {"11pt_avg": "IPrecAvg(levels=0.2;0.9)", "set_F": "SetF(beta=2.5)"}),
    ({"set_F.0"}, {"set_F": "SetF(beta=0)"}),
]
GEOMETRIC = {"gm_map", "gm_bpref"}  # pytrec_eval gives log(max(value, 1e-5)) per query
SUMMED = {"num_nonrel_judged_ret", "num_q"}


def _levels(name: str) -> tuple[float, ...] | None:
    """Recall levels of an IPrec / IPrecAvg name (None for other measures)."""
    if name.startswith("IPrec@"):
        return (float(name[len("IPrec@"):]),)
    if name == "IPrecAvg":
        return LEVELS
    m = re.fullmatch(r"IPrecAvg\(levels=([\d.;]+)\)", name)
    return tuple(float(v) for v in m.group(1).split(";")) if m else None


def _same_count_in_both_trec_eval_versions(levels: tuple[float, ...], num_rel: int) -> bool:
    """(long)(x + 0.9) (trec_eval 9, in pytrec_eval) == lround(x) (trec_eval 10) for x = level * R."""
    for level in levels:
        x = level * num_rel
        if math.floor(x + 0.9) != math.floor(x) + (x - math.floor(x) >= 0.5):
            return False
    return True


def _cut(run: dict, depth: int | None) -> dict:
    """The run as trec_eval -M sees it: each ranking cut to its top ``depth`` (trec_eval's tie rule)."""
    if depth is None:
        return run
    return {q: {d: docs[d] for d in rank(docs, depth)} for q, docs in run.items()}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("relevance_level", [1, 2])
@pytest.mark.parametrize("max_depth", [None, 40])
@pytest.mark.parametrize("complete", [False, True], ids=["", "c"])
def test_matches_pytrec_eval(seed, relevance_level, max_depth, complete):
    qrels, run = random_collection(seed)
    missing = sorted(set(qrels) - set(run))
    assert missing  # the collection has qrels queries the run does not answer
    run_for_pytrec = _cut(run, max_depth)
    if complete:
        run_for_pytrec = {**run_for_pytrec, **{q: {BOGUS_DOC: 1.0} for q in missing}}
    compared: Counter[str] = Counter()
    for measures, names in INVOCATIONS:
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=relevance_level)
        expected = evaluator.evaluate(run_for_pytrec)
        assert names.keys() <= next(iter(expected.values())).keys()
        report = gpukit.evaluate(
            gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), list(names.values()), convention="trec_eval",
            complete=complete, max_depth=max_depth, relevance_level=relevance_level,
        )
        assert report.query_ids == sorted(expected)
        for key, name in names.items():
            result = report[gpukit.parse_measures([name], rel=relevance_level)[0]]
            assert result.evaluated == len(report.query_ids) and result.omitted == 0, key
            want = {q: expected[q][key] for q in report.query_ids}
            if key == "utility" and complete:
                want.update({q: 0.0 for q in missing})  # trec_eval resets utility of a stand-in ranking
            levels = _levels(name)
            for q, got in zip(report.query_ids, result.per_query.tolist()):
                num_rel = sum(1 for g in qrels[q].values() if g >= relevance_level)
                if levels is not None and not _same_count_in_both_trec_eval_versions(levels, num_rel):
                    continue
                compared[key] += 1
                if key in GEOMETRIC:
                    got = math.log(max(got, 1e-5))
                assert abs(got - want[q]) <= TOL, f"{key} {q}: pytrec_eval {want[q]}, gpukit {got}"
            if levels is not None:
                continue  # the mean mixes queries where the versions differ
            values = list(want.values())
            if key in GEOMETRIC:
                mean = math.exp(sum(values) / len(values))
            elif key in SUMMED:
                mean = sum(values)
            else:
                mean = sum(values) / len(values)
            assert math.isclose(result.mean, mean, rel_tol=1e-12, abs_tol=TOL), key
    # every measure was compared on several queries (IPrec levels 0 and 1 convert alike in both versions)
    assert min(compared.values()) >= 3 and compared["iprec_at_recall_0.00"] >= 20, compared


def test_collections_exercise_the_measures():
    """The random collections reach the cases the measures distinguish: pooled-but-unjudged
    documents retrieved (infAP), R = 0 queries, rankings (cut at 40) shorter than R * 2 (Rprec_mult)."""
    qrels, run = random_collection(0)
    ranked = {q: [qrels[q].get(d) for d in rank(docs)] for q, docs in run.items() if q in qrels}
    assert sum(1 for grades in ranked.values() for g in grades if g is not None and g < 0) > 20
    assert any(not any(g >= 1 for g in qrels[q].values()) for q in ranked)
    assert any(min(len(grades), 40) < 2 * sum(1 for g in qrels[q].values() if g >= 1) for q, grades in ranked.items())


# --------------------------------------------------------- names and errors
DATA = TESTS / "data" / "trec_eval"
MY_TREC_ROOTS = ("gm_map", "gm_bpref", "iprec_at_recall", "11pt_avg", "relative_P", "Rprec_mult", "infAP", "set_",
                 "num_nonrel_judged_ret", "utility", "num_q")


def _printed_names(path) -> list[str]:
    names = {line.split("\t")[0].strip() for line in path.read_text().splitlines()}
    return sorted(n for n in names if n.startswith(MY_TREC_ROOTS))


@pytest.mark.parametrize("expected_file", ["out.test.a", "out.test.meas_params"])
def test_trec_names_are_the_names_trec_eval_prints(expected_file):
    """Each measure's trec_eval output name is the one trec_eval printed (out.test.a:
    defaults; out.test.meas_params: given parameters), and it parses back."""
    from trec_eval_names import to_gpukit

    from gpukit.report import trec_name

    names = _printed_names(DATA / expected_file)
    assert len(names) >= (30 if expected_file == "out.test.a" else 8)
    for printed in names:
        [m] = gpukit.parse_measures([to_gpukit(printed)])
        if printed == "11pt_avg_.25,.5,.75":  # printed as given; gpukit writes the values
            assert trec_name(m) == "11pt_avg_0.25,0.5,0.75"
        else:
            assert trec_name(m) == printed
        assert gpukit.parse_measures([trec_name(m)]) == [m]


@pytest.mark.parametrize(
    "name, problem",
    [
        ("IPrecAvg(levels=0.5;0.25)", "ascending"),
        ("11pt_avg.0.5,1.5", r"\[0, 1\]"),
        ("utility.1,2,3", "4 numbers"),
        ("Utility(weights=1;x;0;0)", "list of numbers"),
        ("set_F.1,2", "one number"),
        ("SetF(beta=-1)", ">= 0"),
        ("RprecMult(mult=0)", "> 0"),
        ("SetP(relative=maybe)", "True or False"),
        ("IPrec@1.5", r"\[0, 1\]"),
        ("IPrec", "needs a cutoff"),
        ("NumQ(rel=2)", "no rel"),
    ],
)
def test_bad_parameters_are_named(name, problem):
    with pytest.raises(gpukit.errors.MeasureError, match=problem):
        gpukit.parse_measures([name])
