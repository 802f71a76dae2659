"""gpukit.compat.pytrec_eval against pytrec-eval-terrier itself.

Every trec_eval root that the registry and pytrec_eval both have is compared
value by value (1e-12) and key by key (same names, same order) on random
collections with ties, negative grades, run queries without judgments and
judged queries absent from the run, at relevance levels 1 and 2, with and
without judged_docs_only_flag. (The collections keep test_pytrec_eval_parity's
default sizes: with smaller ones, pytrec_eval 0.5.11 itself was seen to hang
in evaluate() on a fresh evaluator after another collection's evaluation.) The roots come from the registry and from
pytrec_eval.supported_measures, so newly registered families are compared
as soon as they exist. pytrec_eval's own unit tests (tests/pytrec_eval_tests.py
of terrierteam/pytrec_eval) are replayed on the compat layer, with their
expected values, and against pytrec_eval.
"""
from __future__ import annotations

import io
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from fixture_paths import TESTS
from test_pytrec_eval_parity import random_collection

from gpukit.compat import pytrec_eval as compat
from gpukit.errors import GpukitError, InputFormatError, MeasureError
from gpukit.families import name_index

pytrec_eval = pytest.importorskip("pytrec_eval")

TOL = 1e-12
DATA = TESTS / "data" / "trec_eval"
ROOTS = sorted(set(pytrec_eval.supported_measures) | set(compat.supported_measures))
#: Roots whose definition changed between the trec_eval that pytrec-eval-terrier
#: bundles (9.x) and trec_eval 10.0, which gpukit follows.
VERSION_DIFFERENCES = {
    root: "pytrec-eval-terrier's trec_eval 9 turns a recall level into (long)(level * R + 0.9) relevant documents, "
    "trec_eval 10.0 (gpukit) into lround(level * R); compared where both agree in test_pytrec_eval_trec_binary"
    for root in ("iprec_at_recall", "11pt_avg")
}


def _root_of(key: str) -> str:
    """The trec_eval root of an output name (ndcg_cut_10 -> ndcg_cut, iprec_at_recall_0.10 -> iprec_at_recall)."""
    return re.fullmatch(r"(.+?)(?:_\d+(?:\.\d+)?)?", key).group(1)


def _assert_same(expected: dict, got: dict) -> None:
    assert list(got) == list(expected)  # same queries, in the run's order
    for q, values in expected.items():
        assert list(got[q]) == list(values), q  # same names, in trec_eval's order
        for key, want in values.items():
            assert abs(got[q][key] - want) <= TOL, f"{key} {q}: pytrec_eval {want!r}, compat {got[q][key]!r}"


def _names(root: str) -> list[set[str]]:
    """The root bare (trec_eval's default parameters) and, for lists, with given values."""
    out = [{root}]
    syntax = name_index().trec.get(root)
    if syntax is not None and syntax[1].kind == "cutoffs":
        out.append({f"{root}.1,3,7", f"{root}_250"})
    elif syntax is not None and syntax[1].kind == "levels":
        out.append({f"{root}.0.25,0.5"})
    return out


@pytest.mark.parametrize("root", ROOTS)
def test_every_measure_matches_pytrec_eval(root):
    if root not in compat.supported_measures:
        pytest.skip(f"gpukit's registry has no trec_eval measure {root!r} yet")
    if root not in pytrec_eval.supported_measures:
        pytest.skip(f"pytrec-eval-terrier {pytrec_eval.__version__} has no measure {root!r}")
    if root in VERSION_DIFFERENCES:
        pytest.skip(VERSION_DIFFERENCES[root])
    for seed, relevance_level, judged_only in [(0, 1, False), (1, 2, True)]:
        qrels, run = random_collection(seed)
        for names in _names(root):
            expected = pytrec_eval.RelevanceEvaluator(qrels, names, relevance_level, judged_only).evaluate(run)
            got = compat.RelevanceEvaluator(qrels, names, relevance_level, judged_only).evaluate(run)
            assert len(expected) >= 10
            _assert_same(expected, got)


