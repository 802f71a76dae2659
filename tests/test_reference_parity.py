"""gpukit.evaluate against the plain-Python reference (tests/reference.py).

Random small qrels and runs with score ties, empty rankings (qrels queries the
run does not answer), run queries without judgments, R = 0 queries, docs not
in the qrels, negative ("in pool, unjudged") grades, graded qrels 0..4, cutoffs
beyond the ranking, max_depth, relevance levels 1 and 2, both conventions and
both topic rules. Per-query values are compared by query id (NaN <-> omitted)
to 1e-12, with the means and the evaluated/omitted counts.
"""
from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpukit
from gpukit.io import doc_space
from gpukit.io.doc_space import RadixIds, Vocabulary
from reference import reference_evaluate

CUDA = pytest.param(
    "cuda",
    marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")],
)

TOL = 1e-12

# Query ids: not all of the same length, mixed case, one non-ASCII (byte-wise
# order == code point order for UTF-8).
QUERY_IDS = ["q0", "q1", "q10", "q2", "Q3", "q\u00e9"]
# Doc ids: prefixes of each other, digits vs letters, upper vs lower case and
# non-ASCII, so that "doc id descending" tie breaking is exercised.
DOC_IDS = ["d1", "d10", "d2", "D2", "d2a", "da", "d\u00e9", "d\u4e2d", "e", "E1", "z", "a"]
# Few distinct scores -> many ties; -0.0 ties with 0.0.
SCORES = [0.0, -0.0, 0.5, 1.0, -1.5]
GRADES = [-2, -1, 0, 1, 2, 3, 4]

CUTOFFS = [1, 3, 5, 20]  # 20 is beyond every ranking (at most 12 docs)
MEASURES = (
    [f"P@{k}" for k in CUTOFFS]
    + [f"P(rel=2)@{k}" for k in (1, 5)]
    + [f"R@{k}" for k in CUTOFFS]
    + ["R", "R(rel=2)@5", "Rprec", "Rprec(rel=2)", "RR", "RR@1", "RR@3", "RR(rel=2)"]
    + [f"Success@{k}" for k in (1, 3, 20)]
    + ["Success(rel=2)@5", "AP", "AP@1", "AP@3", "AP@20", "AP(rel=2)", "Bpref", "Bpref(rel=2)"]
    + ["nDCG", "nDCG@1", "nDCG@3", "nDCG@5", "nDCG@20"]
    + ["nDCG(gain=exp)@5", "nDCG(gain=exp)", "DCG(gain=exp)@5"]
    + ["nDCG(gains={1:3,2:9})@5", "nDCG(gains={1:3,2:9})", "DCG(gains={1:3,2:9})@5"]
    # Non-monotone custom gains: the ideal list is sorted by gain, not grade.
    + ["nDCG(gains={1:9,2:3})@3", "nDCG(gains={1:9,2:3})", "nDCG(gains={0:1,4:0.5})@5"]
    + ["DCG@1", "DCG@5", "DCG", "Judged@1", "Judged@5", "Judged@20"]
    + ["NumRet", "NumRel", "NumRelRet", "NumRel(rel=2)", "NumRelRet(rel=2)"]
)


@st.composite
def qrels_and_run(draw):
    judged_queries = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, max_size=5, unique=True))
    qrels = {}
    for q in judged_queries:
        docs = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=8, unique=True))
        # Some queries judged only 0 (R = 0, IDCG = 0) or only negative.
        pool = draw(st.sampled_from([GRADES, GRADES, GRADES, [0], [-1, -2, 0], [-1, 0, 1, 2]]))
        qrels[q] = {d: draw(st.sampled_from(pool)) for d in docs}
    run_queries = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, max_size=6, unique=True))
    run = {}
    for q in run_queries:
        docs = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=len(DOC_IDS), unique=True))
        run[q] = {d: draw(st.sampled_from(SCORES)) for d in docs}
    return qrels, run


OPTIONS = st.fixed_dictionaries(
    {
        "convention": st.sampled_from(["gpukit", "trec_eval"]),
        "complete": st.sampled_from([None, True, False]),
        "max_depth": st.sampled_from([None, None, 1, 3, 5]),
        "relevance_level": st.sampled_from([None, 1, 2]),
    }
)


