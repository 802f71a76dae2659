"""judged_only: ``evaluate(..., judged_only=True)``, ``nDCG(judged_only=True)@10`` and ``gpukit eval -J``.

Anchors: pytrec_eval's ``judged_docs_only_flag`` (trec_eval's -J) and
ir_measures' ``judged_only=True`` (its pytrec_eval provider), per query, on
trec_eval's and CACM's fixtures; ``gpukit trec_eval -J`` for the CLI.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpukit
from gpukit.cli import main
from gpukit.errors import MeasureError

DATA = Path(__file__).parent / "data"
QRELS = DATA / "trec_eval" / "qrels.test"
CASES = [(QRELS, DATA / "trec_eval" / "results.test"), (QRELS, DATA / "trec_eval" / "results.trunc"),
         (DATA / "cacm" / "qrels.cacm.txt", DATA / "cacm" / "run.cacm-bm25.anserini.txt")]
#: pytrec_eval name -> gpukit name.
MEASURES = {"map": "AP", "P_10": "P@10", "ndcg": "nDCG", "ndcg_cut_10": "nDCG@10", "recip_rank": "RR", "bpref": "Bpref",
            "Rprec": "Rprec", "recall_100": "R@100", "num_ret": "NumRet", "num_rel_ret": "NumRelRet", "infAP": "infAP"}


def _per_query(report, name: str) -> dict[str, float]:
    return dict(zip(report.query_ids, report[name].per_query.tolist()))


@pytest.mark.parametrize(("qrels_path", "run_path"), CASES, ids=lambda p: p.name)
def test_judged_only_equals_pytrec_eval_judged_docs_only(qrels_path, run_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = gpukit.Qrels.from_trec(qrels_path), gpukit.Run.from_trec(run_path)
    plain = pytrec_eval.RelevanceEvaluator(qrels.to_dict(), set(MEASURES)).evaluate(run.to_dict())
    expected = pytrec_eval.RelevanceEvaluator(qrels.to_dict(), set(MEASURES), judged_docs_only_flag=True).evaluate(run.to_dict())
    report = gpukit.evaluate(qrels, run, list(MEASURES.values()), convention="trec_eval", judged_only=True)
    by_name = gpukit.evaluate(qrels, run, [f"{n.split('@')[0]}(judged_only=True)" + (f"@{n.split('@')[1]}" if "@" in n else "")
                                           for n in MEASURES.values()], convention="trec_eval")
    differs = 0
    for trec, ours in MEASURES.items():
        name = str(gpukit.parse_measure(ours).with_judged_only())
        got, also = _per_query(report, name), _per_query(by_name, name)
        for q, values in expected.items():
            assert got[q] == pytest.approx(values[trec], abs=1e-12), (trec, q)
            assert also[q] == got[q]
            differs += values[trec] != plain[q][trec]
    assert differs  # the fixtures have unjudged documents: -J changes values


def test_judged_only_equals_ir_measures_judged_only():
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = gpukit.Qrels.from_trec(CASES[0][0]), gpukit.Run.from_trec(CASES[0][1])
    names = ["nDCG(judged_only=True)@10", "P(judged_only=True)@5", "AP(judged_only=True)", "RR(judged_only=True)"]
    measures = [ir_measures.parse_measure(n) for n in names]
    expected = {(str(m.measure), m.query_id): m.value
                for m in ir_measures.pytrec_eval.iter_calc(measures, qrels.to_dict(), run.to_dict())}
    report = gpukit.evaluate(qrels, run, names, convention="trec_eval")
    for name in names:
        assert str(gpukit.parse_measure(name)) == name  # ir_measures' spelling, kept in the report
        for q, v in _per_query(report, name).items():
            assert v == pytest.approx(expected[(name, q)], abs=1e-12), (name, q)


def test_judged_only_with_max_depth_applies_the_depth_first():
    """trec_eval truncates to -M, then drops unjudged documents: pytrec_eval on the run cut to M."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = gpukit.Qrels.from_trec(CASES[0][0]), gpukit.Run.from_trec(CASES[0][1])
    depth = 40
    cut = {q: {d: run.to_dict()[q][d] for d in run.doc_ids_of_row(i)[:depth]} for i, q in enumerate(run.query_id_list())}
    expected = pytrec_eval.RelevanceEvaluator(qrels.to_dict(), {"map", "P_10"}, judged_docs_only_flag=True).evaluate(cut)
    report = gpukit.evaluate(qrels, run, ["AP", "P@10"], convention="trec_eval", max_depth=depth, judged_only=True)
    for trec, ours in (("map", "AP(judged_only=True)"), ("P_10", "P(judged_only=True)@10")):
        for q, v in _per_query(report, ours).items():
            assert v == pytest.approx(expected[q][trec], abs=1e-12)


