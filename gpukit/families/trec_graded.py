"""trec_eval's experimental graded families: BinG, G, nDCGRel, RnDCG, RBP, RBPResid, Unjudged.

Gains follow trec_eval's gain table (gain_init.c): each judged grade gains
its own value unless a ``grade=gain`` pair overrides it (``G.1=3,2=9``, the
same syntax as ``ndcg``); gpukit also offers ``gain=exp``. The ideal ranking
holds every judged document with a positive gain, sorted by gain. trec_eval
sorts its gain table with a comparator that truncates gain differences to
integers, so custom gains closer than 1 may be ordered differently there.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from gpukit.errors import MeasureError
from gpukit.families.common import always, describe_gain
from gpukit.families.params import GAIN, MIN_GRADE, REL, _check_gain, flag, number, parse_trec_gains
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family, TrecSyntax
from gpukit.metrics import cwl, ideal_gains
from gpukit.metrics import gains as ranked_gains
from gpukit.metrics import trec_graded as kernels
from gpukit.ranking import NOT_JUDGED

#: trec_eval's persistence for rbp and rbp_resid (ir_measures' RBP default is 0.8).
TREC_P = 0.9
UNJ_CUTOFFS = (5, 10, 20)


def _check_level_gain(value: Any) -> Any:
    value = _check_gain(value)
    if isinstance(value, tuple) and any(grade < 0 for grade, _ in value):
        raise MeasureError("gains apply to judged grades (>= 0); unjudged documents always gain 0")
    return value


#: trec_eval's gain table: grade=gain pairs for judged grades, other grades gain their grade.
LEVEL_GAIN = replace(GAIN, check=_check_level_gain)

#: RBP's persistence, always written in canonical names (tools disagree on its default).
P = replace(
    number("p", "persistence: the probability that the user goes on to the next rank (trec_eval 0.9, ir_measures 0.8)",
           0.8, low=0.0, high=1.0, high_open=True),
    always_show=True,
)


#: RBP's persistence: p = 1 (the mean gain of cwl_eval's 1000 ranks) only for binary RBP(rel=...).
RBP_P = replace(P, check=number("p", P.doc, 0.8, low=0.0, high=1.0).check)


def _check_rbp_rel(value: Any) -> int | None:
    return None if value is None else REL.check(value)


#: ir_measures' RBP(rel=r): binary relevance at grade r (its cwl_eval provider); absent: graded RBP.
RBP_REL = replace(REL, doc="binary RBP: grades >= rel gain 1, as ir_measures' RBP(rel=...) (cwl_eval: ranks "
                  "1..1000, weights normalised over them); absent (default): graded RBP, trec_eval's rbp",
                  default=None, check=_check_rbp_rel, show=lambda v: "graded" if v is None else str(v))


#: trec_eval's gain scaling of graded RBP; scale=False: raw gains, ranx's rbp.
SCALE = flag("scale", "scale gains to (gain - min) / (max - min) over the query's gain table when one lies outside "
             "[0, 1] (trec_eval's rbp); False: raw gains (ranx's rbp.X)", default=True)


def _validate_rbp(m) -> None:
    if m.rel is not None and (not m.param("scale") or m.param("min_grade")):
        raise MeasureError(f"RBP(rel={m.rel}) is binary (cwl_eval's): scale= and min_grade= are graded RBP's")
    if m.param("scale") and m.param("min_grade"):
        raise MeasureError("min_grade (ranx's -l) applies to RBP on raw gains: add scale=False (ranx's rbp.X-lN)")
    if m.rel is None and m.param("p") == 1.0:
        raise MeasureError("graded RBP needs p < 1 ((1 - p) weighs every rank); RBP(p=1,rel=1) is the mean gain of "
                           "cwl_eval's 1000 ranks")
    if m.rel is not None and m.gain != "linear":
        raise MeasureError(f"RBP(rel={m.rel}) is binary: grades >= {m.rel} gain 1; drop gain= (or rel= for graded RBP)")


def _rbp_trec_gains(text: str) -> tuple[tuple[int, float], ...]:
    if any(item.strip().startswith("p=") for item in text.split(",")):
        raise MeasureError("set rbp's persistence with the canonical name, e.g. RBP(p=0.95) or RBP(p=0.95,gains={1:3})")
    return parse_trec_gains(text)


# ------------------------------------------------------------ kernels
def _ranked(r, m):
    return ranked_gains(r.grades, m.gain)


def _binG(r, m, cuts):
    num_rel = r.num_relevant(m.rel)
    v = kernels.binary_g(r.relevant(m.rel), num_rel)[:, None]
    return v, (num_rel > 0)[:, None]


def _G(r, m, cuts):
    v, total = kernels.normalized_gain(_ranked(r, m), ideal_gains(r.ideal, m.gain))
    return v[:, None], (total > 0)[:, None]


def _ndcg_rel(r, m, cuts):
    v, positive = kernels.ndcg_at_relevant(_ranked(r, m), ideal_gains(r.ideal, m.gain))
    return v[:, None], (positive > 0)[:, None]


def _rndcg(r, m, cuts):
    # Custom gains can leave R > 0 without a positive gain: trec_eval then
    # divides 0 by 0 points (nan); gpukit scores 0 and the query is undefined.
    v, points = kernels.ndcg_at_r_levels(_ranked(r, m), ideal_gains(r.ideal, m.gain), r.num_ret)
    has_rel = r.num_relevant(m.rel) > 0
    v = v.where(has_rel, v.new_zeros(()))  # trec_eval returns 0 before anything else when R = 0
    return v[:, None], (has_rel & (points > 0))[:, None]


def _max_grade(r):
    return r.ideal[:, 0] if r.ideal.shape[1] else r.ideal.new_full((r.ideal.shape[0],), -1)


def _rbp(r, m, cuts):
    if m.rel is not None:
        # cwl_eval's binary gains: a judged document (any grade, negatives counting as 0) at grade >= rel gains 1.
        judged_rel = (r.grades.clamp(min=0) >= m.rel) & (r.grades != NOT_JUDGED)
        v = cwl.rank_biased_precision(judged_rel[:, : cwl.CWL_DEPTH].to(torch.float64), m.param("p"))
        return v, always(v)
    # trec_eval's rbp leaves the min and max of its gain scaling uninitialised,
    # so its value can depend on the measures computed before it; the table's
    # own extremes are what it means (and what it prints run alone).
    v = kernels.rank_biased_precision(r.grades, _max_grade(r), m.gain, m.param("p"), m.param("scale"),
                                      m.param("min_grade"))[:, None]
    return v, always(v)


def _rbp_resid(r, m, cuts):
    # A query missing from the run (-c) scores 0, as trec_eval's rbp_resid; with
    # rbp_resid.p=X trec_eval prints 1 there (its clean-up of the one-document
    # stand-in ranking matches the measure's name without parameters only).
    v = kernels.rbp_residual(r.grades, r.num_ret, m.param("p"))[:, None]
    return v, always(v)


def _unj(r, m, cuts):
    v = kernels.unjudged_at_k(r.grades, r.num_ret, cuts)
    return v, always(v)


# ------------------------------------------------- names and descriptions
def _gain_suffix(m) -> str | None:
    """trec_eval's printed parameter text for the gains ('' for the default); None: no trec_eval form."""
    if m.gain == "linear":
        return ""
    if isinstance(m.gain, tuple):
        return ",".join(f"{g}={v:g}" for g, v in m.gain)
    return None


