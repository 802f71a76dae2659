"""Preference and judgment-group families against the plain-Python reference
(tests/reference_prefs.py) on random small inputs, the readers' errors, and
the refusals of gpukit.evaluate and the streaming evaluator."""
from __future__ import annotations

import math

import pytest
import torch
from fixture_paths import TESTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_prefs import (
    JG_FAMILIES,
    PREFS_FAMILIES,
    reference_jg_evaluate,
    reference_prefs_evaluate,
)

import gpukit
from gpukit.errors import GpukitError, InputFormatError, MeasureError
from gpukit.judgments.judgment_groups import JudgmentGroups
from gpukit.judgments.prefs import Prefs

QUERIES = ["q1", "q2", "q10", "q3"]
DOCS = ["d1", "d2", "d3", "d4", "d5", "d6", "D7", "d10"]
SCORES = [0.0, 0.5, 1.0, 1.0, 2.0, 3.5]  # repeated values: ties
TOL = 1e-9


@st.composite
def prefs_and_run(draw):
    """Random preferences: 1-3 JGs per query; a JG of one JSG gets any levels
    (negative ones too, as -R qrels_prefs grades); a JG of several JSGs takes
    each doc's level from one hidden order, so that it is consistent."""
    lines = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=3, unique=True)):
        for g in range(draw(st.integers(1, 3))):
            n_jsg = draw(st.sampled_from([1, 1, 2, 3]))
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True))
            if n_jsg == 1:
                for d in docs:
                    lines.append((q, f"g{g}", "s", d, float(draw(st.sampled_from([-1, 0, 0, 1, 2, 3])))))
                continue
            hidden = {d: float(draw(st.sampled_from([0, 0, 0, 1, 2]))) for d in docs}
            for s in range(n_jsg):
                for d in draw(st.lists(st.sampled_from(docs), min_size=1, max_size=len(docs), unique=True)):
                    lines.append((q, f"g{g}", f"s{s}", d, hidden[d]))
    run = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
        run[q] = {d: draw(st.sampled_from(SCORES)) for d in docs}
    return lines, run


OPTIONS = st.fixed_dictionaries(
    {
        "convention": st.sampled_from(["gpukit", "trec_eval"]),
        "complete": st.sampled_from([None, True, False]),
        "max_depth": st.sampled_from([None, None, 1, 3]),
    }
)


def _assert_matches(report, expected, names, relevance_level=None):
    assert report.query_ids == expected["query_ids"]
    for name in names:
        # relevance_level rewrites names without rel= (so two names may be one measure).
        result = report[gpukit.parse_measures([name], rel=relevance_level)[0]]
        want = expected["measures"][name]
        for q, v, keep in zip(report.query_ids, result.per_query.tolist(), result.mask.tolist()):
            w = want["per_query"][q]
            if w is None:
                assert not keep and math.isnan(v), (name, q, v)
            else:
                assert keep and abs(v - w) <= TOL, (name, q, v, w)
        if math.isnan(want["mean"]):
            assert math.isnan(result.mean), name
        else:
            assert abs(result.mean - want["mean"]) <= TOL, (name, result.mean, want["mean"])


@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=prefs_and_run(), options=OPTIONS)
def test_prefs_families_match_the_reference(data, options):
    lines, run = data
    expected = reference_prefs_evaluate(lines, run, PREFS_FAMILIES, **options)
    prefs = Prefs.from_arrays(*zip(*lines))
    report = gpukit.evaluate(prefs, gpukit.Run.from_dict(run), list(PREFS_FAMILIES), **options)
    _assert_matches(report, expected, PREFS_FAMILIES)


@st.composite
def groups_and_run(draw):
    groups = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=3, unique=True)):
        groups[q] = {}
        for g in range(draw(st.integers(1, 3))):
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True))
            groups[q][f"u{g}"] = {d: draw(st.sampled_from([-1, 0, 0, 1, 2])) for d in docs}
    run = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
        run[q] = {d: draw(st.sampled_from(SCORES)) for d in docs}
    return groups, run


