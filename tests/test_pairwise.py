"""p-MRR (FollowIR) against MTEB's own expected values and a plain-Python reference.

The reference below is written from the definition (FollowIR, arXiv:2403.15246,
as MTEB's ``calculate_pmrr`` applies it), one document at a time: the rank of
a document is its 1-based position by score descending then doc id descending,
(number retrieved + 1) when not retrieved; a document's value compares the
reciprocal ranks rr_og = 1/o and rr_ch = 1/n: rr_og / rr_ch - 1 when the
document did not move down, 1 - rr_ch / rr_og when it did; a query's value is
the mean over its changed documents, p-MRR the mean over queries. Where the
mteb package is installed, its own ``calculate_pmrr`` is compared too.
"""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpukit
from gpukit.cli import main
from gpukit.errors import GpukitError
from gpukit.pairwise import p_mrr


def ref_rank(ranking: dict[str, float], doc: str) -> int:
    ordered = sorted(ranking, key=lambda d: (ranking[d], d), reverse=True)
    return ordered.index(doc) + 1 if doc in ranking else len(ranking) + 1


def ref_doc_value(o: int, n: int) -> float:
    rr_og, rr_ch = 1 / o, 1 / n
    if rr_ch >= rr_og:  # moved up or stayed
        return rr_og / rr_ch - 1
    return 1 - rr_ch / rr_og


def ref_changed(qrels_og, qrels_ch, rel):
    out = {}
    for q in set(qrels_og) & set(qrels_ch):
        lost = [d for d, g in qrels_og[q].items() if g >= rel and qrels_ch[q].get(d, -(10**9)) < rel]
        if lost:
            out[q] = lost
    return out


def ref_p_mrr(changed, run_og, run_ch):
    per_query = {}
    for q, docs in changed.items():
        if q not in run_og or q not in run_ch or not docs:
            continue
        values = [ref_doc_value(ref_rank(run_og[q], d), ref_rank(run_ch[q], d)) for d in set(docs)]
        per_query[q] = sum(values) / len(values)
    mean = sum(per_query.values()) / len(per_query) if per_query else math.nan
    return per_query, mean


# MTEB's tests/test_evaluators/test_evaluation_metrics.py: test_p_mrr and the tie-break test.
OG = {"a": {"0": 1, "1": 2, "2": 3, "3": 4}}


@pytest.mark.parametrize(
    ("run_og", "run_ch", "expected"),
    [
        (OG, {"a": {"0": 1, "1": 2, "2": 3, "3": 4}}, 0.0),
        (OG, {"a": {"0": 4, "1": 1, "2": 2, "3": 3}}, -0.75),
        ({"a": {"0": 4, "1": 1, "2": 2, "3": 3}}, OG, 0.75),
        ({"a": {"0": 0.5, "1": 0.5, "2": 0.5}}, {"a": {"2": 0.5, "1": 0.5, "0": 0.5}}, 0.0),
    ],
)
def test_mteb_expected_values(run_og, run_ch, expected):
    explicit = p_mrr(None, run_og, None, run_ch, changed_docs={"a": ["0"]})
    assert explicit.mean == expected
    # The same change written as judgments: "0" relevant under the original instruction only.
    derived = p_mrr({"a": {"0": 1, "1": 0}}, run_og, {"a": {"0": 0, "1": 0}}, run_ch)
    assert derived.mean == expected and derived.by_query == {"a": expected}


DOCS = ["d1", "d10", "d2", "D2", "d\u00e9", "e", "z"]
QUERIES = ["q1", "q2", "q10", "Q3"]


@st.composite
def pair(draw):
    qrels_og, qrels_ch, run_og, run_ch = {}, {}, {}, {}
    for i, q in enumerate(draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True))):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True))
        qrels_og[q] = {d: draw(st.integers(-1, 2)) for d in docs}
        if i == 0 or draw(st.integers(0, 4)):  # sometimes a query judged on one side only
            qrels_ch[q] = {d: draw(st.integers(-1, 2)) for d in docs if draw(st.booleans())} or {docs[0]: 0}
    for run in (run_og, run_ch):
        for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):  # gpukit refuses empty runs
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
            run[q] = {d: draw(st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0])) for d in docs}  # ties
    return qrels_og, qrels_ch, run_og, run_ch


def _assert_matches(result, per_query, mean):
    assert result.by_query == pytest.approx(per_query, abs=1e-12)
    if math.isnan(mean):
        assert math.isnan(result.mean)
    else:
        assert result.mean == pytest.approx(mean, abs=1e-12)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=pair(), rel=st.sampled_from([1, 2]))
def test_matches_the_reference(data, rel):
    qrels_og, qrels_ch, run_og, run_ch = data
    changed = ref_changed(qrels_og, qrels_ch, rel)
    per_query, mean = ref_p_mrr(changed, run_og, run_ch)
    result = p_mrr(qrels_og, run_og, qrels_ch, run_ch, rel=rel)
    _assert_matches(result, per_query, mean)
    assert sorted(result.skipped) == sorted(q for q in changed if q not in per_query)
    gained = sum(
        1 for q in set(qrels_og) & set(qrels_ch) for d, g in qrels_ch[q].items() if g >= rel and qrels_og[q].get(d, -1) < rel
    )
    assert result.gained_relevance == gained
    for q, d, o, n, value in result.docs:
        assert (o, n) == (ref_rank(run_og[q], d), ref_rank(run_ch[q], d))
        assert value == pytest.approx(ref_doc_value(o, n), abs=1e-15)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=pair(), pick=st.lists(st.sampled_from(DOCS), max_size=4))