def _gain_trec_name(root: str):
    def name(m) -> str | None:
        suffix = _gain_suffix(m)
        if suffix is None or ("p" in dict(m.params) and m.param("p") != TREC_P):
            # trec_eval prints rbp_p=0.95, a name gpukit's trec_eval parser cannot read back yet.
            return None
        return f"{root}_{suffix}" if suffix else root

    return name


def _describe_levels(m) -> dict[str, str]:
    return {
        "gain": describe_gain(m),
        "ideal": "all judged documents with a positive gain, sorted by gain",
    }


def _describe_rel_levels(m) -> dict[str, str]:
    return {**_describe_levels(m), "relevance": f"R counts grade >= {m.rel} (R = 0 scores 0)"}


def _describe_rbp(m) -> dict[str, str]:
    if m.rel is not None:
        return {"relevance": f"grade >= {m.rel} gains 1 (negative grades count as 0), unjudged documents 0",
                "persistence": f"p = {m.param('p'):g}",
                "depth": f"ranks 1..{cwl.CWL_DEPTH}, weights p^(i-1) normalised over them (cwl_eval, ir_measures)"}
    if not m.param("scale"):
        floor = f"; grades below {m.param('min_grade')} gain 0" if m.param("min_grade") else ""
        return {"gain": describe_gain(m) + ", unscaled (ranx's rbp)" + floor, "persistence": f"p = {m.param('p'):g}",
                "depth": "the whole ranking"}
    return {
        "gain": describe_gain(m) + "; scaled to (gain - min) / (max - min) over the query's gain table when a "
        "table gain is outside [0, 1]",
        "persistence": f"p = {m.param('p'):g}",
    }


