"""Diversity families against the plain-Python reference (tests/reference_diversity.py)
on random small inputs, the subtopic qrels reader's errors, and the refusals
of gpukit.evaluate and the streaming evaluator."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_diversity import DIVERSITY_FAMILIES, reference_diversity_evaluate
from test_prefs import (  # per-query values and means against a reference, to 1e-9
    _assert_matches,
    _write,
)

import gpukit
from gpukit.errors import GpukitError, InputFormatError, MeasureError
from gpukit.families.diversity import NDEVAL_MEASURES
from gpukit.judgments.subtopics import SubtopicQrels

QUERIES = ["q1", "q2", "q10", "q3"]
DOCS = ["d1", "d2", "d3", "d4", "d5", "d6", "D7", "d10"]
SUBTOPICS = ["1", "2", "3", "4"]
SCORES = [0.0, 0.5, 1.0, 1.0, 2.0, 3.5]  # repeated values: ties

NAMES = [
    "alpha_nDCG@1", "alpha_nDCG@3", "alpha_nDCG(alpha=0.25)@5", "alpha_nDCG(rel=2)@10", "alpha_nDCG(judged_only=True)@4",
    "alpha_nDCG(alpha=1)@3", "alpha_nDCG(alpha=0)@3",
    "alpha_DCG@1", "alpha_DCG@2", "alpha_DCG(alpha=0.75)@20", "alpha_DCG(judged_only=True)@5",
    "ERR_IA@1", "ERR_IA@3", "ERR_IA(alpha=0.25,judged_only=True)@10",
    "nERR_IA@2", "nERR_IA(alpha=0.75)@5", "nERR_IA(rel=2)@20",
    "NRBP", "NRBP(alpha=0.25,beta=0.75)", "nNRBP", "nNRBP(beta=0.25)", "nNRBP(rel=2,alpha=1)",
    "P_IA@1", "P_IA@5", "P_IA(judged_only=True)@3", "AP_IA", "AP_IA(rel=2)", "AP_IA(judged_only=True)",
    "StRecall@1", "StRecall@3", "StRecall(rel=2)@10",
]


@st.composite
def subtopic_qrels_and_run(draw):
    """1-4 subtopics per query, graded (negative grades too), some queries
    without any relevant document; runs with ties and unjudged documents."""
    qrels = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=3, unique=True)):
        qrels[q] = {}
        for s in draw(st.lists(st.sampled_from(SUBTOPICS), min_size=1, max_size=4, unique=True)):
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True))
            qrels[q][s] = {d: draw(st.sampled_from([-1, 0, 0, 1, 1, 2])) for d in docs}
    run = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
        run[q] = {d: draw(st.sampled_from(SCORES)) for d in docs}
    return qrels, run


OPTIONS = st.fixed_dictionaries({
    "convention": st.sampled_from(["gpukit", "trec_eval"]),
    "complete": st.sampled_from([None, True, False]),
    "max_depth": st.sampled_from([None, None, 1, 3]),
    "relevance_level": st.sampled_from([None, 1, 2]),
})


def test_every_family_is_exercised():
    assert {n.split("(")[0].split("@")[0] for n in NAMES} == set(DIVERSITY_FAMILIES)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=subtopic_qrels_and_run(), options=OPTIONS)
def test_diversity_families_match_the_reference(data, options):
    qrels, run = data
    expected = reference_diversity_evaluate(qrels, run, NAMES, **options)
    report = gpukit.evaluate(SubtopicQrels.from_dict(qrels), gpukit.Run.from_dict(run), NAMES, **options)
    _assert_matches(report, expected, NAMES, options["relevance_level"])


def test_ndeval_readme_example():
    """pyndeval's README example (ndeval's numbers, printed to 4 places; strec@5 2/3)."""
    qrels = SubtopicQrels.from_arrays(["0"] * 4, ["a", "b", "b", "c"], ["A", "B", "D", "C"], [1, 1, 1, 1])
    run = gpukit.Run.from_dict({"0": {"A": 9.3, "D": 8.4, "E": 8.1, "B": 7.6}})
    got = gpukit.evaluate(qrels, run, ["ERR-IA@5", "nERR-IA@5", "alpha-DCG@5", "alpha-nDCG@10", "NRBP",
                                                 "nNRBP", "MAP-IA", "P-IA@5", "strec@5"]).means()
    want = {"ERR_IA@5": 0.3933, "nERR_IA@5": 0.8297, "alpha_DCG@5": 0.4052, "alpha_nDCG@10": 0.7868, "NRBP": 0.3906,
            "nNRBP": 0.8620, "AP_IA": 0.5, "P_IA@5": 0.2, "StRecall@5": 0.6666}
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert 0 <= got[k] - v < 1e-4, (k, got[k], v)


def test_ndeval_nickname_expands_to_its_21_columns():
    qrels = SubtopicQrels.from_dict({"q": {"1": {"a": 1}}})
    report = gpukit.evaluate(qrels, gpukit.Run.from_dict({"q": {"a": 1.0}}))
    assert [str(m) for m in report.measures] == list(NDEVAL_MEASURES) and len(NDEVAL_MEASURES) == 21


def test_a_query_without_relevant_subtopics_is_omitted_or_zero():
    qrels = SubtopicQrels.from_dict({"q1": {"1": {"a": 1}, "2": {"b": 1}}, "q2": {"1": {"a": 0}}})
    run = gpukit.Run.from_dict({"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 1.0}})
    ours = gpukit.evaluate(qrels, run, "nNRBP")["nNRBP"]
    assert (ours.mean, ours.evaluated, ours.omitted) == (1.0, 1, 1)
    ndeval = gpukit.evaluate(qrels, run, "nNRBP", convention="trec_eval")["nNRBP"]
    assert ndeval.per_query.tolist() == [1.0, 0.0] and ndeval.mean == 0.5


def test_alpha_ndcg_differs_from_ndcg_on_a_redundant_ranking():
    """The documented example: two documents on subtopic 1 above one on subtopic 2.
    nDCG (any document relevant to some subtopic is relevant) sees a perfect
    ranking; alpha-nDCG discounts the second document's repeated subtopic."""
    qrels = SubtopicQrels.from_dict({"q": {"1": {"a": 1, "b": 1}, "2": {"c": 1}}})
    run = gpukit.Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    alpha = gpukit.evaluate(qrels, run, "alpha_nDCG@3").means()["alpha_nDCG@3"]
    flat = gpukit.evaluate(gpukit.Qrels.from_dict({"q": {"a": 1, "b": 1, "c": 1}}), run, "nDCG@3").means()["nDCG@3"]
    assert flat == 1.0
    # run gains 1, 0.5, 1; ideal a (or b), c, then the other: 1, 1, 0.5.
    want = (1 + 0.5 / math.log2(3) + 1 / 2) / (1 + 1 / math.log2(3) + 0.5 / 2)
    assert alpha == pytest.approx(want, abs=1e-15)