def _result(report, name, relevance_level=None):
    # relevance_level rewrites binary measures without an explicit rel=, so
    # "P@5" is reported as P(rel=2)@5 under relevance_level=2.
    return report[gpukit.parse_measures([name], rel=relevance_level)[0]]


def assert_matches_reference(report, expected, measures=MEASURES, relevance_level=None):
    assert report.query_ids == expected["query_ids"]
    for name in measures:
        got = _result(report, name, relevance_level)
        want = expected["measures"][name]
        values = got.per_query.tolist()
        mask = got.mask.tolist()
        for q, v, keep in zip(report.query_ids, values, mask):
            w = want["per_query"][q]
            if w is None:
                assert not keep and math.isnan(v), f"{name} {q}: expected omitted, got {v} (mask {keep})"
            else:
                assert keep and abs(v - w) <= TOL, f"{name} {q}: expected {w}, got {v} (mask {keep})"
        assert got.evaluated == want["evaluated"], name
        assert got.omitted == want["omitted"], name
        if math.isnan(want["mean"]):
            assert math.isnan(got.mean), f"{name}: expected NaN mean, got {got.mean}"
        else:
            assert abs(got.mean - want["mean"]) <= TOL * max(1.0, abs(want["mean"])), (
                f"{name}: mean expected {want['mean']}, got {got.mean}"
            )


def _evaluate(qrels, run, device, **options):
    return gpukit.evaluate(
        gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), MEASURES, device=device, **options
    )


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=qrels_and_run(), options=OPTIONS, float32=st.booleans())
def test_vocabulary_keys_match_reference(data, options, float32):
    """The same cases with doc keys forced to vocabulary codes, and to radix
    keys for the run (the spaces used for long or non-ASCII-leading ids; the
    ids above all pack into 8 bytes),
    and with scores compared in float32, where ties appear after rounding."""
    qrels, run = data
    if float32:
        # Scores that differ in float64 but round to one float32 value.
        run = {q: {d: (s + 1e-9 if i % 2 else s) for i, (d, s) in enumerate(docs.items())} for q, docs in run.items()}
    key = (lambda s: float(np.float32(s))) if float32 else float
    expected = reference_evaluate(qrels, run, MEASURES, score_key=key, **options)
    extra = {"score_dtype": torch.float32} if float32 else {}
    with mock.patch.object(doc_space, "pack_ids", lambda column, *_: None):
        with mock.patch.object(doc_space, "radix_keys", lambda column: None):
            built, judged = gpukit.Run.from_dict(run), gpukit.Qrels.from_dict(qrels)
        assert isinstance(built.doc_space, Vocabulary) and isinstance(judged.doc_space, Vocabulary)
        report = gpukit.evaluate(judged, built, MEASURES, **options, **extra)
        assert_matches_reference(report, expected, relevance_level=options["relevance_level"])
        # The run in radix keys (as for docnos longer than 8 bytes), the qrels in a vocabulary.
        built = gpukit.Run.from_dict(run)
        assert isinstance(built.doc_space, RadixIds)
        report = gpukit.evaluate(judged, built, MEASURES, **options, **extra)
        assert_matches_reference(report, expected, relevance_level=options["relevance_level"])
        # Both in radix keys, each over its own alphabet (the qrels' docs translated into the run's).
        judged = gpukit.Qrels.from_dict(qrels)
        assert isinstance(judged.doc_space, RadixIds)
        report = gpukit.evaluate(judged, built, MEASURES, **options, **extra)
    assert_matches_reference(report, expected, relevance_level=options["relevance_level"])
    packed = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), MEASURES, **options, **extra)
    assert_matches_reference(packed, expected, relevance_level=options["relevance_level"])