_GRADED_NEEDS = frozenset({"grades", "ideal"})
BinG = register(Family(
    name="BinG",
    summary="binary G: gain per relevant document discounted by the non-relevant ones above it",
    definition="binG = (1/R) * sum over retrieved relevant documents of 1 / log2(2 + non-relevant documents ranked "
    "above it); unjudged documents count as non-relevant (trec_eval binG)",
    kernel=_binG,
    params=(REL,),
    aliases=(Alias("binG", "trec_eval"),),
    trec=(TrecSyntax("binG", groups=('all_trec',)),),
    needs=_GRADED_NEEDS,
    defined_when="R > 0 (the query has a relevant judged document)",
    describe=lambda m: {"relevance": f"grade >= {m.rel} is relevant"},
    trec_name=lambda m: "binG",
    examples=("BinG", "BinG(rel=2)"),
))

G = register(Family(
    name="G",
    summary="normalised gain G: gain discounted by the gain still missing against the ideal",
    definition="G = (1/sum_j I_j) * sum over ranks i of g_i / log2(2 + C_i - S_i); S_i = g_1 + ... + g_i, "
    "C_i = sum_{j<=i} max(I_j, 1), I the ideal gains (0 past the last positive one) (trec_eval G)",
    kernel=_G,
    params=(LEVEL_GAIN,),
    trec=(TrecSyntax("G", "string", param="gain", parse_string=parse_trec_gains, groups=('all_trec',)),),
    needs=_GRADED_NEEDS,
    defined_when="the query has a judged document with positive gain",
    describe=_describe_levels,
    trec_name=_gain_trec_name("G"),
    examples=("G", "G(gain=exp)", "G(gains={1:3,2:9})", "G(gains={0:1,2:0.5})"),
))

nDCGRel = register(Family(
    name="nDCGRel",
    summary="nDCG averaged over the relevant documents",
    definition="ndcg_rel = (1/M) * (sum over retrieved documents with gain > 0 at rank i of nDCG@i + (M - their "
    "number) * nDCG of the whole ranking); M = judged documents with gain > 0; 0 where that sum is not positive "
    "(trec_eval ndcg_rel)",
    kernel=_ndcg_rel,
    params=(LEVEL_GAIN,),
    aliases=(Alias("ndcg_rel", "trec_eval"),),
    trec=(TrecSyntax("ndcg_rel", "string", param="gain", parse_string=parse_trec_gains, groups=('all_trec',)),),
    needs=_GRADED_NEEDS,
    defined_when="the query has a judged document with positive gain",
    describe=_describe_levels,
    trec_name=_gain_trec_name("ndcg_rel"),
    examples=("nDCGRel", "nDCGRel(gain=exp)", "nDCGRel(gains={1:3,2:9})", "nDCGRel(gains={1:9,3:-2})"),
))

RnDCG = register(Family(
    name="RnDCG",
    summary="nDCG averaged at the ends of the ideal gain levels (R levels)",
    definition="Rndcg = mean of nDCG@k over each k where the ideal gain changes (I_k != I_{k+1}, the last positive "
    "one included), plus DCG@n / IDCG when n >= M + 2 (n retrieved, M judged documents with gain > 0); 0 where "
    "R = 0 (trec_eval Rndcg)",
    kernel=_rndcg,
    params=(REL, LEVEL_GAIN),
    aliases=(Alias("rndcg", "trec_eval"),),
    trec=(TrecSyntax("Rndcg", "string", param="gain", parse_string=parse_trec_gains, groups=('all_trec',)),),
    needs=frozenset({"grades", "ideal", "num_ret"}),
    defined_when="R > 0 and the query has a judged document with positive gain",
    describe=_describe_rel_levels,
    trec_name=_gain_trec_name("Rndcg"),
    examples=("RnDCG", "RnDCG(rel=2)", "RnDCG(gain=exp)", "RnDCG(gains={1:3,2:9})", "RnDCG(gains={1:2,2:2,3:1})"),
))