def test_ideal_ties_go_to_the_larger_docno():
    """ndeval's greedy ideal takes the larger docno among equal gains, and here
    the choice changes the ideal. alpha = 0.25, docs a, b {1,2}, c {3,4},
    d {1,3}, e {1,4}: all gain 2, so e comes first; then a, b, c, d all gain
    1.75 and d is taken; then 1.5625 (ideal 2, 1.75, 1.5625). Ties to the
    smaller docno would take a, then c (2), then 1.5: (2, 2, 1.5)."""
    qrels = SubtopicQrels.from_dict({"q": {"1": {"a": 1, "b": 1, "d": 1, "e": 1}, "2": {"a": 1, "b": 1},
                                           "3": {"c": 1, "d": 1}, "4": {"c": 1, "e": 1}}})
    run = gpukit.Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    got = gpukit.evaluate(qrels, run, "nERR_IA(alpha=0.25)@3").means()["nERR_IA(alpha=0.25)@3"]
    run_sum = 2 + 1.5 / 2 + 2 / 3  # a: 2; b: 0.75 + 0.75; c: 1 + 1
    assert got == pytest.approx(run_sum / (2 + 1.75 / 2 + 1.5625 / 3), abs=1e-15)
    assert got != pytest.approx(run_sum / (2 + 2 / 2 + 1.5 / 3), abs=1e-6)


