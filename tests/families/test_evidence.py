"""Completeness-of-evidence families (Complete, RCap, Hole, APCap) against their definitions and BEIR.

* Hand-built queries whose expected values are worked out from the definitions
  (BEIR's custom_metrics.py, sentence-transformers' MAP@k): Complete@k against
  R@k, RCap@k against R@k when R > k, APCap@k against trec_eval's map_cut,
  Hole@k counting documents judged for *another* query, or with a negative
  grade, as annotated, and dividing by k when fewer are retrieved.
* Hole@k through every doc-key join (packed ids, vocabulary run, packed run
  against a vocabulary qrels) against the plain-Python reference.
* BEIR's own ``recall_cap`` and ``hole`` when the ``beir`` package imports
  (installed with ``--no-deps``, it needs nothing else); BEIR sorts by score
  alone, so those runs have distinct scores, and rounds means to 5 digits.
* sentence-transformers' own MAP@k (``compute_metrics``) against APCap@k,
  where that package is installed.
"""
from __future__ import annotations

import random
from unittest import mock

import pytest
from reference import reference_evaluate

import gpukit
from gpukit.errors import GpukitError
from gpukit.io import doc_space

QRELS = {
    # q1: R = 3 (grades >= 1), d4 non-relevant, d9 in the pool but unjudged (-1).
    "q1": {"d1": 2, "d2": 1, "d3": 1, "d4": 0, "d9": -1},
    # q2: R = 1; x5 is judged for q2 only.
    "q2": {"x1": 1, "x5": 0},
}
RUN = {
    # q1 ranking: d1 (rel), d4 (nonrel), x5 (judged for q2 only), d2 (rel), u1 (never judged), d9 (-1), d3 (rel)
    "q1": {"d1": 7.0, "d4": 6.0, "x5": 5.0, "d2": 4.0, "u1": 3.0, "d9": 2.0, "d3": 1.0},
    # q2 ranking: u2 (never judged), x1 (rel); only two documents retrieved.
    "q2": {"u2": 2.0, "x1": 1.0},
}


def _values(names, qrels=QRELS, run=RUN, **options):
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, **options)
    return {str(m): dict(zip(report.query_ids, report[m].per_query.tolist())) for m in report.measures}


def test_complete_needs_every_relevant_document_where_recall_gives_partial_credit():
    v = _values(["Complete@4", "R@4", "Complete@7", "Complete", "Complete(rel=2)@1"])
    # q1 top 4 holds d1 and d2 of {d1, d2, d3}: R@4 = 2/3, yet the evidence is incomplete.
    assert v["R@4"]["q1"] == pytest.approx(2 / 3)
    assert v["Complete@4"]["q1"] == 0.0
    assert v["Complete@7"]["q1"] == 1.0 and v["Complete"]["q1"] == 1.0
    assert v["Complete@4"]["q2"] == 1.0
    assert v["Complete(rel=2)@1"]["q1"] == 1.0  # only d1 has grade >= 2


def test_capped_recall_divides_by_min_of_k_and_r():
    v = _values(["RCap@1", "R@1", "RCap@4", "RCap@10", "RCap(rel=2)@4"])
    assert v["RCap@1"]["q1"] == 1.0 and v["R@1"]["q1"] == pytest.approx(1 / 3)  # min(1, 3) = 1
    assert v["RCap@4"]["q1"] == pytest.approx(2 / 3)  # min(4, 3) = 3
    assert v["RCap@10"]["q2"] == 1.0
    assert v["RCap(rel=2)@4"]["q1"] == 1.0  # R = 1
    assert _values(["R_cap@4"])["RCap@4"]["q1"] == pytest.approx(2 / 3)  # BEIR's spelling