def test_all_supported_measures_in_one_evaluator():
    names = (set(compat.supported_measures) & set(pytrec_eval.supported_measures)) - set(VERSION_DIFFERENCES)
    qrels, run = random_collection(4)
    for judged_only in (False, True):
        _assert_same(pytrec_eval.RelevanceEvaluator(qrels, names, 1, judged_only).evaluate(run),
                     compat.RelevanceEvaluator(qrels, names, 1, judged_only).evaluate(run))


def test_float32_score_precision():
    """pytrec_eval ties scores equal in float32 (0.3 + 2e-8 and 0.3), then orders by doc id."""
    qrels = {"q": {"a": 1, "b": 0, "c": 2}}
    run = {"q": {"a": 0.3 + 2e-8, "b": 0.3, "c": 0.1 + 1e-9, "z": 0.1, "i": 7}}
    names = {"recip_rank", "map", "ndcg", "P.1,2"}
    _assert_same(pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run), compat.RelevanceEvaluator(qrels, names).evaluate(run))


def test_scores_beyond_float32_range_tie_as_in_pytrec_eval_without_a_warning():
    """trec_eval's float holds 1e300 and 1e301 as the same infinity: they tie, then
    the doc id decides (b before a). The float32 cast is meant: no RuntimeWarning."""
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 1e301, "b": 1e300, "c": -1e300, "d": 2.5}}
    names = {"recip_rank", "map", "P.1"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    assert expected["q"]["recip_rank"] == 0.5  # the tie, broken by doc id descending
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = compat.RelevanceEvaluator(qrels, names).evaluate(run)
    _assert_same(expected, got)


def test_name_forms_as_pytrec_eval():
    """Merged roots, '.'/'_' parameters, atol cutoffs, trailing text, ignored parameters."""
    qrels, run = random_collection(5)
    for names in [
        {"P_5", "P.10", "P"},  # a bare root adds nothing next to given cutoffs
        {"ndcg_cut_20,4", "ndcg_cut.1,4", "ndcg_cut"},
        {"P.5.5", "recall.10x"},  # C atol: 5.5 is 5; the regex stops at the x
        {"map", "map.5"},  # map takes no parameters: ignored
        {"recall.5,5", "success.3"},
    ]:
        _assert_same(pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run), compat.RelevanceEvaluator(qrels, names).evaluate(run))


def test_evaluator_reused_for_many_runs():
    qrels, _ = random_collection(6)
    names = {"map", "ndcg_cut.1,2,3,1000", "P_5"}
    theirs, ours = pytrec_eval.RelevanceEvaluator(qrels, names), compat.RelevanceEvaluator(qrels, names)
    for seed in (6, 7, 6):
        _, run = random_collection(seed)
        _assert_same(theirs.evaluate(run), ours.evaluate(run))


# -------------------------------------------- pytrec_eval's own unit tests
QREL = {"q1": {"d1": 0, "d2": 1, "d3": 0}, "q2": {"d2": 1, "d3": 1}}


@pytest.mark.parametrize("module", [pytrec_eval, compat], ids=["pytrec_eval", "compat"])
def test_pytrec_ndcg(module):
    qrel = {**QREL, "q10": {}}
    evaluator = module.RelevanceEvaluator(qrel, {"map", "ndcg"})
    cases = [
        ({"q1": {"d1": 1.0, "d2": 0.0, "d3": 1.5}, "q2": {}}, "q1", 0.5),
        ({"q1": {"d1": 1.0, "d2": 2.0, "d3": 1.5}, "q2": {}}, "q1", 1.0),
        ({"q1": {"d1": 4.0, "d2": 2.0, "d3": 1.5}, "q2": {}}, "q1", 0.6309297535714575),
        ({"q1": {"d1": 1.0, "d2": 2.0, "d3": 1.5}}, "q1", 1.0),
        ({"q1": {}, "q2": {"d1": 1.0, "d2": 0.0, "d3": 1.5}}, "q2", 0.9197207891481876),
    ]
    for run, q, want in cases:
        assert evaluator.evaluate(run)[q]["ndcg"] == pytest.approx(want, abs=1e-7)
    judged = module.RelevanceEvaluator(qrel, {"map", "ndcg"}, judged_docs_only_flag=True)
    assert judged.evaluate({"q1": {}, "q2": {"d1": 1.0, "d2": 0.0, "d3": 1.5}})["q2"]["ndcg"] == pytest.approx(1.0)
    assert "q10" not in judged.evaluate({"q1": {}, "q2": {"d1": 1.0, "d2": 0.0, "d3": 1.5}, "q10": {"d1": 1.0}})