# ------------------------------------------------------------------ reader
def test_reader_reads_a_file_like_from_dict(tmp_path):
    path = _write(tmp_path, "div.qrels", "# comment\n1 2 d1 1\n1 10 d2 0\n1 2 d3 2\n2 1 d1 -1\n")
    qrels = SubtopicQrels.from_trec(path)
    assert qrels.to_dict() == {"1": {"2": {"d1": 1, "d3": 2}, "10": {"d2": 0}}, "2": {"1": {"d1": -1}}}
    assert qrels.subtopic_ids.to_pylist() == ["1", "2", "10"]  # numeric order, as ndeval's indices


def test_reader_errors_name_file_and_line(tmp_path):
    with pytest.raises(InputFormatError, match=r"d\.txt:2: grade 'x' is not an integer"):
        SubtopicQrels.from_trec(_write(tmp_path, "d.txt", "q 1 d1 1\nq 1 d2 x\n"))
    with pytest.raises(InputFormatError, match=r"d\.txt:3: query 'q' subtopic '1' judges doc 'd1' twice \(lines 1 and 3\)"):
        SubtopicQrels.from_trec(_write(tmp_path, "d.txt", "q 1 d1 1\nq 2 d1 0\nq 1 d1 0\n"))
    with pytest.raises(InputFormatError, match=r"d\.txt:1: expected 4 columns"):
        SubtopicQrels.from_trec(_write(tmp_path, "d.txt", "q 1 d1\n"))
    with pytest.raises(InputFormatError, match="no such file"):
        SubtopicQrels.from_trec(tmp_path / "missing.txt")
    with pytest.raises(InputFormatError, match="empty subtopic qrels"):
        SubtopicQrels.from_dict({})


# ------------------------------------------------------------------ refusals
def test_evaluate_refuses_measures_of_another_kind_of_judgments():
    qrels = gpukit.Qrels.from_dict({"q": {"a": 1}})
    run = gpukit.Run.from_dict({"q": {"a": 1.0}})
    with pytest.raises(MeasureError, match=r"alpha_nDCG@10 needs judgments per subtopic \(gpukit.SubtopicQrels.from_trec.*not ordinary qrels"):
        gpukit.evaluate(qrels, run, ["P@5", "alpha-nDCG@10"])
    sub = SubtopicQrels.from_dict({"q": {"1": {"a": 1}}})
    with pytest.raises(MeasureError, match=r"P@5 needs ordinary qrels \(gpukit.Qrels.from_trec.*not judgments per subtopic"):
        gpukit.evaluate(sub, run, ["NRBP", "P@5"])
    with pytest.raises(MeasureError, match="needs a cutoff"):
        gpukit.evaluate(sub, run, "alpha_nDCG")
    with pytest.raises(MeasureError, match="alpha must be <= 1"):
        gpukit.evaluate(sub, run, "NRBP(alpha=1.5)")
    with pytest.raises(GpukitError, match="max_depth must be a positive integer"):
        gpukit.evaluate(sub, run, "NRBP", max_depth=0)


@pytest.mark.parametrize("name", ["alpha_nDCG@10", "NRBP", "AP_IA", "StRecall@5"])
def test_streaming_evaluator_refuses_them(name):
    with pytest.raises(GpukitError, match="cannot compute"):
        gpukit.RetrievalEvaluator([name])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_equals_cpu_bitwise():
    g = torch.Generator().manual_seed(0)
    qrels = {f"q{i}": {str(s): {f"d{j}": int(torch.randint(0, 3, (1,), generator=g)) for j in range(0, 40, s + 1)}
                       for s in range(1, 6)} for i in range(30)}
    run = {q: {f"d{j}": float(torch.randint(0, 9, (1,), generator=g)) for j in range(50)} for q in qrels}
    sub, r = SubtopicQrels.from_dict(qrels), gpukit.Run.from_dict(run)
    names = list(NDEVAL_MEASURES) + ["alpha_nDCG(alpha=0.3)@50", "nNRBP(beta=0.9)", "ERR_IA(judged_only=True)@7"]
    on_cpu = gpukit.evaluate(sub, r, names, device="cpu")
    on_cuda = gpukit.evaluate(sub, r, names, device="cuda")
    for m in on_cpu.measures:
        assert torch.equal(on_cpu[m].per_query, on_cuda[m].per_query.cpu()), str(m)