def test_capped_ap_is_not_map_cut():
    v = _values(["APCap@2", "AP@2", "APCap@7", "AP@7"])
    # q1, k = 2: one relevant document at rank 1 -> sum of P@i = 1; min(2, 3) = 2 vs R = 3.
    assert v["APCap@2"]["q1"] == pytest.approx(1 / 2)
    assert v["AP@2"]["q1"] == pytest.approx(1 / 3)
    # k = 7 >= R: both divide by 3: (1 + 2/4 + 3/7) / 3.
    assert v["APCap@7"]["q1"] == pytest.approx((1 + 2 / 4 + 3 / 7) / 3)
    assert v["AP@7"]["q1"] == pytest.approx(v["APCap@7"]["q1"])
    assert v["APCap@2"]["q2"] == pytest.approx(1 / 2)  # x1 at rank 2, R = 1: P@2 / 1


def test_hole_counts_documents_judged_for_no_query_over_k():
    v = _values(["Hole@3", "Hole@5", "Hole@7", "Hole@10", "Judged@5"])
    # x5 is judged for q2, d9 has grade -1: both annotated (BEIR's annotated corpus = every qrels doc).
    assert v["Hole@3"]["q1"] == 0.0
    assert v["Hole@5"]["q1"] == pytest.approx(1 / 5)  # u1
    assert v["Hole@7"]["q1"] == pytest.approx(1 / 7)
    assert v["Hole@10"]["q1"] == pytest.approx(1 / 10)  # k, not the 7 retrieved
    assert v["Hole@10"]["q2"] == pytest.approx(1 / 10)  # u2 over k = 10, 2 retrieved
    # Judged@5 is per query: x5 and u1 are not judged for q1, d9 (-1) is not judged either.
    assert v["Judged@5"]["q1"] == pytest.approx(3 / 5)


def test_undefined_without_relevant_documents():
    qrels = {"q1": {"a": 0, "b": 0}, "q2": {"c": 1}}
    run = {"q1": {"a": 1.0, "b": 0.5}, "q2": {"c": 1.0}}
    names = ["Complete@1", "RCap@1", "APCap@1", "Hole@1"]
    gk = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names)
    trec = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, convention="trec_eval")
    for name in names[:3]:
        assert (gk[name].evaluated, gk[name].omitted, gk[name].mean) == (1, 1, 1.0), name
        assert (trec[name].evaluated, trec[name].mean) == (2, 0.5), name  # R = 0 scores 0 and stays in
    assert gk["Hole@1"].evaluated == 2


