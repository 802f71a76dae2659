"""GMBpref (trec_eval gm_bpref) against pytrec_eval, per query and in the summary.

pytrec_eval reports gm_bpref per query as trec_eval stores it,
log(max(bpref, 1e-5)); trec_eval's summary is exp of their mean. Random runs
with ties, graded qrels with negative grades and unjudged documents (the
parity module's generator), at relevance levels 1 and 2; -M as a run cut to
its top M by trec_eval's order; -c as the queries missing from the run
entering the mean at the floor 1e-5; -J with pytrec_eval's judged_docs_only_flag
(through ``gpukit trec_eval -J``, tests/test_trec_eval_cli.py's other checks).
"""
from __future__ import annotations

import math

import pytest

import gpukit
from test_pytrec_eval_parity import random_collection

pytrec_eval = pytest.importorskip("pytrec_eval")


def _top(run: dict, depth: int | None) -> dict:
    if depth is None:
        return run
    order = lambda item: (-item[1], [-b for b in item[0].encode("utf-8")])  # noqa: E731  score desc, docno desc
    return {q: dict(sorted(docs.items(), key=order)[:depth]) for q, docs in run.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("depth", [None, 7])
def test_gm_bpref_matches_pytrec_eval(seed, level, depth):
    qrels, run = random_collection(seed)
    run = _top(run, depth)
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"gm_bpref"}, relevance_level=level).evaluate(run)
    report = gpukit.evaluate(
        gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["gm_bpref"],
        convention="trec_eval", relevance_level=level, max_depth=depth,
    )
    result = report.results[report.measures[0]]
    assert sorted(expected) == report.query_ids
    logs = [expected[q]["gm_bpref"] for q in report.query_ids]
    for q, v, want in zip(report.query_ids, result.per_query.tolist(), logs):
        assert math.log(max(v, 1e-5)) == pytest.approx(want, abs=1e-9), q
    assert result.mean == pytest.approx(math.exp(sum(logs) / len(logs)), rel=1e-9)


@pytest.mark.parametrize("seed", [0, 3])
def test_gm_bpref_complete_counts_missing_queries_at_the_floor(seed):
    qrels, run = random_collection(seed)
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"gm_bpref"}).evaluate(run)
    missing = [q for q in qrels if q not in run]
    assert missing
    logs = [v["gm_bpref"] for v in expected.values()] + [math.log(1e-5)] * len(missing)
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["GMBpref"],
                             convention="trec_eval", complete=True)
    assert report["GMBpref"].mean == pytest.approx(math.exp(sum(logs) / len(logs)), rel=1e-9)