JG_NAMES = ["APAvgJG", "APAvgJG(rel=2)", "PAvgJG@1", "PAvgJG@3", "PAvgJG(rel=2)@10", "RprecMultAvgJG",
            "RprecMultAvgJG(mult=0.2)", "RprecMultAvgJG(mult=1.6)", "RprecMultAvgJG(mult=2)"]


@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=groups_and_run(), options=OPTIONS, relevance_level=st.sampled_from([None, 1, 2]))
def test_judgment_group_families_match_the_reference(data, options, relevance_level):
    groups, run = data
    assert {n.split("(")[0].split("@")[0] for n in JG_NAMES} == set(JG_FAMILIES)
    expected = reference_jg_evaluate(groups, run, JG_NAMES, relevance_level=relevance_level, **options)
    report = gpukit.evaluate(JudgmentGroups.from_dict(groups), gpukit.Run.from_dict(run), JG_NAMES,
                                             relevance_level=relevance_level, **options)
    _assert_matches(report, expected, JG_NAMES, relevance_level)


def test_ties_are_broken_by_docno_ascending_for_prefs_and_descending_for_judgment_groups():
    """trec_eval's form_prefs_counts.c and form_res_rels_jg.c disagree on ties."""
    run = gpukit.Run.from_dict({"q": {"a": 1.0, "b": 1.0}})
    prefs = Prefs.from_arrays(["q", "q"], ["g", "g"], ["s", "s"], ["a", "b"], [2.0, 1.0])
    assert gpukit.evaluate(prefs, run, "prefs_simp_ret").means() == {"PrefsSimpRet": 1.0}
    groups = JudgmentGroups.from_dict({"q": {"g": {"a": 1, "b": 0}}})
    assert gpukit.evaluate(groups, run, "P_avgjg.1").means() == {"PAvgJG@1": 0.0}


# ------------------------------------------------------------------ readers
def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_prefs_reader_names_file_and_line_of_a_malformed_line(tmp_path):
    path = _write(tmp_path, "p.txt", "# comment\nq g s d1 1\nq g s d2\n")
    with pytest.raises(InputFormatError, match=r"p\.txt:3: expected 5 columns"):
        Prefs.from_trec(path)


def test_prefs_reader_rejects_a_level_that_is_not_a_number(tmp_path):
    path = _write(tmp_path, "p.txt", "q g s d1 1\nq g s d2 high\n")
    with pytest.raises(InputFormatError, match=r"p\.txt:2: level 'high' is not a number"):
        Prefs.from_trec(path)


def test_prefs_reader_rejects_a_repeated_line(tmp_path):
    path = _write(tmp_path, "p.txt", "q g s d1 1\nq g s d2 0\nq g s d1 1\n")
    with pytest.raises(InputFormatError, match=r"p\.txt:3: document 'd1' is given twice .*lines 1 and 3"):
        Prefs.from_trec(path)


def test_prefs_reader_rejects_relevant_and_nonrelevant_in_one_jg(tmp_path):
    path = _write(tmp_path, "p.txt", "q g s1 d1 1\nq g s1 d2 0\nq g s2 d1 0\nq g s2 d3 2\n")
    with pytest.raises(InputFormatError, match=r"p\.txt:3: document 'd1' has rel_level 0 and a rel_level > 0 .*lines 1 and 3"):
        Prefs.from_trec(path)


def test_prefs_reader_rejects_negative_levels_in_a_partial_order(tmp_path):
    path = _write(tmp_path, "p.txt", "q g s1 d1 1\nq g s2 d2 -1\n")
    with pytest.raises(InputFormatError, match=r"p\.txt:2: rel_level -1 is negative"):
        Prefs.from_trec(path)