ALL_TREC = {
    "11pt_avg", "binG", "bpref", "G", "gm_bpref", "gm_map", "infAP", "map", "ndcg", "ndcg_rel", "num_nonrel_judged_ret",
    "num_q", "num_rel", "num_rel_ret", "num_ret", "recip_rank", "relstring", "Rndcg", "Rprec", "runid", "set_F", "set_map",
    "set_P", "set_recall", "set_relative_P", "utility",
} | {f"iprec_at_recall_{r / 10:.2f}" for r in range(11)} | {f"Rprec_mult_{r / 5:.2f}" for r in range(1, 11)} | {
    f"{m}_{k}" for m in ("map_cut", "ndcg_cut", "P", "recall", "relative_P") for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
} | {"success_1", "success_5", "success_10"}
SET = {"num_q", "num_rel", "num_rel_ret", "num_ret", "runid", "set_F", "set_map", "set_P", "set_recall", "set_relative_P", "utility"}
OFFICIAL = {
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank", "P_5", "P_10", "P_15",
    "P_20", "P_30", "P_100", "P_200", "P_500", "P_1000",
} | {f"iprec_at_recall_{r / 10:.2f}" for r in range(11)}


@pytest.mark.parametrize("nicknames,expected", [
    ({"all_trec"}, ALL_TREC), ({"set"}, SET), ({"official"}, OFFICIAL), ({"official", "set", "ndcg"}, OFFICIAL | SET | {"ndcg"}),
], ids=["all_trec", "set", "official", "mixed"])
def test_pytrec_nicknames(nicknames, expected):
    """pytrec_eval's expected names, less those whose root gpukit lacks (left out with a warning)."""
    run = {"q1": {}, "q2": {}}
    assert set(pytrec_eval.RelevanceEvaluator(QREL, nicknames).evaluate(run)["q1"]) == expected
    implemented = {k for k in expected if _root_of(k) in compat.supported_measures}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compat.RelevanceEvaluator(QREL, nicknames).evaluate(run)
    assert set(got["q1"]) == implemented
    left_out = {_root_of(k) for k in expected} - compat.supported_measures
    assert bool(caught) == bool(left_out)
    for root in left_out:
        assert root in str(caught[0].message)


def test_supported_nicknames_are_pytrec_evals_less_unimplemented():
    assert set(compat.supported_nicknames) == set(pytrec_eval.supported_nicknames)
    implemented = set(name_index().trec) | {"runid", "relstring"}
    for name, roots in pytrec_eval.supported_nicknames.items():
        assert compat.supported_nicknames[name] == set(roots) & implemented, name


@pytest.mark.parametrize("module", [pytrec_eval, compat], ids=["pytrec_eval", "compat"])
def test_pytrec_ndcg_cut(module):
    run = {"q1": {"d1": 1.0, "d2": 0.0, "d3": 1.5}, "q2": {}}
    assert module.RelevanceEvaluator(QREL, {"ndcg_cut.3"}).evaluate(run)["q1"]["ndcg_cut_3"] == pytest.approx(0.5)
    top = {"q1": {"d1": 1.0, "d2": 2.0, "d3": 1.5}, "q2": {}}
    assert module.RelevanceEvaluator(QREL, {"ndcg_cut.1"}).evaluate(top)["q1"]["ndcg_cut_1"] == pytest.approx(1.0)
    evaluator = module.RelevanceEvaluator(QREL, {"ndcg_cut.1,2,3,1000"})
    for _ in range(2):  # the same result again (cvangysel/pytrec_eval issue 38)
        result = evaluator.evaluate(run)["q1"]
        assert result == pytest.approx({"ndcg_cut_1": 0.0, "ndcg_cut_2": 0.0, "ndcg_cut_3": 0.5, "ndcg_cut_1000": 0.5})