def test_explicit_changed_documents_match_the_reference(data, pick):
    _, _, run_og, run_ch = data
    changed = {q: pick for q in QUERIES[:2]}  # documents a run may not retrieve at all
    per_query, mean = ref_p_mrr(changed, run_og, run_ch)
    _assert_matches(p_mrr(None, run_og, None, run_ch, changed_docs=changed), per_query, mean)


def test_no_changed_documents_gives_nan():
    result = p_mrr({"q": {"a": 1}}, {"q": {"a": 1.0}}, {"q": {"a": 1}}, {"q": {"a": 1.0}})
    assert math.isnan(result.mean) and result.query_ids == [] and result.docs == []


@pytest.mark.parametrize(
    "kwargs",
    [{"rel": -1}, {"rel": True}, {"rel": 1.5}],
)
def test_bad_relevance_level(kwargs):
    with pytest.raises(GpukitError, match="rel"):
        p_mrr({"q": {"a": 1}}, {"q": {"a": 1.0}}, {"q": {"a": 0}}, {"q": {"a": 1.0}}, **kwargs)


def test_bad_inputs_are_named():
    with pytest.raises(GpukitError, match="run_og"):
        p_mrr({"q": {"a": 1}}, [("q", "a")], {"q": {"a": 0}}, {"q": {"a": 1.0}})
    with pytest.raises(GpukitError, match="qrels_changed"):
        p_mrr({"q": {"a": 1}}, {"q": {"a": 1.0}}, None, {"q": {"a": 1.0}})


def test_cli(tmp_path, capsys):
    files = {
        "qo": "q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 2\n",
        "qc": "q1 0 d1 0\nq1 0 d2 1\nq2 0 d3 0\n",
        "ro": "q1 Q0 d1 1 3 a\nq1 Q0 d2 2 2 a\nq2 Q0 d3 1 1.5 a\nq2 Q0 d4 2 1 a\n",
        "rc": "q1 Q0 d2 1 3 b\nq1 Q0 d1 2 2 b\nq2 Q0 d4 1 1.5 b\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    paths = [str(tmp_path / n) for n in ("qo", "ro", "qc", "rc")]
    assert main(["p-mrr", *paths, "--format", "json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    # q1: d1 lost relevance, rank 1 -> 2: 1 - (1/2)/(1/1) = 0.5; q2: d3 rank 1 -> not retrieved (1 + 1 = 2): 0.5.
    assert out["p-MRR"] == 0.5 and out["per_query"] == {"q1": 0.5, "q2": 0.5}
    assert [(d["query_id"], d["doc_id"], d["og_rank"], d["changed_rank"]) for d in out["docs"]] == [
        ("q1", "d1", 1, 2), ("q2", "d3", 1, 2)
    ]
    assert main(["p-mrr", *paths]) == 0
    assert capsys.readouterr().out.startswith("p-MRR  0.5000")


def test_runs_as_gpukit_objects():
    og = gpukit.Run.from_dict({"a": {"0": 1.0, "1": 2.0}}, name="og")
    ch = gpukit.Run.from_dict({"a": {"0": 2.0, "1": 1.0}}, name="ch")
    qo, qc = gpukit.Qrels.from_dict({"a": {"0": 1}}), gpukit.Qrels.from_dict({"a": {"0": 0}})
    assert p_mrr(qo, og, qc, ch).mean == pytest.approx((1 / 2) / 1 - 1)  # rank 2 -> 1


def test_docs_example():
    """docs/measures_and_conventions.md, "Instruction following": d2 rank 1 -> 3, d5 rank 2 -> 1."""
    og = {"q1": {"d1": 1, "d2": 1}, "q2": {"d5": 1, "d6": 1}}
    changed = {"q1": {"d1": 1, "d2": 0}, "q2": {"d5": 0, "d6": 1}}
    run_og = {"q1": {"d2": 3.0, "d1": 2.0, "d3": 1.0}, "q2": {"d6": 2.0, "d5": 1.0}}
    run_changed = {"q1": {"d1": 3.0, "d3": 2.0, "d2": 1.0}, "q2": {"d5": 2.0, "d6": 1.0}}
    result = p_mrr(og, run_og, changed, run_changed)
    assert result.by_query == pytest.approx({"q1": 1 - (1 / 3) / 1, "q2": (1 / 2) / 1 - 1})
    assert result.mean == pytest.approx((2 / 3 - 1 / 2) / 2)
    assert round(result.mean, 4) == 0.0833


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=pair())
def test_cuda_matches_the_reference(data):
    qrels_og, qrels_ch, run_og, run_ch = data
    per_query, mean = ref_p_mrr(ref_changed(qrels_og, qrels_ch, 1), run_og, run_ch)
    _assert_matches(p_mrr(qrels_og, run_og, qrels_ch, run_ch, device="cuda"), per_query, mean)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=pair())
def test_mteb_package_calculate_pmrr(data):
    """MTEB's own calculate_pmrr, where mteb is installed (its import pulls transformers, datasets...)."""
    metrics = pytest.importorskip("mteb._evaluators.retrieval_metrics")
    qrels_og, qrels_ch, run_og, run_ch = data
    changed = ref_changed(qrels_og, qrels_ch, 1)
    ours = p_mrr(qrels_og, run_og, qrels_ch, run_ch)
    if not ours.query_ids:
        return  # MTEB fails on an empty change set; gpukit gives NaN (test_no_changed_documents_gives_nan)
    theirs = metrics.calculate_pmrr(
        {q + "-og": v for q, v in run_og.items()}, {q + "-changed": v for q, v in run_ch.items()}, changed
    )
    assert ours.mean == pytest.approx(theirs, abs=1e-12)