def _random_case(seed: int):
    """Six queries over 15 shared docs (so a doc judged for one query is retrieved for others), score ties."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(15)]
    qrels, run = {}, {}
    for q in range(6):
        qrels[f"q{q}"] = {d: rng.choice([-1, 0, 1, 2]) for d in rng.sample(docs, rng.randint(1, 6))}
        run[f"q{q}"] = {d: float(rng.randint(0, 3)) for d in rng.sample(docs, rng.randint(0, 12))}
    return qrels, run


NAMES = ["Hole@1", "Hole@5", "Hole@20", "RCap@3", "Complete@5", "APCap@4"]


@pytest.mark.parametrize("layout", ["packed", "vocabulary", "radix run, vocabulary qrels", "packed run, vocabulary qrels", "packed run, radix qrels"])
@pytest.mark.parametrize("seed", range(4))
def test_hole_in_every_doc_key_join_matches_the_reference(layout, seed):
    qrels, run = _random_case(seed)
    if layout.startswith("packed run"):
        qrels["q0"]["a_very_long_document_id"] = 0  # > 8 bytes: the qrels keep radix keys or a vocabulary
    expected = reference_evaluate(qrels, run, NAMES, convention="gpukit", max_depth=None)
    if layout == "vocabulary":
        with mock.patch.object(doc_space, "pack_ids", lambda column, *_: None), mock.patch.object(doc_space, "radix_keys", lambda column: None):
            built, judged = gpukit.Run.from_dict(run), gpukit.Qrels.from_dict(qrels)
        assert isinstance(built.doc_space, doc_space.Vocabulary)
    elif layout == "radix run, vocabulary qrels":
        with mock.patch.object(doc_space, "pack_ids", lambda column, *_: None):
            built = gpukit.Run.from_dict(run)
            with mock.patch.object(doc_space, "radix_keys", lambda column: None):
                judged = gpukit.Qrels.from_dict(qrels)
        assert isinstance(built.doc_space, doc_space.RadixIds) and isinstance(judged.doc_space, doc_space.Vocabulary)
    elif layout == "packed run, vocabulary qrels":
        built = gpukit.Run.from_dict(run)
        with mock.patch.object(doc_space, "radix_keys", lambda column: None):
            judged = gpukit.Qrels.from_dict(qrels)
        assert isinstance(judged.doc_space, doc_space.Vocabulary) and isinstance(built.doc_space, doc_space.PackedIds)
    else:
        built, judged = gpukit.Run.from_dict(run), gpukit.Qrels.from_dict(qrels)
    if layout == "packed run, radix qrels":
        assert isinstance(judged.doc_space, doc_space.RadixIds) and isinstance(built.doc_space, doc_space.PackedIds)
    report = gpukit.evaluate(judged, built, NAMES, max_depth=None)
    for name in NAMES:
        got = dict(zip(report.query_ids, report[name].per_query.tolist()))
        for q, want in expected["measures"][name]["per_query"].items():
            if want is None:
                assert got[q] != got[q], (name, q)  # omitted: NaN
            else:
                assert got[q] == pytest.approx(want, abs=1e-12), (name, q, layout)


def test_hole_refused_by_the_streaming_evaluator():
    with pytest.raises(GpukitError, match="annotated corpus"):
        gpukit.RetrievalEvaluator(["Hole@10"])


@pytest.mark.parametrize("seed", range(6))
def test_mteb_package_recall_cap_and_hole_per_query(seed):
    """MTEB's own ``recall_cap`` and ``hole`` (mteb/_evaluators/retrieval_metrics.py, the same
    definitions as BEIR's, ranking ties by doc id descending as gpukit), per query, where mteb is
    installed: score ties, negative grades, R = 0 queries (MTEB: None, gpukit: omitted), k past
    the ranking, documents judged only for another query."""
    metrics = pytest.importorskip("mteb._evaluators.retrieval_metrics")
    qrels, run = _random_case(seed)
    run = {q: docs for q, docs in run.items() if docs}  # MTEB reads qrels[q] for every run query
    ks = [1, 2, 5, 20]
    cap, hole = metrics.recall_cap(qrels, run, ks), metrics.hole(qrels, run, ks)
    names = [f"RCap@{k}" for k in ks] + [f"Hole@{k}" for k in ks]
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, complete=False)
    compared = 0
    for k in ks:
        for name, theirs in ((f"RCap@{k}", cap[f"R_cap_at_{k}"]), (f"Hole@{k}", hole[f"Hole_at_{k}"])):
            got = dict(zip(report.query_ids, report[name].per_query.tolist()))
            assert len(theirs) == len(run)
            for q, want in zip(run, theirs):
                if want is None:
                    assert got[q] != got[q], (name, q)  # R = 0: omitted (NaN) under gpukit's convention
                else:
                    assert got[q] == pytest.approx(want, abs=1e-12), (name, q)
                    compared += 1
    assert compared > 20


@pytest.mark.parametrize("seed", range(5))
def test_beir_package_recall_cap_and_hole(seed):
    custom = pytest.importorskip("beir.retrieval.custom_metrics")
    rng = random.Random(seed)
    docs = [f"doc{i}" for i in range(40)]
    qrels, run = {}, {}
    for q in range(8):
        judged = rng.sample(docs, rng.randint(2, 10))
        grades = {d: rng.choice([0, 1, 2]) for d in judged}
        grades[judged[0]] = 1  # BEIR divides by min(R, k): every query has R > 0
        qrels[f"q{q}"] = grades
        scores = rng.sample(range(1000), rng.randint(1, 30))  # distinct: BEIR sorts by score alone
        run[f"q{q}"] = {d: float(s) for d, s in zip(rng.sample(docs, len(scores)), scores)}
    ks = [1, 3, 10, 50]
    beir_cap = custom.recall_cap(qrels, run, ks)
    beir_hole = custom.hole(qrels, run, ks)
    report = gpukit.evaluate(
        gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), [f"RCap@{k}" for k in ks] + [f"Hole@{k}" for k in ks]
    )
    for k in ks:
        assert round(report[f"RCap@{k}"].mean, 5) == pytest.approx(beir_cap[f"R_cap@{k}"], abs=1e-9), k
        assert round(report[f"Hole@{k}"].mean, 5) == pytest.approx(beir_hole[f"Hole@{k}"], abs=1e-9), k


def test_docs_multi_hop_example():
    """docs/measures_and_conventions.md, "Multi-hop evidence": the table's values, worked by hand."""
    qrels = {"q1": {"p1": 1, "p2": 1, "n1": 0}, "q2": {"r1": 1, "r2": 1, "r3": 1, "n2": 0}}
    run = {"q1": {"p1": 0.9, "n1": 0.8, "u1": 0.7, "p2": 0.6}, "q2": {"r1": 0.9, "r2": 0.8, "n2": 0.7, "u2": 0.6, "r3": 0.5}}
    expected = {
        "R@3": (1 / 2, 2 / 3), "Complete@3": (0.0, 0.0), "R@4": (1.0, 2 / 3), "Complete@4": (1.0, 0.0),
        "R@2": (1 / 2, 2 / 3), "RCap@2": (1 / 2, 1.0), "Hole@3": (1 / 3, 0.0),
        "AP@2": (1 / 2, 2 / 3), "APCap@2": (1 / 2, 1.0),
    }
    v = _values(list(expected), qrels, run)
    for name, (q1, q2) in expected.items():
        assert (v[name]["q1"], v[name]["q2"]) == pytest.approx((q1, q2)), name


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("seed", range(3))
def test_cuda_equals_the_reference(seed):
    """Same kernels on CUDA: values to 1e-12 of the plain-Python reference, both conventions."""
    qrels, run = _random_case(seed)
    for convention in ("gpukit", "trec_eval"):
        expected = reference_evaluate(qrels, run, NAMES, convention=convention)
        report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), NAMES, device="cuda", convention=convention)
        for name in NAMES:
            got = dict(zip(report.query_ids, report[name].per_query.tolist()))
            for q, want in expected["measures"][name]["per_query"].items():
                assert (got[q] != got[q]) if want is None else got[q] == pytest.approx(want, abs=1e-12), (name, q)