@pytest.mark.parametrize("module", [pytrec_eval, compat], ids=["pytrec_eval", "compat"])
def test_pytrec_empty(module):
    run = {"q1": {"d1": 1.0, "d2": 0.0, "d3": 1.5}, "q2": {}}
    assert module.RelevanceEvaluator(QREL, {"map", "ndcg"}).evaluate({}) == {}
    assert module.RelevanceEvaluator(QREL, set()).evaluate(run) == {"q1": {}, "q2": {}}
    assert module.RelevanceEvaluator({}, {"map", "ndcg"}).evaluate(run) == {}
    assert module.RelevanceEvaluator({}, {"map", "ndcg"}).evaluate({}) == {}
    assert module.RelevanceEvaluator(QREL, set()).evaluate({}) == {}
    assert module.RelevanceEvaluator({}, set()).evaluate(run) == {}
    assert module.RelevanceEvaluator({}, {}).evaluate({}) == {}


def test_run_of_empty_rankings_only():
    run = {"q1": {}, "q2": {}}
    names = {"map", "P_5", "num_ret", "ndcg"}
    _assert_same(pytrec_eval.RelevanceEvaluator(QREL, names).evaluate(run), compat.RelevanceEvaluator(QREL, names).evaluate(run))


@pytest.mark.parametrize("module", [pytrec_eval, compat], ids=["pytrec_eval", "compat"])
def test_pytrec_measure_params(module):
    run = {"q1": {"d1": 1.0, "d2": 0.0, "d3": 1.5}, "q2": {}}
    evaluator = module.RelevanceEvaluator(QREL, ["ndcg_cut", "ndcg_cut.1,4", "ndcg_cut_20,4", "ndcg_cut_15", "recall.1000", "P"])
    assert set(evaluator.evaluate(run)["q1"]) == {
        "ndcg_cut_1", "ndcg_cut_4", "ndcg_cut_15", "ndcg_cut_20", "recall_1000",
        "P_200", "P_15", "P_10", "P_5", "P_30", "P_100", "P_20", "P_500", "P_1000",
    }


def _trec_eval_all(path: Path) -> dict[str, float]:
    out = {}
    for line in path.read_text().splitlines():
        name, qid, value = (p.strip() for p in line.split("\t"))
        if qid == "all" and name != "runid":
            out[name] = float(value)
    return out


@pytest.mark.parametrize("run_file,qrels_file,out_file,kwargs", [
    ("results.test", "qrels.test", "out.test", {}),
    ("results.test", "qrels.rel_level", "out.test.aql", {"relevance_level": 2}),
])
def test_pytrec_traditional(run_file, qrels_file, out_file, kwargs):
    """pytrec_eval's integration test: parse_* and compute_aggregated_measure against trec_eval's output."""
    expected = {k: v for k, v in _trec_eval_all(DATA / out_file).items() if _root_of(k) in compat.supported_measures}
    assert len(expected) >= 10
    with open(DATA / qrels_file) as f:
        qrel = compat.parse_qrel(f)
    with open(DATA / run_file) as f:
        run = compat.parse_run(f)
    with open(DATA / qrels_file) as f:
        assert qrel == pytrec_eval.parse_qrel(f)
    with open(DATA / run_file) as f:
        assert run == pytrec_eval.parse_run(f)
    results = compat.RelevanceEvaluator(qrel, {_root_of(k) for k in expected}, **kwargs).evaluate(run)
    for measure, want in expected.items():
        got = compat.compute_aggregated_measure(measure, [values[measure] for values in results.values()])
        assert got == pytest.approx(want, abs=5e-4), measure


