"""Graded families: DCG and nDCG with linear, exponential or custom gains."""
from __future__ import annotations

from gpukit import metrics
from gpukit.families.common import TREC_CUTOFFS, always, describe_graded, trec_names
from gpukit.families.params import GAIN, MIN_GRADE, parse_trec_gains
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family, TrecSyntax
from gpukit.metrics.cutoffs import truncate


def _ndcg(r, m, cuts):
    # Linear and exponential gains keep the ideal grades' order (min_grade
    # zeroes a suffix of it), so only the columns the cutoffs reach are
    # needed; a custom gain re-sorts whole rows.
    floor = m.param("min_grade")
    ideal = metrics.ideal_gains(r.ideal if isinstance(m.gain, tuple) else truncate(r.ideal, cuts), m.gain, floor)
    v, idcg = metrics.ndcg(metrics.gains(truncate(r.grades, cuts), m.gain, floor), ideal, cuts)
    return v, idcg > 0


def _dcg(r, m, cuts):
    v = metrics.dcg(metrics.gains(truncate(r.grades, cuts), m.gain, m.param("min_grade")), cuts)
    return v, always(v)


def _describe(m) -> dict[str, str]:
    out = describe_graded(m)
    if m.param("min_grade"):
        out["gain"] += f"; grades below {m.param('min_grade')} gain 0 (ranx -l{m.param('min_grade')})"
    return out


def _ndcg_trec_name(m):
    if m.param("min_grade"):
        return None  # ranx's relevance level: no trec_eval name
    if isinstance(m.gain, tuple) and m.cutoff is None:
        return "ndcg_" + ",".join(f"{g}={v:g}" for g, v in m.gain)
    return trec_names(cut="ndcg_cut", uncut="ndcg")(m)


nDCG = register(Family(
    name="nDCG",
    summary="normalised discounted cumulative gain",
    definition="nDCG@k = DCG@k / IDCG@k; DCG@k = sum_{i<=k} gain_i / log2(i + 1); the ideal ranks all judged "
    "documents of the query by gain (trec_eval ndcg, ndcg_cut); min_grade=N zeroes the gains of grades below N in "
    "both (ranx's ndcg@k-lN)",
    kernel=_ndcg,
    cutoff="optional",
    params=(GAIN, MIN_GRADE),
    aliases=(Alias("ndcg", "trec_eval"), Alias("ndcg_cut", "trec_eval", bare="expand"),
             Alias("ndcg_burges", "ranx", preset=(("gain", "exp"),))),
    trec=(TrecSyntax("ndcg", "string", param="gain", parse_string=parse_trec_gains, groups=('all_trec',)),
          TrecSyntax("ndcg_cut", "cutoffs", TREC_CUTOFFS, groups=('all_trec',))),
    trec_cutoffs=TREC_CUTOFFS,
    needs=frozenset({"grades", "ideal"}),
    defined_when="IDCG > 0 (the query has a judged document with positive gain)",
    describe=_describe,
    trec_name=_ndcg_trec_name,
    examples=("nDCG@5", "nDCG", "nDCG(gain=exp)@3", "nDCG(gains={1:3,2:9})", "nDCG(gains={1:9,2:3})@3",
              "nDCG(min_grade=2)@5", "nDCG(gain=exp,min_grade=3)", "nDCG(gains={0:1,2:5},min_grade=1)@3"),
))

DCG = register(Family(
    name="DCG",
    summary="discounted cumulative gain",
    definition="DCG@k = sum_{i<=k} gain_i / log2(i + 1); min_grade=N zeroes the gains of grades below N (ranx's "
    "dcg@k-lN)",
    kernel=_dcg,
    cutoff="optional",
    params=(GAIN, MIN_GRADE),
    aliases=(Alias("dcg", "ranx"), Alias("dcg_cut", "ranx"), Alias("dcg_burges", "ranx", preset=(("gain", "exp"),))),
    needs=frozenset({"grades"}),
    describe=lambda m: {k: v for k, v in _describe(m).items() if k != "ideal"},
    examples=("DCG@5", "DCG", "DCG(gain=exp)@5", "DCG(min_grade=2)@5", "DCG(gain=exp,min_grade=2)"),
))