@pytest.mark.parametrize("device", ["cpu", CUDA])
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=qrels_and_run(), options=OPTIONS)
def test_matches_reference(device, data, options):
    qrels, run = data
    expected = reference_evaluate(qrels, run, MEASURES, **options)
    report = _evaluate(qrels, run, device, **options)
    assert_matches_reference(report, expected, relevance_level=options["relevance_level"])
    if device != "cpu":
        on_cpu = _evaluate(qrels, run, "cpu", **options)
        for name in MEASURES:
            a = _result(report, name, options["relevance_level"])
            b = _result(on_cpu, name, options["relevance_level"])
            assert torch.equal(a.mask.cpu(), b.mask)
            # NaN != NaN, so compare the NaN pattern and the rest separately.
            pa, pb = a.per_query.cpu(), b.per_query
            assert torch.equal(pa.isnan(), pb.isnan()), name
            assert torch.equal(pa[~pa.isnan()], pb[~pb.isnan()]), name
            assert a.mean == b.mean or (math.isnan(a.mean) and math.isnan(b.mean)), name


# ------------------------------------------------------------ fixed cases
# Hand-checked examples, so that a reference bug cannot hide a gpukit bug.


def test_reference_hand_checked():
    qrels = {"q": {"a": 2, "b": 0, "c": 1, "d": -1, "e": 3}}
    run = {"q": {"a": 1.0, "b": 1.0, "x": 1.0, "c": 0.5, "d": 0.5}}
    # ranking: x (1.0), b (1.0), a (1.0), d (0.5), c (0.5)
    names = ["P@2", "RR", "AP", "Bpref", "Rprec", "Judged@5", "nDCG@3", "NumRelRet", "R@5"]
    ref = reference_evaluate(qrels, run, names, convention="trec_eval")["measures"]
    v = {n: ref[n]["per_query"]["q"] for n in names}
    assert v["P@2"] == 0.0
    assert v["RR"] == 1 / 3
    assert v["AP"] == pytest.approx((1 / 3 + 2 / 5) / 3)  # R = 3 (a, c, e)
    # bpref: N = 1 (b); a has 1 nonrel above -> 1 - 1/1 = 0; c -> 0.
    assert v["Bpref"] == 0.0
    assert v["Rprec"] == pytest.approx(1 / 3)
    assert v["Judged@5"] == pytest.approx(4 / 5)  # b, a, c, d (-1: in the qrels, ir_measures' judged); x unknown
    dcg = 2 / math.log2(4)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert v["nDCG@3"] == pytest.approx(dcg / idcg)
    assert v["NumRelRet"] == 2
    assert v["R@5"] == pytest.approx(2 / 3)
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, convention="trec_eval")
    assert_matches_reference(report, reference_evaluate(qrels, run, names, convention="trec_eval"), names)


def test_gains_ideal_sorted_by_gain_not_grade():
    # gains {1: 9, 2: 3}: the ideal order puts grade-1 docs first.
    qrels = {"q": {"a": 2, "b": 1}}
    run = {"q": {"a": 1.0, "b": 0.5}}
    name = "nDCG(gains={1:9,2:3})"
    dcg = 3 + 9 / math.log2(3)
    idcg = 9 + 3 / math.log2(3)
    ref = reference_evaluate(qrels, run, [name])["measures"][name]["per_query"]["q"]
    assert ref == pytest.approx(dcg / idcg)
    got = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), [name])[name].per_query[0].item()
    assert got == pytest.approx(dcg / idcg, abs=TOL)


@pytest.mark.parametrize("device", ["cpu", CUDA])
def test_rr_cutoff_beyond_longest_ranking_without_relevant(device):
    """RR@k must be 0 when no relevant document is retrieved, whatever k is.

    Fails on gpukit 0.1.0: ``first_relevant_rank`` returns K + 1 (K = padded
    ranking width) for "no relevant document", and ``reciprocal_rank`` keeps
    1 / first whenever first <= k, so any k > K gives 1 / (K + 1): here K = 1
    and RR@3 = RR@1000 = 0.5 instead of 0 (RR without a cutoff and RR@1 are
    right). Typical hit: RR@1000 on a depth-100 run gives 1/101 to every query
    without a relevant document.
    """
    qrels = gpukit.Qrels.from_dict({"q": {"a": 0, "b": 2}})
    run = gpukit.Run.from_dict({"q": {"a": 1.0}})
    names = ["RR", "RR@1", "RR@3", "RR@1000"]
    for convention in ("gpukit", "trec_eval"):
        report = gpukit.evaluate(qrels, run, names, device=device, convention=convention)
        for name in names:
            assert report[name].per_query.tolist() == [0.0], (convention, name, report[name].per_query.tolist())