def test_cli_prints_ndeval_values(tmp_path, capsys):
    """``gpukit diversity`` on pyndeval's README example (its printed values)."""
    import json

    from gpukit.cli import main

    qrels = _write(tmp_path, "div.qrels", "0 1 A 1\n0 2 B 1\n0 2 D 1\n0 3 C 1\n")
    run = _write(tmp_path, "run", "0 Q0 A 1 9.3 r\n0 Q0 D 2 8.4 r\n0 Q0 E 3 8.1 r\n0 Q0 B 4 7.6 r\n")
    assert main(["diversity", str(qrels), str(run), "-m", "alpha-nDCG@5", "-m", "nNRBP", "--format", "json"]) == 0
    means = {k: v["mean"] for k, v in json.loads(capsys.readouterr().out)[0]["measures"].items()}
    assert means["alpha_nDCG@5"] == pytest.approx(0.7868, abs=1e-4) and means["nNRBP"] == pytest.approx(0.8620, abs=1e-4)


def test_huge_cutoffs_are_refused_or_read_past_the_ranking():
    """alpha_DCG/ERR_IA normalise by a sum of k terms: a cutoff above 2^24 is a
    MeasureError; the ratio families read the last rank (their sums stop)."""
    sub = SubtopicQrels.from_dict({"q": {"1": {"a": 1}, "2": {"b": 1}}})
    run = gpukit.Run.from_dict({"q": {"a": 2.0, "b": 1.0}})
    with pytest.raises(MeasureError, match="cutoff must be at most 16777216"):
        gpukit.evaluate(sub, run, f"ERR_IA@{2**40}")
    got = gpukit.evaluate(sub, run, [f"alpha_nDCG@{2**62}", f"nERR_IA@{2**62}", f"StRecall@{2**62}"])
    assert got.means() == {f"alpha_nDCG@{2**62}": 1.0, f"nERR_IA@{2**62}": 1.0, f"StRecall@{2**62}": 1.0}


def test_cli_json_formats_match_gpukit_eval(tmp_path, capsys):
    """``gpukit diversity --format json`` is one JSON array of runs (as ``gpukit eval``),
    ``--format jsonl`` one object per line, and a mean over no query is ``null``, never NaN."""
    import json

    from gpukit.cli import main

    def no_constants(c):
        pytest.fail(f"invalid JSON constant {c}")

    qrels = _write(tmp_path, "div.qrels", "0 1 A 1\n0 2 B 1\n0 2 D 1\n0 3 C 1\n")
    run = _write(tmp_path, "run", "0 Q0 A 1 9.3 r\n0 Q0 D 2 8.4 r\n0 Q0 E 3 8.1 r\n0 Q0 B 4 7.6 r\n")
    other = _write(tmp_path, "other", "0 Q0 C 1 2.0 s\n")
    want = [gpukit.evaluate(SubtopicQrels.from_trec(qrels), gpukit.Run.from_trec(p), "alpha_nDCG@5")
            for p in (run, other)]
    assert main(["diversity", str(qrels), str(run), str(other), "-m", "alpha_nDCG@5", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=no_constants)
    assert isinstance(doc, list) and [d["run"] for d in doc] == ["run", "other"]
    for got, report in zip(doc, want):
        assert got["measures"]["alpha_nDCG@5"]["mean"] == pytest.approx(report.means()["alpha_nDCG@5"], rel=1e-12)
    assert main(["diversity", str(qrels), str(run), str(other), "-m", "alpha_nDCG@5", "--format", "jsonl"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == doc

    unjudged = _write(tmp_path, "none.qrels", "1 1 X 0\n")  # no relevant subtopic: the query is omitted
    lone = _write(tmp_path, "lone", "1 Q0 X 1 2.0 s\n")
    nan = gpukit.evaluate(SubtopicQrels.from_trec(unjudged), gpukit.Run.from_trec(lone), "alpha_nDCG@5")
    assert nan.means()["alpha_nDCG@5"] != nan.means()["alpha_nDCG@5"]  # NaN: no query evaluated
    assert main(["diversity", str(unjudged), str(lone), "-m", "alpha_nDCG@5", "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out, parse_constant=no_constants)
    assert entry["measures"]["alpha_nDCG@5"]["mean"] is None and entry["measures"]["alpha_nDCG@5"]["omitted"] == 1