@pytest.mark.parametrize("seed", range(5))
def test_sentence_transformers_map_at_k(seed):
    """sentence-transformers' InformationRetrievalEvaluator.compute_metrics MAP@k, where the package is installed
    (binary relevant sets, sorted by score alone: distinct scores)."""
    from types import SimpleNamespace

    ir = pytest.importorskip("sentence_transformers.evaluation")
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(30)]
    qids = [f"q{i}" for i in range(6)]
    relevant = {q: set(rng.sample(docs, rng.randint(1, 12))) for q in qids}
    run = {q: dict(zip(rng.sample(docs, 20), map(float, rng.sample(range(1000), 20)))) for q in qids}
    results = [[{"corpus_id": d, "score": s} for d, s in run[q].items()] for q in qids]
    ks = [1, 3, 10, 100]
    evaluator = SimpleNamespace(accuracy_at_k=[], precision_recall_at_k=[], mrr_at_k=[], ndcg_at_k=[], map_at_k=ks,
                                queries_ids=qids, relevant_docs=relevant, queries=qids)
    theirs = ir.InformationRetrievalEvaluator.compute_metrics(evaluator, results)["map@k"]
    qrels = {q: dict.fromkeys(r, 1) for q, r in relevant.items()}
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), [f"APCap@{k}" for k in ks])
    for k in ks:
        assert report[f"APCap@{k}"].mean == pytest.approx(theirs[k], abs=1e-12), k
