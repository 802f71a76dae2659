"""Parity with trec_eval's own expected outputs (tests/data/trec_eval/out.test*).

Each case replays one command of trec_eval's quicktest (see
tests/data/trec_eval/quicktest_commands.txt) through gpukit under the
trec_eval convention, and compares every line whose measure gpukit
implements, per query and for "all", at trec_eval's printed precision.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import TESTS
from trec_eval_names import to_gpukit

import gpukit
from gpukit.report import trec_name

DATA = TESTS / "data" / "trec_eval"


def _expected(path: Path) -> dict[tuple[str, str], str]:
    out = {}
    for line in path.read_text().splitlines():
        name, qid, value = (part.strip() for part in line.split("\t"))
        out[(name, qid)] = value
    return out


CASES = [
    # (expected output, qrels, run, options)
    ("out.test", "qrels.test", "results.test", {}),
    ("out.test", "qrels.test.with-comments", "results.test", {}),
    ("out.comment.test", "qrels.comment.test", "results.comment.test.gz", {}),
    ("out.test.a", "qrels.test", "results.test", {}),
    ("out.test.aq", "qrels.test", "results.test", {}),
    ("out.test.aqc", "qrels.test", "results.trunc", {"complete": True}),
    ("out.test.aqcM", "qrels.test", "results.trunc", {"complete": True, "max_depth": 100}),
    ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}),
    ("out.test.meas_params", "qrels.test", "results.test", {}),
]


@pytest.mark.parametrize("expected_file,qrels_file,run_file,options", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_matches_trec_eval_expected_output(expected_file, qrels_file, run_file, options):
    expected = _expected(DATA / expected_file)
    names = sorted({name for name, _ in expected if to_gpukit(name)})
    assert names, "no comparable measures found"
    gpukit_names = [to_gpukit(n) for n in names]
    qrels = gpukit.Qrels.from_trec(DATA / qrels_file)
    run = gpukit.Run.from_trec(DATA / run_file)
    report = gpukit.evaluate(qrels, run, gpukit_names, convention="trec_eval", device="cpu", **options)

    if ("num_q", "all") in expected:
        assert str(len(report.query_ids)) == expected[("num_q", "all")]
    compared = 0
    # The report keeps the order of the requested names (with -l, rel= is set on each).
    assert len(report.measures) == len(names)
    for trec_measure, result in zip(names, report.results.values()):
        for qid, value in zip(report.query_ids, result.per_query.tolist()):
            want = expected.get((trec_measure, qid))
            if want is not None:
                assert float(want) == pytest.approx(value, abs=5.1e-5), (trec_measure, qid)
                compared += 1
        want_all = expected[(trec_measure, "all")]
        assert float(want_all) == pytest.approx(result.mean, abs=5.1e-5), (trec_measure, "all")
        compared += 1
    assert compared >= len(names)


def test_trec_format_output_reproduces_trec_eval_lines():
    """`--format trec` prints trec_eval's names and values for the default measures."""
    expected = _expected(DATA / "out.test")
    names = ["map", "Rprec", "bpref", "recip_rank", "P_5", "P_10", "P_1000", "num_rel_ret"]
    report = gpukit.evaluate(
        gpukit.Qrels.from_trec(DATA / "qrels.test"),
        gpukit.Run.from_trec(DATA / "results.test"),
        [to_gpukit(n) for n in names],
        convention="trec_eval",
    )
    lines = {}
    for line in report.to_trec().splitlines():
        name, qid, value = (p.strip() for p in line.split("\t"))
        lines[(name, qid)] = value
    for n in names:
        assert lines[(n, "all")] == expected[(n, "all")]
    assert [trec_name(m) for m in report.measures] == names
