"""Compat(p, normalize) against ir_measures' compat provider, per query, to 1e-9.

Random graded qrels (grades -1..3, R = 0 queries, more relevant documents
than the ranking holds, queries the run lacks) and runs with many score ties and unjudged
documents. The provider breaks score ties by doc id ascending, gpukit (as
trec_eval) by doc id descending, and it orders an ideal grade's documents by
their score (so in ranking order when scores are distinct and positive). So
the test ranks each query itself (plain Python: score descending, doc id
descending, cut at max_depth) and hands the provider distinct positive
scores in that order; the tests after it pin down, on hand-computed
examples, what the provider does differently on the raw scores.
"""
from __future__ import annotations

import random

import pytest
import torch
from reference import rank, reference_evaluate

import gpukit

ir_measures = pytest.importorskip("ir_measures")

TOL = 1e-9
NAMES = {  # gpukit name -> ir_measures name
    "Compat": "Compat",
    "Compat(p=0.8)": "Compat(p=0.8)",
    "Compat(p=0.5,normalize=False)": "Compat(p=0.5,normalize=False)",
    "Compat(normalize=False)": "Compat(normalize=False)",
    "Compat(p=0.99)": "Compat(p=0.99)",
    "Compat(p=1)": "Compat(p=1.0)",
}


def _collection(seed: int):
    rng = random.Random(seed)
    pool = [f"d{rng.randrange(10 ** rng.randint(1, 3))}-{i}" for i in range(120)]
    qrels, run = {}, {}
    for q in (f"q{t}" for t in rng.sample(range(100), 20)):
        retrieved = rng.sample(pool, rng.randint(1, 45))
        if rng.random() < 0.85:
            run[q] = {d: float(rng.randint(0, 5)) for d in retrieved}  # ties
        judged = rng.sample(retrieved, rng.randint(0, len(retrieved))) + rng.sample(pool, rng.randint(1, 30))
        weights = [1, 4, 0, 0, 0] if rng.random() < 0.15 else [1, 4, 3, 2, 1]  # some R = 0
        qrels[q] = {d: rng.choices([-1, 0, 1, 2, 3], weights)[0] for d in judged}
    run["unjudged"] = {pool[0]: 1.0}  # a run query without judgments
    return qrels, run


def _provider(qrels, run, names, max_depth):
    """Per-query values of the compat provider on gpukit's ranking, as distinct positive scores."""
    ranked = {q: {d: float(10_000 - i) for i, d in enumerate(rank(docs, max_depth))} for q, docs in run.items()}
    provider = ir_measures.providers.registry["compat"]
    out = {}
    for name in names:
        measure = ir_measures.parse_measure(name)
        out[name] = {m.query_id: m.value for m in provider.evaluator([measure], qrels).iter_calc(ranked)}
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_depth", [None, 5])
def test_per_query_values_equal_the_compat_provider(seed, max_depth):
    qrels, run = _collection(seed)
    expected = _provider(qrels, run, NAMES.values(), max_depth)
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), list(NAMES),
                             convention="trec_eval", complete=True, max_depth=max_depth)
    ref = reference_evaluate(qrels, run, list(NAMES), convention="trec_eval", complete=True, max_depth=max_depth)
    # The provider gives qrels queries the run lacks 0 (ir_measures' default): empty rankings in gpukit.
    both = set(qrels)
    nonzero = 0
    for name, theirs in NAMES.items():
        want = expected[theirs]
        assert set(want) == both == set(report.query_ids), name
        got = dict(zip(report.query_ids, report[name].per_query.tolist()))
        for q in both:
            assert abs(got[q] - want[q]) <= TOL, f"{name} {q}: compat provider {want[q]}, gpukit {got[q]}"
            assert abs(ref["measures"][name]["per_query"][q] - want[q]) <= TOL, f"reference {name} {q}"
            nonzero += want[q] > 0
        assert report[name].mean == pytest.approx(sum(want.values()) / len(want), abs=TOL)
    assert nonzero > len(NAMES) * len(both) // 4  # the comparison is not all zeros


def test_gpukit_convention_omits_queries_without_relevant_documents():
    qrels = {"1": {"a": 1}, "2": {"a": 0, "b": -1}, "3": {"c": 2}}
    run = {"1": {"a": 2.0, "b": 1.0}, "2": {"a": 1.0}}
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["Compat"])
    result = report["Compat"]
    values = dict(zip(report.query_ids, result.per_query.tolist()))
    assert values["1"] == pytest.approx(1.0) and values["3"] == 0.0  # "3": an empty ranking
    assert (result.evaluated, result.omitted) == (2, 1)
    assert torch.isnan(result.per_query[report.query_ids.index("2")])


P = 0.95


def test_score_ties_rank_by_doc_id_descending_where_the_provider_takes_ascending():
    """Tied a, b; b relevant. gpukit ranks [b, a]: the ideal [b] is matched at depth 1 (Compat 1).
    The provider ranks [a, b]: overlap 0 at depth 1, 1 at depth 2: (p/2) / (1 + p/2)."""
    qrels, run = {"1": {"b": 1}}, {"1": {"a": 1.0, "b": 1.0}}
    ours = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["Compat"])["Compat"].mean
    theirs = next(ir_measures.providers.registry["compat"].iter_calc([ir_measures.parse_measure("Compat")], qrels, run))
    assert ours == pytest.approx(1.0, abs=1e-15)
    assert theirs.value == pytest.approx((P / 2) / (1 + P / 2), abs=1e-15)