def test_judged_only_measures_mix_with_plain_ones_and_name_their_convention():
    qrels, run = gpukit.Qrels.from_trec(CASES[0][0]), gpukit.Run.from_trec(CASES[0][1])
    mixed = gpukit.evaluate(qrels, run, ["P@10", "P(judged_only=True)@10"])
    plain = gpukit.evaluate(qrels, run, ["P@10"])
    judged = gpukit.evaluate(qrels, run, ["P@10"], judged_only=True)
    assert mixed["P@10"].per_query.tolist() == plain["P@10"].per_query.tolist()
    assert mixed["P(judged_only=True)@10"].per_query.tolist() == judged["P(judged_only=True)@10"].per_query.tolist()
    assert "trec_eval -J" in mixed["P(judged_only=True)@10"].conventions["judged_only"]
    assert "judged_only" not in mixed["P@10"].conventions


def test_measure_values_and_names():
    m = gpukit.parse_measure("nDCG(judged_only=True)@10")
    assert m == gpukit.parse_measure("nDCG@10").with_judged_only() == gpukit.Measure("nDCG", 10, judged_only=True)
    assert gpukit.parse_measure("P(judged_only=False)@5") == gpukit.parse_measure("P@5")
    assert gpukit.parse_measure("P(rel=2,judged_only=1)@5") == gpukit.Measure("P", 5, rel=2, judged_only=True)
    # A diversity family has its own judged_only parameter; the flag lands there.
    div = gpukit.Measure("alpha_nDCG", 5, judged_only=True)
    assert div == gpukit.parse_measure("alpha_nDCG(judged_only=True)@5") and not div.judged_only
    with pytest.raises(MeasureError):
        gpukit.parse_measure("P(judged_only=maybe)@5")
    with pytest.raises(MeasureError):
        gpukit.parse_measure("P(judged_only=True,judged_only=True)@5")
    with pytest.raises(MeasureError):
        gpukit.Measure("P", 5, judged_only="yes")


def test_eval_cli_judged_only_prints_trec_eval_minus_j(capsys):
    run = CASES[0][1]
    assert main(["trec_eval", "-J", "-m", "map", "-m", "P.5,10", "-m", "ndcg", str(QRELS), str(run)]) == 0
    expected = capsys.readouterr().out
    assert main(["eval", "-J", str(QRELS), str(run), "-m", "map", "-m", "P.5,10", "-m", "ndcg", "--convention", "trec_eval", "--format", "trec"]) == 0
    got = capsys.readouterr().out

    def lines(text: str) -> set[str]:  # trec_eval's order differs; gpukit eval adds runid and num_q
        return {line for line in text.splitlines() if line.strip() and line.split()[0] not in ("runid", "num_q")}

    assert lines(got) == lines(expected) and len(lines(got)) == 4


def test_eval_cli_measure_parameter_and_json(capsys):
    assert main(["eval", str(QRELS), str(CASES[0][1]), "-m", "AP", "-m", "AP(judged_only=True)", "--format", "json"]) == 0
    measures = json.loads(capsys.readouterr().out)[0]["measures"]
    report = gpukit.evaluate(gpukit.Qrels.from_trec(QRELS), gpukit.Run.from_trec(CASES[0][1]), ["AP", "AP(judged_only=True)"])
    for name in ("AP", "AP(judged_only=True)"):
        assert measures[name]["mean"] == report[name].mean
    assert measures["AP"]["mean"] != measures["AP(judged_only=True)"]["mean"]