RBP = register(Family(
    name="RBP",
    summary="rank-biased precision (Moffat & Zobel) with persistence p, graded as trec_eval",
    definition="RBP = (1 - p) * sum_i gain_i * p^(i-1); gains scaled to (gain - min) / (max - min) over the query's "
    "gain table (grades 0..max judged grade and the custom pairs) when one lies outside [0, 1]; trec_eval's rbp is "
    "p = 0.9, ir_measures' RBP default p = 0.8, so the name always carries p. RBP(rel=r) is ir_measures' binary "
    "RBP (its cwl_eval provider): gain 1 for grade >= r, ranks 1..1000, (1 - p) / (1 - p^1000) * sum_{i<=1000} "
    "gain_i * p^(i-1). scale=False keeps raw gains, over the whole ranking, with min_grade=N zeroing grades below N: "
    "ranx's rbp.X-lN (X the digits of p)",
    kernel=_rbp,
    params=(RBP_P, RBP_REL, LEVEL_GAIN, SCALE, MIN_GRADE),
    validate=_validate_rbp,
    trec=(TrecSyntax("rbp", "string", preset=(("p", TREC_P),), param="gain", parse_string=_rbp_trec_gains, groups=('all_trec',)),),
    needs=_GRADED_NEEDS,
    describe=_describe_rbp,
    # RBP(rel=) and ranx's unscaled RBP are not trec_eval's.
    trec_name=lambda m: None if m.rel is not None or not m.param("scale") else _gain_trec_name("rbp")(m),
    # Custom gains with p (RBP(p=0.9,gains={1:3})) are checked in tests/families/test_pytrec_eval_trec_graded.py.
    examples=("RBP(p=0.9)", "RBP(p=0.5)", "RBP", "RBP(p=0.9,gain=exp)", "RBP(p=0)", "RBP(rel=1)", "RBP(p=0.99,rel=2)",
              "RBP(p=1,rel=1)", "RBP(p=0.95,scale=False)", "RBP(p=0.5,scale=False,min_grade=2)",
              "RBP(p=0.8,gain=exp,scale=False)"),
))

RBPResid = register(Family(
    name="RBPResid",
    summary="residual of RBP: the most RBP could rise if the unjudged retrieved documents were relevant",
    definition="rbp_resid = p^n + (1 - p) * sum over unjudged retrieved ranks i of p^(i-1) (n retrieved); 0 when "
    "no retrieved document is unjudged (trec_eval rbp_resid, p = 0.9 there)",
    kernel=_rbp_resid,
    params=(P,),
    aliases=(Alias("rbp_resid", "trec_eval", preset=(("p", TREC_P),)),),
    trec=(TrecSyntax("rbp_resid", preset=(("p", TREC_P),), groups=('all_trec',)),),
    needs=frozenset({"grades", "num_ret"}),
    describe=lambda m: {"persistence": f"p = {m.param('p'):g}",
                        "unjudged": "absent from the qrels or a negative grade"},
    trec_name=lambda m: "rbp_resid" if m.param("p") == TREC_P else None,
    examples=("RBPResid(p=0.9)", "RBPResid", "RBPResid(p=0.5)"),
))

Unjudged = register(Family(
    name="Unjudged",
    summary="fraction of the top k that is unjudged (trec_eval unj)",
    definition="unj@k = |unjudged retrieved documents in the top k| / k; ranks past the ranking count as judged, so "
    "unj@k = min(k, n)/k - Judged@k, not 1 - Judged@k (trec_eval unj)",
    kernel=_unj,
    cutoff="required",
    aliases=(Alias("unj", "trec_eval", bare="expand"),),
    trec=(TrecSyntax("unj", "cutoffs", UNJ_CUTOFFS, groups=('all_trec',)),),
    trec_cutoffs=UNJ_CUTOFFS,
    needs=frozenset({"grades", "num_ret"}),
    describe=lambda m: {"unjudged": "absent from the qrels or a negative grade"},
    trec_name=lambda m: f"unj_{m.cutoff}",
    examples=("Unjudged@1", "Unjudged@5", "Unjudged@20"),
))
