"""SDCG, NERR8-11, INST, INSQ and BPM against ir_measures' cwl_eval provider (the cwl package).

The provider builds cwl_eval's rankings from the run sorted by score with
Python's stable sort, so ties keep the run's order; the run is handed over
in gpukit's order (score descending, doc id descending) so both read the
same ranking. cwl_eval's conventions, which gpukit keeps: negative grades
count as 0, unjudged documents gain 0, gains (clip(grade, min_rel, max_rel) -
min_rel) / (max_rel - min_rel), the ranking is read to depth 1000 and
padded with zero gain to it, every qrels query is scored (0 without a
ranking), run queries without judgments are ignored. Values to 1e-9.
"""
from __future__ import annotations

import logging
import math
import random

import pytest
from reference import rank, reference_evaluate
from test_ir_measures_user_models import _collection as graded_collection

import gpukit

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("cwl")
logging.getLogger("ir_measures.cwl_eval").setLevel(logging.ERROR)  # its min_rel/max_rel notices

TOL = 1e-9
NAMES = [
    "SDCG(max_rel=3)@10", "SDCG(max_rel=4)@1", "SDCG(min_rel=1,max_rel=3)@5", "SDCG(max_rel=2)@2000",
    "NERR8(max_rel=3)@10", "NERR8(max_rel=4)@3", "NERR8(max_rel=2)@1500",
    "NERR9(max_rel=3)@10", "NERR9(min_rel=1,max_rel=4)@50",
    "NERR10(max_rel=3)", "NERR10(p=0.5,max_rel=4)", "NERR10(p=1,max_rel=2)",
    "NERR11(max_rel=3)", "NERR11(T=2.5,max_rel=4)",
    "INST(max_rel=3)", "INST(T=2,max_rel=4)", "INST(T=0.3,min_rel=1,max_rel=2)", "INST(T=0.001,max_rel=2)",
    "INST(T=1000000,max_rel=4)",
    "INSQ(max_rel=3)", "INSQ(T=3,max_rel=4)",
    "BPM(max_rel=3)@10", "BPM(T=2,max_rel=4)@5", "BPM(T=0.5,max_rel=2)@1100", "BPM(T=1.5,max_rel=3)@3",
]


def _collection(seed: int):
    """gdeval's parity collection (grades -2..4, score ties, unjudged retrieved documents, queries
    without relevant documents, qrels queries the run lacks, a run query without judgments), plus
    one ranking past depth 1000 judged around rank 1000."""
    qrels, run = graded_collection(seed)
    rng = random.Random(seed)
    deep = [f"x{i}" for i in range(1100)]
    run["999"] = {d: float(1100 - i) for i, d in enumerate(deep)}
    qrels["999"] = {d: rng.choice([0, 1, 3]) for d in deep[900:]}
    return qrels, run


def _in_gpukit_order(run, max_depth=None):
    return {q: {d: docs[d] for d in rank(docs, max_depth)} for q, docs in run.items()}


def _cwl_eval(qrels, run, names):
    provider = ir_measures.providers.registry["cwl_eval"]
    measures = {ir_measures.parse_measure(n): n for n in names}
    out = {n: {} for n in names}
    for metric in provider.evaluator(list(measures), qrels).iter_calc(run):
        out[measures[metric.measure]][metric.query_id] = float(metric.value)
    return out


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("convention", ["gpukit", "trec_eval"])
@pytest.mark.parametrize("max_depth", [None, 4])
def test_cwl_families_match_cwl_eval(seed, convention, max_depth):
    qrels, run = _collection(seed)
    expected = _cwl_eval(qrels, _in_gpukit_order(run, max_depth), NAMES)
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), NAMES, convention=convention,
                             complete=True, max_depth=max_depth)
    ref = reference_evaluate(qrels, run, NAMES, convention=convention, complete=True, max_depth=max_depth)
    assert sorted(report.query_ids) == sorted(qrels)
    for name in NAMES:
        result = report[name]
        assert sorted(expected[name]) == sorted(qrels), name
        assert result.evaluated == len(qrels) and result.omitted == 0, name
        assert any(v > 0 for v in expected[name].values()), name
        got = dict(zip(report.query_ids, result.per_query.tolist()))
        for q, want in expected[name].items():
            assert abs(got[q] - want) <= TOL, f"{name} {q}: cwl_eval {want}, gpukit {got[q]}"
            assert abs(ref["measures"][name]["per_query"][q] - want) <= TOL, f"reference {name} {q}"
        assert math.isclose(result.mean, sum(expected[name].values()) / len(qrels), abs_tol=TOL), name


