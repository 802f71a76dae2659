"""Parity with trec_eval's expected outputs for -R prefs, -R qrels_prefs and -R qrels_jg.

Replays the quicktest commands (tests/data/trec_eval/quicktest_commands.txt)

    trec_eval -m all_prefs -q -R prefs prefs.test prefs.results.test          -> out.test.prefs
    trec_eval -m all_prefs -q -R prefs prefs.comment.test prefs.results.test  -> out.test.prefs
    trec_eval -m all_prefs -q -R qrels_prefs qrels.test results.test          -> out.test.qrels_prefs
    trec_eval -m qrels_jg -q -R qrels_jg qrels.123 results.test               -> out.test.qrels_jg
    trec_eval -m qrels_jg -q -R qrels_jg qrels.comments.123 results.test      -> out.test.qrels_jg

through gpukit.evaluate / evaluate and compares every
per-query and summary value at trec_eval's printed precision (the parsed
values: the bytes are the CLI's business).
"""
from __future__ import annotations

import pytest
from fixture_paths import TESTS
from test_trec_eval_outputs import _expected
from trec_eval_names import to_gpukit

import gpukit
from gpukit.judgments.judgment_groups import JudgmentGroups
from gpukit.judgments.prefs import Prefs

DATA = TESTS / "data" / "trec_eval"


def _judgments(kind: str, name: str):
    if kind == "prefs":
        return Prefs.from_trec(DATA / name)
    if kind == "qrels_prefs":
        return Prefs.from_qrels_file(DATA / name)
    return JudgmentGroups.from_trec(DATA / name)


CASES = [
    ("out.test.prefs", "prefs", "prefs.test", "prefs.results.test", "all_prefs"),
    ("out.test.prefs", "prefs", "prefs.comment.test", "prefs.results.test", "all_prefs"),
    ("out.test.qrels_prefs", "qrels_prefs", "qrels.test", "results.test", "all_prefs"),
    ("out.test.qrels_jg", "qrels_jg", "qrels.123", "results.test", "qrels_jg"),
    ("out.test.qrels_jg", "qrels_jg", "qrels.comments.123", "results.test", "qrels_jg"),
]


def _evaluate(kind, judgments, run, measures, **options):
    if kind == "qrels_jg":
        return gpukit.evaluate(judgments, run, measures, **options)
    return gpukit.evaluate(judgments, run, measures, **options)


@pytest.mark.parametrize("expected_file,kind,judgments,run_file,nickname", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_matches_trec_eval_expected_output(expected_file, kind, judgments, run_file, nickname):
    expected = _expected(DATA / expected_file)
    trec_names = list(dict.fromkeys(name for name, _ in expected if name not in ("runid", "num_q")))
    assert all(to_gpukit(n) for n in trec_names), [n for n in trec_names if not to_gpukit(n)]
    run = gpukit.Run.from_trec(DATA / run_file)
    report = _evaluate(kind, _judgments(kind, judgments), run, [to_gpukit(n) for n in trec_names], device="cpu")
    assert str(len(report.query_ids)) == expected[("num_q", "all")]
    assert report.convention.name == "trec_eval"
    qids = {q for _, q in expected if q != "all"}
    assert set(report.query_ids) == qids
    for trec_measure, result in zip(trec_names, report.results.values()):
        integer = result.measure.spec.trec_format == "int"
        for qid, value in zip(report.query_ids, result.per_query.tolist()):
            want = float(expected[(trec_measure, qid)])
            if integer:
                assert value == want, (trec_measure, qid)
            else:
                assert value == pytest.approx(want, abs=5.1e-5), (trec_measure, qid)
        want_all = float(expected[(trec_measure, "all")])
        assert result.mean == pytest.approx(want_all, abs=0 if integer else 5.1e-5), (trec_measure, "all")


@pytest.mark.parametrize("expected_file,kind,judgments,run_file,nickname", [CASES[0], CASES[3]], ids=["prefs", "qrels_jg"])
def test_nickname_expands_to_trec_eval_measures_in_order(expected_file, kind, judgments, run_file, nickname):
    """-m all_prefs / -m qrels_jg: the same measures, in the order trec_eval prints them."""
    expected = _expected(DATA / expected_file)
    trec_names = list(dict.fromkeys(name for name, _ in expected if name not in ("runid", "num_q")))
    report = _evaluate(kind, _judgments(kind, judgments), gpukit.Run.from_trec(DATA / run_file), nickname)
    assert [str(m) for m in report.measures] == [str(gpukit.parse_measure(to_gpukit(n))) for n in trec_names]
    assert [m.spec.trec_name(m) for m in report.measures] == trec_names
