"""Dict inputs (``{qid: {doc: value}}``): Run.from_dict, Qrels.from_dict and the
compat layers built on them (gpukit.io.nested_mapping).

Rankings are checked against tests/reference.py's plain sort (score
descending, doc id descending), values against independent paths
(``from_arrays`` of the pairs listed in Python) and pytrec_eval's own
behaviour where pytrec_eval defines one.
"""
from __future__ import annotations

import math
import random
from decimal import Decimal

import numpy as np
import pytest
import torch
from reference import rank as reference_rank

from gpukit import Qrels, Run
from gpukit.errors import InputFormatError, UsageTypeError

#: Doc id shapes of the three key spaces: packed (<= 8 bytes), radix (TREC docnos), vocabulary (anything).
ID_SHAPES = {
    "packed": lambda i: f"d{i}",
    "radix": lambda i: f"LA0101{i % 97:02d}-{i:04d}",
    "vocabulary": lambda i: f"dóc-{i * 7919 % 1000}-{'x' * (i % 13)}-{i}",
}


def random_run(rng: random.Random, shape, n_queries: int = 30, float32: bool = True) -> dict:
    run = {}
    for q in range(n_queries):
        n = rng.randint(0, 40)
        ids = rng.sample(range(500), n)
        # Few distinct values: many ties, broken by doc id.
        values = [rng.choice([0.0, -0.0, 0.25, 0.5, 1.0, -2.0, float("inf"), float("-inf")]) if rng.random() < 0.5 else rng.random() for _ in ids]
        if float32:
            values = [float(np.float32(v)) for v in values]
        run[f"q{q}"] = {shape(i): v for i, v in zip(ids, values)}
    return run