def test_ideal_ties_follow_the_ranking_even_with_negative_scores():
    """a (score -1) and b (not retrieved) both grade 1. gpukit's ideal is [a, b]: overlaps 1, 1 over
    depths 1, 2, and the ideal's own overlaps 1, 2: (1 + p/2) / (1 + p). The provider gives b the
    score 0.0 > -1: ideal [b, a], overlaps 0, 1: (p/2) / (1 + p)."""
    qrels, run = {"1": {"a": 1, "b": 1}}, {"1": {"a": -1.0}}
    ours = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["Compat"])["Compat"].mean
    theirs = next(ir_measures.providers.registry["compat"].iter_calc([ir_measures.parse_measure("Compat")], qrels, run))
    assert ours == pytest.approx((1 + P / 2) / (1 + P), abs=1e-15)
    assert theirs.value == pytest.approx((P / 2) / (1 + P), abs=1e-15)


def test_hand_checked_graded_ideal():
    """Ranking [x(2), y(0), z(1)], qrels x=2, z=1, w=2 (w not retrieved), p = 1/2, not normalised.
    Ideal [x, w, z] (grade 2: x retrieved first; then z); D = 3; overlaps 1, 1, 2:
    (1 + 1/2 * 1/2 + 1/4 * 2/3) / (1 + 1/2 + 1/4)."""
    qrels, run = {"1": {"x": 2, "z": 1, "w": 2, "y": 0}}, {"1": {"x": 3.0, "y": 2.0, "z": 1.0}}
    got = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["Compat(p=0.5,normalize=False)"])
    assert float(got["Compat(p=0.5,normalize=False)"].mean) == pytest.approx((1 + 1 / 4 + 1 / 6) / 1.75, abs=1e-15)


def test_rows_whose_relevant_documents_fill_the_ideal_width():
    """The kernel keeps min(K, L) sorted columns per row (L: the most judged documents of a
    topic): here q1's relevant documents, all ranked, are exactly L, below unjudged ones,
    and q2 has fewer judgments than L but a deeper ranking."""
    qrels = {"q1": {"a": 1, "b": 3, "c": 2, "d": 2}, "q2": {"a": 2, "e": 0}}
    run = {"q1": {"u1": 9.0, "u2": 8.0, "d": 7.0, "u3": 6.0, "a": 5.0, "c": 4.0, "b": 3.0},
           "q2": {f"u{i}": float(20 - i) for i in range(12)} | {"a": 0.5, "e": 0.25}}
    names = list(NAMES)
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, convention="trec_eval")
    ref = reference_evaluate(qrels, run, names, convention="trec_eval")
    want = _provider(qrels, run, [NAMES[n] for n in names], None)
    for name in names:
        for q, v in zip(report.query_ids, report[name].per_query.tolist()):
            assert v == pytest.approx(ref["measures"][name]["per_query"][q], abs=1e-12), (name, q)
            assert v == pytest.approx(want[NAMES[name]][q], abs=TOL), (name, q)


def test_streaming_evaluator_equals_evaluate():
    """Compat alone in the stream: the dense batch must carry every candidate's grade in the ideal."""
    g = torch.Generator().manual_seed(7)
    b, n = 16, 25
    scores = torch.randint(0, 5, (b, n), generator=g).to(torch.float64)
    targets = torch.randint(-1, 4, (b, n), generator=g)
    targets[:, 0] = 3
    ids = [f"{n - 1 - j:03d}" for j in range(n)]  # column ascending = doc id descending
    run = {f"q{i:02d}": {ids[j]: float(scores[i, j]) for j in range(n)} for i in range(b)}
    qrels = {f"q{i:02d}": {ids[j]: int(targets[i, j]) for j in range(n) if targets[i, j] >= 0} for i in range(b)}
    names = ["Compat(p=0.8)"]
    want = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names)[names[0]].mean
    ev = gpukit.RetrievalEvaluator(names)
    ev.update(scores[:5], targets[:5])
    ev.update(scores[5:], targets[5:])
    assert ev.compute_report(sync=False).results[names[0]].mean == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("name,problem", [("Compat(p=1.5)", "p must be <= 1"), ("Compat(p=-0.1)", "p must be >= 0"),
                                          ("Compat(normalize=maybe)", "True or False"), ("Compat@10", "cutoff"),
                                          ("Compat(rel=2)", "rel")])
def test_bad_names_are_refused_with_the_problem(name, problem):
    with pytest.raises(gpukit.errors.MeasureError, match=problem):
        gpukit.parse_measures([name])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_values_are_the_cpu_values_bit_for_bit():
    """Weights are built on the CPU and the row sum runs in rank order on every device."""
    qrels, run = _collection(5)
    q, r = gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run)
    cpu = gpukit.evaluate(q, r, list(NAMES))
    cuda = gpukit.evaluate(q, r, list(NAMES), device="cuda")
    for name in NAMES:
        assert cpu[name].per_query.tolist() == cuda[name].per_query.cpu().tolist(), name