def test_depth_1000_cuts_the_ranking_and_pads_the_normaliser():
    """A relevant document at rank 1001 is never read; one ranking of a single relevant
    document is normalised over 1000 ranks (INSQ), not over its own length."""
    run = {"1": {f"d{i:04d}": float(2000 - i) for i in range(1001)}}
    qrels = {"1": {"d1000": 1}}
    names = ["INSQ(max_rel=1)", "NERR10(max_rel=1)", "SDCG(max_rel=1)@2000"]
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names)
    assert all(report[n].mean == 0.0 for n in names)
    short = {"1": {"a": 1.0}}
    report = gpukit.evaluate(gpukit.Qrels.from_dict({"1": {"a": 1}}), gpukit.Run.from_dict(short), names)
    weights = [(2 / (i + 1)) ** 2 for i in range(1, 1001)]  # INSQ, T = 1: C_i = (2T / (i + 2T - 1))^2
    assert report["INSQ(max_rel=1)"].mean == pytest.approx(1 / sum(weights), rel=1e-12)
    # cwl_eval's depth, not the published unbounded INSQ: sum_{i>=1} (2/(i+1))^2 = 4 (pi^2/6 - 1).
    unbounded = 1 / (4 * (math.pi**2 / 6 - 1))
    assert report["INSQ(max_rel=1)"].mean / unbounded == pytest.approx(1.00155, abs=1e-5)
    assert report["SDCG(max_rel=1)@2000"].mean == pytest.approx(1 / sum(1 / math.log2(i + 1) for i in range(1, 1001)), rel=1e-12)
    expected = _cwl_eval({"1": {"a": 1}}, short, names)
    for n in names:
        assert report[n].mean == pytest.approx(expected[n]["1"], abs=TOL), n


def test_bpm_goal_is_decided_on_float_sums_as_cwl_eval():
    """Ten gains of 0.1 sum (left to right, float64) to 0.9999999999999999 < 1, so the
    T = 1 user reads an eleventh document; cwl_eval agrees."""
    qrels = {"1": {f"d{i:02d}": 1 for i in range(12)}}
    run = {"1": {f"d{i:02d}": float(100 - i) for i in range(12)}}
    names = ["BPM(max_rel=10)@20", "BPM(T=0.3,max_rel=10)@20"]
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names)
    assert sum([0.1] * 10) < 1
    eleven = sum([0.1] * 11) / 11
    assert report[names[0]].mean == pytest.approx(eleven, rel=1e-15) and eleven != 0.1
    expected = _cwl_eval(qrels, run, names)
    for n in names:
        assert report[n].mean == pytest.approx(expected[n]["1"], abs=1e-15), n


@pytest.mark.parametrize("name,problem", [
    ("SDCG@10", "needs max_rel="), ("INST", "needs max_rel="), ("INST(max_rel=2,min_rel=2)", "below max_rel"),
    ("INST(min_rel=-1,max_rel=2)", ">= 0"), ("INSQ(T=0,max_rel=2)", "T must be > 0"), ("INST(T=2e6,max_rel=2)", "T must be <= 1e"),
    ("NERR10(p=1.2,max_rel=2)", "p must be <= 1"),
    ("NERR8(max_rel=2)", "needs a cutoff"), ("INST(max_rel=2)@10", "takes no cutoff"), ("BPM(max_rel=x)@5", "integer"),
])
def test_errors_name_the_problem(name, problem):
    with pytest.raises(gpukit.errors.MeasureError, match=problem):
        gpukit.parse_measures([name])


def test_docs_worked_example():
    """docs/measures_and_conventions.md, C/W/L section: gains 1, 0 (unjudged), 1/3, 0."""
    qrels = {"q1": {"a": 3, "b": 1, "c": 0}}
    run = {"q1": {"a": 0.9, "u": 0.8, "b": 0.7, "c": 0.6}}
    want = {
        "SDCG(max_rel=3)@3": (1 + (1 / 3) / 2) / (1 + 1 / math.log2(3) + 1 / 2),
        "NERR8(max_rel=3)@3": 1.0,
        "BPM(max_rel=3)@3": 1.0,
        "BPM(T=2,max_rel=3)@3": (1 + 0 + 1 / 3) / 3,
        "INSQ(max_rel=3)": (1 + (1 / 3) * (2 / 4) ** 2) / sum((2 / (i + 1)) ** 2 for i in range(1, 1001)),
    }
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), list(want))
    expected = _cwl_eval(qrels, run, list(want))
    for name, value in want.items():
        assert report[name].mean == pytest.approx(value, rel=1e-12), name
        assert expected[name]["q1"] == pytest.approx(value, rel=1e-12), name
    assert [round(want[n], 4) for n in want] == [0.5475, 1.0, 1.0, 0.4444, 0.4206]
    single = gpukit.evaluate(gpukit.Qrels.from_dict({"q1": {"a": 1}}), gpukit.Run.from_dict({"q1": {"a": 1.0}}), ["INSQ(max_rel=1)"])
    assert round(single["INSQ(max_rel=1)"].mean, 3) == 0.388


def test_cli_eval_computes_them(tmp_path, capsys):
    """`gpukit eval -m ...` from TREC files, against cwl_eval on the same (tie-free) data."""
    import json

    from gpukit.cli import main

    qrels, run = _collection(2)
    run = {q: {d: i + rank_pos / 1000 for rank_pos, d in enumerate(docs)} for i, (q, docs) in enumerate(run.items())}
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} 0 {s!r} r\n" for q, docs in run.items() for d, s in docs.items()))
    names = ["INST(T=2,max_rel=4)", "BPM(max_rel=3)@10", "NERR9(max_rel=3)@10"]
    args = ["eval", str(tmp_path / "qrels"), str(tmp_path / "run"), "--format", "json", "--per-query"]
    assert main(args + [a for n in names for a in ("-m", n)]) == 0
    per_query = json.loads(capsys.readouterr().out)[0]["per_query"]
    expected = _cwl_eval(qrels, _in_gpukit_order(run), names)
    for name in names:
        canonical = str(gpukit.parse_measures([name])[0])
        assert sorted(per_query) == sorted(qrels)
        for q, want in expected[name].items():
            assert abs(per_query[q][canonical] - want) <= TOL, (name, q)