@pytest.mark.parametrize("space", sorted(ID_SHAPES))
@pytest.mark.parametrize("float32", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_from_dict_rows_are_in_trec_eval_order(space, float32, seed):
    run = random_run(random.Random(seed), ID_SHAPES[space], float32=float32)
    built = Run.from_dict(run)
    nonempty = sorted(q for q, docs in run.items() if docs)
    assert built.query_id_list() == nonempty  # byte-wise sorted, empty queries left out
    for row, qid in enumerate(nonempty):
        assert built.doc_ids_of_row(row) == reference_rank(run[qid])
        scores = built.scores[row, : len(run[qid])].tolist()
        assert scores == [run[qid][d] for d in reference_rank(run[qid])]


def test_from_dict_equals_from_arrays_of_the_listed_pairs():
    run = random_run(random.Random(7), ID_SHAPES["radix"], float32=False)
    pairs = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    a = Run.from_dict(run)
    b = Run.from_arrays(*zip(*pairs))
    assert a.query_id_list() == b.query_id_list()
    assert a.to_dict() == b.to_dict()
    assert torch.equal(a.scores, b.scores)


def test_non_string_ids_read_as_text_and_a_repeat_is_a_duplicate():
    # 1 and "1" are one id once read as text: the query's rows merge ...
    run = Run.from_dict({1: {"a": 1.0}, "1": {"b": 2.0}, "2": {3: 0.5}})
    assert run.to_dict() == {"1": {"b": 2.0, "a": 1.0}, "2": {"3": 0.5}}
    # ... and a document given under both spellings is retrieved twice.
    with pytest.raises(InputFormatError, match="retrieved twice"):
        Run.from_dict({"q": {1: 0.5, "1": 0.7}})
    assert Run.from_dict({"q": {1: 0.5, "1": 0.7}}, dedup="max").to_dict() == {"q": {"1": 0.7}}
    with pytest.raises(InputFormatError, match="duplicate judgment"):
        Qrels.from_dict({"q": {1: 1, "1": 0}})


def test_empty_queries_and_empty_inputs():
    assert Run.from_dict({"a": {}, "b": {"d": 1.0}}).query_id_list() == ["b"]
    assert Qrels.from_dict({"a": {}, "b": {"d": 1}}).query_id_list() == ["b"]
    with pytest.raises(InputFormatError, match="empty run"):
        Run.from_dict({"a": {}})
    with pytest.raises(InputFormatError, match="empty qrels"):
        Qrels.from_dict({})


def test_nan_scores_and_bad_values_name_the_pair():
    with pytest.raises(InputFormatError, match="query 'q2' document 'd9': score is NaN"):
        Run.from_dict({"q1": {"d1": 1.0}, "q2": {"d3": 0.0, "d9": math.nan}})
    with pytest.raises(InputFormatError, match="not a number"):
        Run.from_dict({"q": {"d": "high"}})
    assert Run.from_dict({"q": {"d": "1.5", "e": 2, "f": True}}).to_dict() == {"q": {"e": 2.0, "d": 1.5, "f": 1.0}}
    assert Run.from_dict({"q": {"d": Decimal("0.25"), "e": np.float32(0.5)}}).to_dict() == {"q": {"e": 0.5, "d": 0.25}}
    with pytest.raises(UsageTypeError, match=r"values must be numbers, got int 1\d+\.\.\."):
        compat.RelevanceEvaluator(QRELS, {"map"}).evaluate({"q1": {"d1": 10**400}})  # beyond a double
    with pytest.raises(InputFormatError, match="query 'q' doc 'e': grade 0.5 is not an integer"):
        Qrels.from_dict({"q": {"d": 1, "e": 0.5}})
    assert Qrels.from_dict({"q": {"d": 1.0, "e": True, "f": np.int64(2)}}).to_dict() == {"q": {"d": 1, "e": 1, "f": 2}}
    with pytest.raises(UsageTypeError, match="for query 'q'"):
        Run.from_dict({"q": [("d", 1.0)]})


# ------------------------------------------------------------- pytrec_eval API
try:
    import pytrec_eval
except ImportError:  # pragma: no cover - the [test] extra installs it
    pytrec_eval = None
from gpukit.compat import pytrec_eval as compat  # noqa: E402

needs_pytrec_eval = pytest.mark.skipif(pytrec_eval is None, reason="needs pytrec-eval-terrier")

QRELS = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d1": 1}}


@needs_pytrec_eval
@pytest.mark.parametrize(
    "run",
    [
        {1: {"d1": 1.0}},  # query id not a string
        {"q1": {1: 1.0}},  # document id not a string
        {"q1": {"d1": "1.5"}},  # score given as text
        {"q1": {"d1": None}},
        {"q1": [("d1", 1.0)]},  # not a mapping
    ],
    ids=["int-qid", "int-docid", "str-score", "none-score", "list"],
)
def test_compat_rejects_what_pytrec_eval_rejects(run):
    with pytest.raises(TypeError):
        pytrec_eval.RelevanceEvaluator(QRELS, {"map"}).evaluate(run)
    with pytest.raises(TypeError):
        compat.RelevanceEvaluator(QRELS, {"map"}).evaluate(run)


@needs_pytrec_eval
@pytest.mark.parametrize("qrels", [{"q1": {"d1": 1.0}}, {"q1": {1: 1}}, {1: {"d1": 1}}], ids=["float-grade", "int-docid", "int-qid"])
def test_compat_qrels_rejects_what_pytrec_eval_rejects(qrels):
    with pytest.raises(TypeError):
        pytrec_eval.RelevanceEvaluator(qrels, {"map"})
    with pytest.raises(TypeError):
        compat.RelevanceEvaluator(qrels, {"map"})


def test_compat_nan_score_is_an_error_not_a_qsort_accident():
    # pytrec_eval returns a number whose ranking depends on its qsort's handling of NaN.
    with pytest.raises(InputFormatError, match="query 'q1' document 'd1': score is NaN"):
        compat.RelevanceEvaluator(QRELS, {"map"}).evaluate({"q1": {"d1": math.nan, "d2": 1.0}})


@needs_pytrec_eval
def test_compat_empty_and_unjudged_queries_as_pytrec_eval():
    run = {"q1": {}, "q2": {"d1": 0.5, "d7": 0.5}, "q9": {"d1": 1.0}}
    measures = {"map", "P_5", "ndcg_cut_10", "recall_100", "num_ret"}
    theirs = pytrec_eval.RelevanceEvaluator(QRELS, measures).evaluate(run)
    ours = compat.RelevanceEvaluator(QRELS, measures).evaluate(run)
    assert list(ours) == list(theirs) == ["q1", "q2"]
    for q in theirs:
        assert ours[q] == pytest.approx(theirs[q], abs=1e-12)
    assert compat.RelevanceEvaluator(QRELS, measures).evaluate({"q1": {}}) == pytrec_eval.RelevanceEvaluator(QRELS, measures).evaluate({"q1": {}})


@needs_pytrec_eval
@pytest.mark.parametrize("seed", range(3))
def test_compat_reused_evaluator_equals_pytrec_eval_on_tied_float32_scores(seed):
    rng = random.Random(seed)
    shape = ID_SHAPES[["packed", "radix", "vocabulary"][seed]]
    qrels = {f"q{q}": {shape(i): rng.randint(-1, 3) for i in rng.sample(range(500), 25)} for q in range(30)}
    measures = {"map", "ndcg_cut.5,10", "P.5,10,100", "recall.100", "recip_rank", "Rprec", "bpref"}
    theirs, ours = pytrec_eval.RelevanceEvaluator(qrels, measures), compat.RelevanceEvaluator(qrels, measures)
    for r in range(3):
        run = random_run(rng, shape, float32=bool(r % 2))
        a, b = theirs.evaluate(run), ours.evaluate(run)
        assert list(a) == list(b)
        for q in a:
            assert a[q].keys() == b[q].keys()
            for m in a[q]:
                assert b[q][m] == pytest.approx(a[q][m], abs=1e-12), (q, m)


def test_ir_measures_provider_reads_a_repeated_scored_doc_as_the_pytrec_eval_provider():
    ir_measures = pytest.importorskip("ir_measures")
    from gpukit.compat.ir_measures import register

    provider = register(first=False, device="cpu")
    qrels = [ir_measures.Qrel("q1", "d1", 1), ir_measures.Qrel("q1", "d2", 1), ir_measures.Qrel("q2", "d1", 2)]
    # d2 twice for q1: read as a dict, the last score stands (0.1: below d1 and d3).
    run = [ir_measures.ScoredDoc("q1", "d2", 3.0), ir_measures.ScoredDoc("q1", "d1", 2.0),
           ir_measures.ScoredDoc("q1", "d3", 1.0), ir_measures.ScoredDoc("q1", "d2", 0.1),
           ir_measures.ScoredDoc("q2", "d1", 1.0)]
    measures = [ir_measures.AP, ir_measures.RR, ir_measures.nDCG @ 2]
    ours = {(m.query_id, str(m.measure)): m.value for m in provider.iter_calc(measures, qrels, run)}
    theirs = {(m.query_id, str(m.measure)): m.value for m in ir_measures.pytrec_eval.iter_calc(measures, qrels, run)}
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert ours[key] == pytest.approx(theirs[key], abs=1e-12)
    assert ours[("q1", "RR")] == 1.0 and ours[("q1", "AP")] == pytest.approx((1 + 2 / 3) / 2)