def test_prefs_reader_rejects_an_empty_file_and_a_missing_one(tmp_path):
    with pytest.raises(InputFormatError, match="empty prefs file"):
        Prefs.from_trec(_write(tmp_path, "p.txt", "# nothing\n"))
    with pytest.raises(InputFormatError, match="no such file"):
        Prefs.from_trec(tmp_path / "missing.txt")


def test_inconsistent_judgment_group_is_an_error():
    prefs = Prefs.from_arrays(["q"] * 4, ["g"] * 4, ["s1", "s1", "s2", "s2"], ["a", "b", "b", "a"], [2.0, 1.0, 2.0, 1.0])
    with pytest.raises(InputFormatError, match="query 'q' JG 'g': inconsistent preferences"):
        gpukit.evaluate(prefs, gpukit.Run.from_dict({"q": {"a": 1.0}}), "prefs_simp")


def test_qrels_prefs_from_a_qrels_object_equals_the_file_reader(tmp_path):
    path = _write(tmp_path, "qrels", "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 a -1\nq2 0 b 1\n")
    from_file = Prefs.from_qrels_file(path)
    from_qrels = Prefs.from_qrels(gpukit.Qrels.from_trec(path))
    assert from_file.to_rows() == from_qrels.to_rows()
    assert from_file.to_rows()[:3] == [("q1", "0", "0", "a", 1.0), ("q1", "0", "0", "b", 0.0), ("q1", "0", "0", "c", 2.0)]


def test_qrels_jg_reader_errors(tmp_path):
    with pytest.raises(InputFormatError, match=r"j\.txt:2: grade 'x' is not an integer"):
        JudgmentGroups.from_trec(_write(tmp_path, "j.txt", "q u1 d1 1\nq u1 d2 x\n"))
    with pytest.raises(InputFormatError, match=r"j\.txt:3: duplicate judgment for query 'q' JG 'u1' doc 'd1' \(lines 1 and 3\)"):
        JudgmentGroups.from_trec(_write(tmp_path, "j.txt", "q u1 d1 1\nq u2 d1 0\nq u1 d1 0\n"))
    with pytest.raises(InputFormatError, match=r"j\.txt:1: expected 4 columns"):
        JudgmentGroups.from_trec(_write(tmp_path, "j.txt", "q u1 d1\n"))


# ------------------------------------------------------------------ refusals
def test_evaluate_with_qrels_refuses_preference_and_group_measures():
    qrels = gpukit.Qrels.from_dict({"q": {"a": 1}})
    run = gpukit.Run.from_dict({"q": {"a": 1.0}})
    with pytest.raises(MeasureError, match=r"PrefsSimp needs preference judgments \(gpukit.Prefs.from_trec.*not ordinary qrels"):
        gpukit.evaluate(qrels, run, ["P@5", "prefs_simp"])
    with pytest.raises(MeasureError, match=r"APAvgJG needs judgment groups \(.*not ordinary qrels"):
        gpukit.evaluate(qrels, run, "map_avgjg")


def test_prefs_and_group_evaluation_refuse_other_measures():
    run = gpukit.Run.from_dict({"q": {"a": 1.0}})
    prefs = Prefs.from_arrays(["q"], ["g"], ["s"], ["a"], [1.0])
    with pytest.raises(MeasureError, match=r"P@5 needs ordinary qrels \(gpukit.Qrels.from_trec.*not preference judgments"):
        gpukit.evaluate(prefs, run, ["prefs_simp", "P@5"])
    with pytest.raises(MeasureError, match=r"APAvgJG needs judgment groups \(.*\), not preference judgments"):
        gpukit.evaluate(prefs, run, ["map_avgjg"])
    with pytest.raises(GpukitError, match="max_depth must be a positive integer"):
        gpukit.evaluate(prefs, run, "prefs_simp", max_depth=0)


@pytest.mark.parametrize("name", ["PrefsSimp", "PrefsNumPoss", "APAvgJG", "PAvgJG@10", "RprecMultAvgJG"])
def test_streaming_evaluator_refuses_them(name):
    with pytest.raises(GpukitError, match="cannot compute"):
        gpukit.RetrievalEvaluator([name])