def test_compute_aggregated_measure_is_pytrec_evals():
    values = [0.25, -1.5, 3.0, 0.0]
    for measure in ("num_ret", "gm_map", "map", "P_5"):
        assert compat.compute_aggregated_measure(measure, values) == pytrec_eval.compute_aggregated_measure(measure, values)


# ------------------------------------------------------------------ errors
def test_unknown_and_unimplemented_measures():
    with pytest.raises(MeasureError, match="unsupported measure nope"):
        compat.RelevanceEvaluator(QREL, {"nope"})
    with pytest.raises(ValueError):  # pytrec_eval's error type, too
        compat.RelevanceEvaluator(QREL, {"P@5"})
    missing = [r for r in pytrec_eval.supported_measures if r not in compat.supported_measures]
    for root in missing[:3]:
        with pytest.raises(MeasureError, match="does not implement"):
            compat.RelevanceEvaluator(QREL, {root})


def test_bad_arguments_are_type_errors_as_in_pytrec_eval():
    for args, kwargs in [((QREL, {"map"}), {"relevance_level": 0}), (({1: {"d": 1}}, {"map"}), {}), (({"q": {"d": 1.5}}, {"map"}), {})]:
        with pytest.raises(TypeError):
            pytrec_eval.RelevanceEvaluator(*args, **kwargs)
        with pytest.raises(TypeError) as info:
            compat.RelevanceEvaluator(*args, **kwargs)
        assert isinstance(info.value, GpukitError)
    with pytest.raises(TypeError):
        compat.RelevanceEvaluator(QREL, {"map"}).evaluate({"q1": {"d1": "high"}})


def test_parse_errors_name_the_line():
    with pytest.raises(AssertionError):
        pytrec_eval.parse_run(["q1 Q0 d1 1 2.0 t", "q1 Q0 d1 2 1.0 t"])
    with pytest.raises(AssertionError) as info:
        compat.parse_run(["q1 Q0 d1 1 2.0 t", "q1 Q0 d1 2 1.0 t"])
    assert isinstance(info.value, InputFormatError) and info.value.line == 2
    with pytest.raises(InputFormatError, match=r"qrels.txt:2: expected 4 fields"):
        f = io.StringIO("q1 0 d1 1\nq1 0 d2\n")
        f.name = "qrels.txt"
        compat.parse_qrel(f)


# ----------------------------------------------------------------- install
def test_install_is_opt_in_and_reversible():
    real = sys.modules.get("pytrec_eval")
    assert real is pytrec_eval  # nothing installed by importing gpukit.compat
    module = compat.install()
    try:
        import pytrec_eval as imported

        assert imported is compat is module
        compat.install()  # twice is harmless
    finally:
        compat.uninstall()
    import pytrec_eval as again

    assert again is real


@pytest.mark.slow
def test_unmodified_ir_measures_uses_the_compat_layer():
    """ir_measures' pytrec_eval provider, imported after install(), runs on gpukit."""
    qrels, run = random_collection(8)
    code = (
        "import json, sys\n"
        "from gpukit.compat import pytrec_eval\n"
        "pytrec_eval.install()\n"
        "import ir_measures\n"
        "qrels, run = json.load(sys.stdin)\n"
        "p = ir_measures.pytrec_eval\n"
        "out = {str(m): v for m, v in p.calc_aggregate([ir_measures.nDCG@10, ir_measures.AP, ir_measures.P@5], qrels, run).items()}\n"
        "assert p.pytrec_eval is pytrec_eval, p.pytrec_eval\n"
        "print(json.dumps(out))\n"
    )
    import json

    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps([qrels, run]), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    import ir_measures

    want = {str(m): v for m, v in ir_measures.pytrec_eval.calc_aggregate(
        [ir_measures.nDCG @ 10, ir_measures.AP, ir_measures.P @ 5], qrels, run).items()}
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-12)
