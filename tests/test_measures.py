"""Measure names: canonical, trec_eval and ranx spellings, and clear errors."""
from __future__ import annotations

import pytest

from gpukit import Measure, parse_measure, parse_measures
from gpukit.errors import MeasureError

EQUIVALENT = [
    ("nDCG@10", ["ndcg_cut.10", "ndcg_cut_10", "ndcg@10", "NDCG@10"]),
    ("P@10", ["P.10", "P_10", "precision@10"]),
    ("R@100", ["recall.100", "recall_100", "recall@100"]),
    ("RR@10", ["mrr@10", "RR@10"]),
    ("RR", ["recip_rank", "mrr"]),
    ("AP", ["map", "MAP"]),
    ("AP@100", ["map@100", "map_cut.100", "map_cut_100"]),
    ("Rprec", ["r-precision", "Rprec", "r_precision"]),
    ("Success@10", ["success.10", "success_10", "hit_rate@10"]),
    ("nDCG(gain=exp)@10", ["ndcg_burges@10", "nDCG(dcg=exp-log2)@10"]),
    ("nDCG(gains={1:3,2:9})", ["ndcg.1=3,2=9"]),
    ("Bpref", ["bpref"]),
    ("P(rel=2)@5", ["P(rel=2)@5", "precision(rel=2)@5"]),
]


@pytest.mark.parametrize("canonical,aliases", EQUIVALENT)
def test_aliases_parse_to_the_canonical_measure(canonical, aliases):
    expected = parse_measure(canonical)
    assert str(expected) == canonical
    for alias in aliases:
        assert parse_measure(alias) == expected, alias
        assert hash(parse_measure(alias)) == hash(expected)


def test_measure_is_immutable_and_hashable():
    m = parse_measure("P(rel=2)@5")
    assert (m.family, m.cutoff, m.rel) == ("P", 5, 2)
    with pytest.raises(AttributeError):
        m.cutoff = 10  # type: ignore[misc]
    assert {m: 1}[Measure("P", cutoff=5, rel=2)] == 1


def test_trec_eval_lists_expand_to_several_cutoffs():
    assert [str(m) for m in parse_measures(["P.5,10", "ndcg_cut.10,20"])] == ["P@5", "P@10", "nDCG@10", "nDCG@20"]


def test_relevance_level_applies_to_binary_measures_without_explicit_rel():
    got = parse_measures(["P@5", "P(rel=3)@5", "nDCG@10"], rel=2)
    assert [str(m) for m in got] == ["P(rel=2)@5", "P(rel=3)@5", "nDCG@10"]


@pytest.mark.parametrize(
    "name,fragment",
    [
        ("foo@10", "unknown measure"),
        ("Success", "needs a cutoff"),  # (Judged without a cutoff is ir_measures' whole-ranking Judged)
        ("RBP(rel=1,gain=exp)", "is binary"),
        ("hit_rate", "needs a cutoff"),  # ranx's bare precision is SetP (tests/test_ranx_names.py)
        ("P@0", "positive integer"),
        ("nDCG(rel=2)@10", "takes no rel"),
        ("P(gain=exp)@10", "takes no gain"),
        ("Rprec@10", "takes no cutoff"),
        ("nDCG(gain=cubic)@10", "gain must be"),
        ("P(weird=1)@5", "unknown parameter"),
        ("", "empty"),
    ],
)
def test_bad_names_are_clear_errors(name, fragment):
    with pytest.raises(MeasureError, match=fragment):
        parse_measure(name)


def test_unknown_name_lists_what_exists():
    with pytest.raises(MeasureError) as info:
        parse_measure("ndgc@10")
    assert "nDCG@k" in str(info.value) and "ndcg_cut.k" in str(info.value) and "hit_rate@k" in str(info.value)


# trec_eval's default cutoffs, from its m_P.c / m_success.c (long_cutoff_array).
TREC_DEFAULT = [5, 10, 15, 20, 30, 100, 200, 500, 1000]


@pytest.mark.parametrize(
    "group,family,cutoffs",
    [
        ("P", "P", TREC_DEFAULT),
        ("recall", "R", TREC_DEFAULT),
        ("ndcg_cut", "nDCG", TREC_DEFAULT),
        ("map_cut", "AP", TREC_DEFAULT),
        ("success", "Success", [1, 5, 10]),
    ],
)
def test_bare_trec_eval_group_names_expand_to_trec_eval_default_cutoffs(group, family, cutoffs):
    got = parse_measures([group])
    assert [(m.family, m.cutoff) for m in got] == [(family, k) for k in cutoffs]


def test_bare_uncut_trec_eval_names_keep_their_meaning():
    assert parse_measure("ndcg") == Measure("nDCG")
    assert parse_measure("map") == Measure("AP")
    assert parse_measure("R") == Measure("R")  # ir_measures' R without cutoff: the whole ranking


@pytest.mark.parametrize(
    "name,fragment",
    [
        ("ndcg.1=3,1=5", "grade 1 is given two gains"),
        ("nDCG(gains={1:3,1:5})", "grade 1 is given two gains"),
        ("nDCG(gains={1.5:3})", "integer grade"),
        ("nDCG(gains={1:float('nan')})", "gains must"),
        ("nDCG(gains={1:1e999})", "finite"),
        ("ndcg.1=nan", "finite"),
        ("ndcg.1=inf", "finite"),
        ("P(rel=2,rel=3)@5", "given twice"),
        ("ndcg_cut.23.4", "positive integer"),
    ],
)
def test_malformed_parameters_are_errors(name, fragment):
    with pytest.raises(MeasureError, match=fragment):
        parse_measures([name])


def test_trec_eval_reads_cutoffs_like_atol_when_asked():
    from gpukit.measures import parse_measure_names

    assert [m.cutoff for m in parse_measure_names("ndcg_cut.10,20,23.4", trec_atol=True)] == [10, 20, 23]


def test_long_names_are_not_echoed_whole():
    with pytest.raises(MeasureError) as info:
        parse_measure("x" * 1_000_000)
    assert "x" * 100 not in str(info.value) and len(str(info.value)) < 20_000