def test_gpukit_convention_omits_queries_without_preferences():
    """A query whose only JG has one level has no preferences: trec_eval scores
    PrefsSimp 0, gpukit omits it (and counts it)."""
    prefs = Prefs.from_arrays(["q1", "q1", "q2", "q2"], ["g"] * 4, ["s"] * 4, ["a", "b", "a", "b"], [1.0, 0.0, 1.0, 1.0])
    run = gpukit.Run.from_dict({"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 1.0}})
    trec = gpukit.evaluate(prefs, run, "PrefsSimp")["PrefsSimp"]
    assert trec.per_query.tolist() == [1.0, 0.0] and trec.mean == 0.5
    ours = gpukit.evaluate(prefs, run, "PrefsSimp", convention="gpukit")["PrefsSimp"]
    assert (ours.mean, ours.evaluated, ours.omitted) == (1.0, 1, 1)


def test_rnonrel_ret_keeps_up_to_all_relevant_in_a_partial_order():
    """trec_eval's prefs_avgjg_Rnonrel_ret, for a JG of several JSGs, keeps the
    retrieved non-relevant documents up to the JG's relevant count R = 2 (not
    its relevant *retrieved* count, 1). JSG s1: a > x, a > y; JSG s2: b > z;
    ranking y, a, x, z (b unretrieved): z, the third retrieved non-relevant,
    is dropped; of a > x (fulfilled) and a > y (failed), 1 of 2 is fulfilled."""
    lines = [("q", "g", "s1", "a", 1), ("q", "g", "s1", "x", 0), ("q", "g", "s1", "y", 0),
             ("q", "g", "s2", "b", 1), ("q", "g", "s2", "z", 0)]
    run = {"q": {"y": 5.0, "a": 4.0, "x": 3.0, "z": 1.0}}
    got = gpukit.evaluate(Prefs.from_arrays(*zip(*lines)), gpukit.Run.from_dict(run), "prefs_avgjg_Rnonrel_ret")
    assert got.means() == {"PrefsAvgJGRnonrelRet": 0.5}
    assert reference_prefs_evaluate(lines, run, ["PrefsAvgJGRnonrelRet"])["measures"]["PrefsAvgJGRnonrelRet"]["mean"] == 0.5


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_equals_cpu_bitwise():
    """Same kernels on CUDA: every per-query value equal to the CPU's, bit for bit."""
    data = TESTS / "data" / "trec_eval"
    cases = [
        (gpukit.evaluate, Prefs.from_trec(data / "prefs.test"), gpukit.Run.from_trec(data / "prefs.results.test")),
        (gpukit.evaluate, Prefs.from_qrels_file(data / "qrels.test"), gpukit.Run.from_trec(data / "results.test")),
        (gpukit.evaluate, JudgmentGroups.from_trec(data / "qrels.123"), gpukit.Run.from_trec(data / "results.test")),
    ]
    for evaluate, judgments, run in cases:
        on_cpu = evaluate(judgments, run, device="cpu")
        on_cuda = evaluate(judgments, run, device="cuda")
        for m in on_cpu.measures:
            assert torch.equal(on_cpu[m].per_query, on_cuda[m].per_query.cpu()), str(m)
            assert on_cpu[m].mean == on_cuda[m].mean, str(m)


def test_a_hash_inside_a_docno_is_not_a_comment(tmp_path):
    """trec_eval skips lines that start with '#', and only those (prefs.comment.test, qrels.comments.123)."""
    prefs = Prefs.from_trec(_write(tmp_path, "p.txt", "# a comment\nq g s d#37 1\nq g s d2 0\n"))
    assert [r[3] for r in prefs.to_rows()] == ["d#37", "d2"]
    groups = JudgmentGroups.from_trec(_write(tmp_path, "j.txt", "# a comment\nq u d#37 1\n"))
    assert groups.to_dict() == {"q": {"u": {"d#37": 1}}}
