"""trec_eval's further binary families (``-m all_trec``): GMAP, GMBpref, IPrec,
IPrecAvg (11pt_avg), RelativeP, RprecMult, infAP, the set measures (SetP,
SetAP, SetF; set_recall is R without a cutoff), NumNonRelJudgedRet, Utility
and NumQ.

A document is relevant when its judged grade is >= ``rel`` (default 1,
trec_eval's ``-l``); R is the number of judged relevant documents of the
query, retrieved or not. Values are trec_eval 10.0's, zero denominators
giving 0; under the gpukit convention a query where the value is undefined
is omitted (each family's ``defined_when``).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from gpukit.errors import MeasureError
from gpukit.families.binary import AP, Bpref
from gpukit.families.common import TREC_CUTOFFS, always, describe_binary, needs_relevant, trec_names
from gpukit.families.params import BETA, REL, _strip_quotes, flag, number
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family, Param, TrecSyntax
from gpukit.metrics import trec_binary as kernels
from gpukit.ranking import NOT_JUDGED

_R_RULE = "R > 0 (the query has a relevant judged document)"
_GMEAN = (("gpukit", "gmean"), ("trec_eval", "gmean"))
_GMEAN_STREAM = "its aggregate is a geometric mean, and the stream keeps sums of per-query values"
#: trec_eval's default recall levels of iprec_at_recall and 11pt_avg: 0.0, 0.1, ..., 1.0.
RECALL_LEVELS = tuple(i / 10 for i in range(11))
#: trec_eval's default multiples of R for Rprec_mult: 0.2, 0.4, ..., 2.0.
R_MULTIPLES = tuple(i / 5 for i in range(1, 11))
UTILITY_WEIGHTS = (1.0, -1.0, 0.0, 0.0)


# ------------------------------------------------------------- parameters
def _numbers(text: str, what: str) -> tuple[float, ...]:
    """``0.2;0.5``, ``[0.2,0.5]`` or trec_eval's ``.2,.5``: a list of numbers."""
    text = _strip_quotes(text)
    if len(text) >= 2 and text[0] + text[-1] in ("[]", "()"):
        text = text[1:-1]
    try:
        return tuple(float(v) for v in text.replace(";", ",").split(","))
    except ValueError:
        raise MeasureError(f"{what} must be a list of numbers such as 0.2;0.5, got {text!r}") from None


def _finite_list(value: Any, what: str) -> tuple[float, ...]:
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise MeasureError(f"{what} must be finite numbers, got {v!r}")
        out.append(float(v))
    if not out:
        raise MeasureError(f"{what} must not be empty")
    return tuple(out)


def _check_levels(value: Any) -> tuple[float, ...]:
    levels = _finite_list(value, "levels")
    if any(not 0.0 <= v <= 1.0 for v in levels):
        raise MeasureError(f"levels are recall levels in [0, 1], got {value!r}")
    # trec_eval's 11pt_avg walks its levels in the given order assuming they
    # ascend (unlike iprec_at_recall it does not sort them): out of order it
    # computes something else, so ask for the order instead of guessing.
    if list(levels) != sorted(levels):
        raise MeasureError(f"levels must be in ascending order, got {value!r}")
    return levels


def _check_weights(value: Any) -> tuple[float, ...]:
    weights = _finite_list(value, "weights")
    if len(weights) != 4:
        raise MeasureError(f"weights are 4 numbers (relevant retrieved, non-relevant retrieved, relevant "
                           f"not retrieved, non-relevant not retrieved), got {value!r}")
    return weights


def _show_list(value: tuple[float, ...]) -> str:
    return ";".join(f"{v:g}" for v in value)


LEVELS = Param(
    name="levels",
    doc="recall levels averaged, ascending (trec_eval 11pt_avg.0.2,0.5,0.8; written 0.2;0.5;0.8)",
    default=RECALL_LEVELS,
    parse=lambda text: _numbers(text, "levels"),
    check=_check_levels,
    show=_show_list,
)

WEIGHTS = Param(
    name="weights",
    doc="w1;w2;w3;w4: worth of a relevant retrieved, non-relevant retrieved, relevant not retrieved and "
    "non-relevant not retrieved document (trec_eval utility.1,-1,0,0)",
    default=UTILITY_WEIGHTS,
    parse=lambda text: _numbers(text, "weights"),
    check=_check_weights,
    show=_show_list,
)


def _check_num_docs(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
        raise MeasureError(f"num_docs must be a non-negative integer, got {value!r}")
    return int(value)


def _parse_num_docs(text: str) -> int:
    text = _strip_quotes(text)
    if not (text.isascii() and text.isdigit()):
        raise MeasureError(f"num_docs must be a non-negative integer, got {text!r}")
    return int(text)


NUM_DOCS = Param(
    name="num_docs",
    doc="documents in the collection, for the non-relevant-not-retrieved count (trec_eval -N; 0 as trec_eval)",
    default=0,
    parse=_parse_num_docs,
    check=_check_num_docs,
)


RELATIVE = flag("relative", "divide by min(|retrieved|, R), the best precision a set of that size can have "
                "(set_relative_P)")

MULT = number("mult", "multiple of R at which precision is taken (trec_eval Rprec_mult.0.2,...)", 1.0, low=0.0,
              low_open=True)


def _one_number(name: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        values = _numbers(text, name)
        if len(values) != 1:
            raise MeasureError(f"{name} is one number, got {text!r}")
        return values[0]

    return parse


# ----------------------------------------------------------------- kernels
def _relevant_retrieved(r, m) -> torch.Tensor:
    return r.relevant(m.rel).sum(1)


def _iprec(r, m, cuts):
    v = kernels.interpolated_precision(r.relevant(m.rel), r.num_relevant(m.rel), cuts, r.running_hits(m.rel))
    return v, needs_relevant(r, m, v)


def _iprec_avg(r, m, cuts):
    v = kernels.interpolated_precision_average(r.relevant(m.rel), r.num_relevant(m.rel), m.param("levels"),
                                               r.running_hits(m.rel))
    return v, needs_relevant(r, m, v)


def _relative_p(r, m, cuts):
    v = kernels.relative_precision(r.relevant(m.rel), r.num_relevant(m.rel), cuts, r.running_hits(m.rel))
    return v, needs_relevant(r, m, v)


def _rprec_mult(r, m, cuts):
    v = kernels.precision_at_r_multiple(r.relevant(m.rel), r.num_relevant(m.rel), m.param("mult"),
                                        r.running_hits(m.rel))
    return v, needs_relevant(r, m, v)


def _infap(r, m, cuts):
    relevant = r.relevant(m.rel)
    judged_nonrel = r.judged() & ~relevant
    # Negative qrels grades are "in the pool, unjudged"; NOT_JUDGED marks
    # documents absent from the qrels (and padding): not in the pool.
    pool_unjudged = (r.grades < 0) & (r.grades != NOT_JUDGED)
    v = kernels.inferred_ap(relevant, judged_nonrel, pool_unjudged, r.num_relevant(m.rel))
    return v, needs_relevant(r, m, v)


def _set_p(r, m, cuts):
    found, num_ret = _relevant_retrieved(r, m), r.num_ret
    if m.param("relative"):
        num_rel = r.num_relevant(m.rel)
        v = kernels.set_relative_precision(found, num_ret, num_rel)
        return v, ((num_ret > 0) & (num_rel > 0))[:, None]
    v = kernels.set_precision(found, num_ret)
    return v, (num_ret > 0)[:, None]


def _set_ap(r, m, cuts):
    v = kernels.set_average_precision(_relevant_retrieved(r, m), r.num_ret, r.num_relevant(m.rel))
    return v, needs_relevant(r, m, v)


def _set_f(r, m, cuts):
    v = kernels.set_f(_relevant_retrieved(r, m), r.num_ret, r.num_relevant(m.rel), m.param("beta"))
    return v, needs_relevant(r, m, v)


def _num_nonrel_judged_ret(r, m, cuts):
    v = (r.judged() & ~r.relevant(m.rel)).sum(1).to(torch.float64)[:, None]
    return v, always(v)


def _utility(r, m, cuts):
    # A topic the run does not answer: trec_eval -c scores its stand-in
    # ranking, one unjudged document (b = 1), then resets the value printed
    # as "utility" to 0; with given weights the name is "utility_w1,..." and
    # escapes the reset. Both are reproduced, so values are trec_eval's.
    answered = r.in_run
    num_ret = torch.where(answered, r.num_ret, torch.ones_like(r.num_ret))
    v = kernels.utility(_relevant_retrieved(r, m), num_ret, r.num_relevant(m.rel), m.param("weights"),
                        m.param("num_docs"))
    if m.param("weights") == UTILITY_WEIGHTS:
        v = torch.where(answered[:, None], v, torch.zeros_like(v))
    return v, always(v)


def _num_q(r, m, cuts):
    v = torch.ones((r.num_topics, 1), dtype=torch.float64, device=r.device)
    return v, always(v)


# ---------------------------------------------------------- trec_eval names
def _iprec_name(m):
    return f"iprec_at_recall_{m.cutoff:3.2f}"


def _iprec_avg_name(m):
    levels = m.param("levels")
    return "11pt_avg" if levels == RECALL_LEVELS else "11pt_avg_" + ",".join(f"{v:g}" for v in levels)


def _rprec_mult_name(m):
    return f"Rprec_mult_{m.param('mult'):3.2f}"


def _set_p_name(m):
    return "set_relative_P" if m.param("relative") else "set_P"


def _set_f_name(m):
    beta = m.param("beta")
    return "set_F" if beta == 1.0 else f"set_F_{beta:g}"


def _utility_name(m):
    if m.param("num_docs") != 0:
        return None  # -N is a trec_eval option, not part of the name
    weights = m.param("weights")
    return "utility" if weights == UTILITY_WEIGHTS else "utility_" + ",".join(f"{v:g}" for v in weights)


def _describe_levels(m) -> dict[str, str]:
    return {**describe_binary(m), "interpolation": "IPrec(r) = max P@j over ranks j at or below the "
            "lround(r * R)-th relevant document (trec_eval)"}


def _describe_infap(m) -> dict[str, str]:
    return {**describe_binary(m), "pool": "absent from the qrels: not pooled (skipped, keeps its rank); negative "
            "grade: pooled but unjudged (a random sample of the pool was judged)"}


# ----------------------------------------------------------------- records
GMAP = register(Family(
    name="GMAP",
    summary="geometric mean of average precision (trec_eval gm_map)",
    definition="per query AP (see AP); the reported value is exp(mean of log(max(AP, 1e-5))), trec_eval's "
    "MIN_GEO_MEAN floor, so one failed query weighs heavily",
    kernel=AP.kernel,  # per query exactly AP (m_gm_map.c); only the aggregate differs
    params=(REL,),
    aliases=(Alias("gm_map", "trec_eval"),),
    trec=(TrecSyntax("gm_map", groups=('official', 'all_trec')),),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    aggregate=_GMEAN,
    streamable=_GMEAN_STREAM,
    trec_per_query=False,
    describe=describe_binary,
    trec_name=trec_names(uncut="gm_map"),
    examples=("GMAP", "GMAP(rel=2)"),
))

IPrec = register(Family(
    name="IPrec",
    summary="interpolated precision at a recall level",
    definition="IPrec@r = max over ranks j at or below the c-th relevant document of P@j, c = lround(r * R) "
    "(rank 1 for c = 0); 0 when fewer than c relevant documents are retrieved (trec_eval iprec_at_recall)",
    kernel=_iprec,
    cutoff="required",
    cutoff_type=float,
    params=(REL,),
    aliases=(Alias("iprec_at_recall", "trec_eval", bare="expand"),),
    trec=(TrecSyntax("iprec_at_recall", "levels", RECALL_LEVELS, groups=('official', 'all_trec')),),
    trec_cutoffs=RECALL_LEVELS,
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    streamable="its cutoff is a recall level, and the stream truncates rankings at rank cutoffs",
    describe=_describe_levels,
    trec_name=_iprec_name,
    examples=("IPrec@0", "IPrec@0.1", "IPrec@0.5", "IPrec(rel=2)@0.3", "IPrec@1"),
))

infAP = register(Family(
    name="infAP",
    summary="inferred average precision over a judged random sample of the pool",
    definition="infAP = (1/R) * sum over relevant ranks k of E[P@k]: 1 at rank 1, else 1/k + ((k-1)/k) * "
    "((r+n+u)/(k-1)) * ((r+eps)/(r+n+2 eps)), r, n, u = relevant, judged non-relevant, pooled-unjudged "
    "documents above k, eps = 1e-5 (Yilmaz & Aslam; trec_eval infAP)",
    kernel=_infap,
    params=(REL,),
    trec=(TrecSyntax("infAP", groups=('all_trec',)),),
    needs=frozenset({"grades", "ideal", "pool"}),
    defined_when=_R_RULE,
    streamable="it needs the pooled-but-unjudged grades, which a stream's targets do not carry",
    describe=_describe_infap,
    trec_name=trec_names(uncut="infAP"),
    examples=("infAP", "infAP(rel=2)"),
))

GMBpref = register(Family(
    name="GMBpref",
    summary="geometric mean of bpref (trec_eval gm_bpref)",
    definition="per query bpref (see Bpref); the reported value is exp(mean of log(max(bpref, 1e-5)))",
    kernel=Bpref.kernel,  # per query exactly bpref (m_gm_bpref.c)
    params=(REL,),
    aliases=(Alias("gm_bpref", "trec_eval"),),
    trec=(TrecSyntax("gm_bpref", groups=('all_trec',)),),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    aggregate=_GMEAN,
    streamable=_GMEAN_STREAM,
    trec_per_query=False,
    describe=describe_binary,
    trec_name=trec_names(uncut="gm_bpref"),
    examples=("GMBpref", "GMBpref(rel=2)"),
))

RprecMult = register(Family(
    name="RprecMult",
    summary="precision at a multiple of R",
    definition="RprecMult(mult=x) = P@n, n = floor(x * R + 0.9) (trec_eval's rounding; P@n divides by n, "
    "retrieved or not), 0 when n = 0 (trec_eval Rprec_mult)",
    kernel=_rprec_mult,
    params=(REL, MULT),
    aliases=(Alias("Rprec_mult", "trec_eval"),),
    trec=(TrecSyntax("Rprec_mult", "levels", R_MULTIPLES, param="mult", groups=('all_trec',)),),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    trec_name=_rprec_mult_name,
    examples=("RprecMult", "RprecMult(mult=0.2)", "RprecMult(mult=1.4,rel=2)", "RprecMult(mult=5)"),
))

Utility = register(Family(
    name="Utility",
    summary="linear utility of the retrieved set (trec_eval utility)",
    definition="utility = w1*a + w2*b + w3*c + w4*d; a = relevant retrieved, b = other retrieved, c = relevant "
    "not retrieved, d = num_docs + a - |retrieved| - R; a topic the run does not answer is scored as trec_eval -c "
    "scores it: 0 with the default weights, else as a ranking of one unjudged document",
    kernel=_utility,
    params=(REL, WEIGHTS, NUM_DOCS),
    aliases=(Alias("utility", "trec_eval"),),
    trec=(TrecSyntax("utility", "string", param="weights", parse_string=lambda t: _numbers(t, "weights"), groups=('set', 'all_trec')),),
    needs=frozenset({"grades", "ideal", "num_ret"}),
    describe=describe_binary,
    trec_name=_utility_name,
    examples=("Utility", "Utility(weights=2;-1;0;0)", "Utility(weights=1;-1;-0.5;0.01,num_docs=40,rel=2)"),
))

IPrecAvg = register(Family(
    name="IPrecAvg",
    summary="mean interpolated precision over recall levels (trec_eval 11pt_avg)",
    definition="IPrecAvg = mean of IPrec@r over the levels r (default 0.0, 0.1, ..., 1.0: the 11-point "
    "average; see IPrec)",
    kernel=_iprec_avg,
    params=(REL, LEVELS),
    aliases=(Alias("11pt_avg", "trec_eval"),),
    trec=(TrecSyntax("11pt_avg", "string", param="levels", parse_string=lambda t: _numbers(t, "levels"), groups=('all_trec',)),),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=_describe_levels,
    trec_name=_iprec_avg_name,
    examples=("IPrecAvg", "IPrecAvg(levels=0.25;0.5;0.75)", "IPrecAvg(levels=0.2;0.2;1,rel=2)"),
))

RelativeP = register(Family(
    name="RelativeP",
    summary="precision at rank k relative to the best possible",
    definition="RelativeP@k = |relevant in the top k| / min(k, R): precision up to rank R, recall beyond "
    "(trec_eval relative_P)",
    kernel=_relative_p,
    cutoff="required",
    params=(REL,),
    aliases=(Alias("relative_P", "trec_eval", bare="expand"),),
    trec=(TrecSyntax("relative_P", "cutoffs", TREC_CUTOFFS, groups=('all_trec',)),),
    trec_cutoffs=TREC_CUTOFFS,
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    trec_name=trec_names(cut="relative_P"),
    examples=("RelativeP@1", "RelativeP@3", "RelativeP(rel=2)@5", "RelativeP@20"),
))

SetP = register(Family(
    name="SetP",
    summary="precision of the whole retrieved set",
    definition="SetP = |relevant retrieved| / |retrieved| (trec_eval set_P); relative=True divides by "
    "min(|retrieved|, R) (set_relative_P)",
    kernel=_set_p,
    params=(REL, RELATIVE),
    aliases=(Alias("set_P", "trec_eval"), Alias("SetRelP", "ir_measures", preset=(("relative", True),)),
             Alias("set_relative_P", "trec_eval", preset=(("relative", True),))),
    trec=(TrecSyntax("set_P", groups=('set', 'all_trec')), TrecSyntax("set_relative_P", preset=(("relative", True),), groups=('set', 'all_trec'))),
    needs=frozenset({"grades", "ideal", "num_ret"}),
    defined_when="the ranking is not empty (and R > 0 with relative=True)",
    describe=describe_binary,
    trec_name=_set_p_name,
    examples=("SetP", "SetP(rel=2)", "SetP(relative=True)", "SetP(relative=True,rel=2)"),
))

SetAP = register(Family(
    name="SetAP",
    summary="unranked average precision of the retrieved set (set precision x set recall)",
    definition="SetAP = |relevant retrieved|^2 / (|retrieved| * R) (trec_eval set_map)",
    kernel=_set_ap,
    params=(REL,),
    aliases=(Alias("set_map", "trec_eval"),),
    trec=(TrecSyntax("set_map", groups=('set', 'all_trec')),),
    needs=frozenset({"grades", "ideal", "num_ret"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    trec_name=trec_names(uncut="set_map"),
    examples=("SetAP", "SetAP(rel=2)"),
))

SetF = register(Family(
    name="SetF",
    summary="F measure of the retrieved set",
    definition="SetF = (beta + 1) * P * R' / (beta * P + R') with P, R' the set precision and recall; 0 when "
    "nothing relevant is retrieved (trec_eval set_F: beta is its x, the weight of recall)",
    kernel=_set_f,
    params=(REL, BETA),
    aliases=(Alias("set_F", "trec_eval"),),
    trec=(TrecSyntax("set_F", "string", param="beta", parse_string=_one_number("beta"), groups=('set', 'all_trec')),),
    needs=frozenset({"grades", "ideal", "num_ret"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    trec_name=_set_f_name,
    examples=("SetF", "SetF(beta=2)", "SetF(beta=0.5,rel=2)", "SetF(beta=0)"),
))

NumNonRelJudgedRet = register(Family(
    name="NumNonRelJudgedRet",
    summary="number of judged non-relevant documents retrieved",
    definition="NumNonRelJudgedRet = |retrieved with 0 <= grade < rel| (trec_eval num_nonrel_judged_ret)",
    kernel=_num_nonrel_judged_ret,
    params=(REL,),
    aliases=(Alias("num_nonrel_judged_ret", "trec_eval"),),
    trec=(TrecSyntax("num_nonrel_judged_ret", groups=('all_trec',)),),
    needs=frozenset({"grades"}),
    aggregate=(("trec_eval", "sum"),),
    trec_format="int",
    describe=describe_binary,
    trec_name=trec_names(uncut="num_nonrel_judged_ret"),
    examples=("NumNonRelJudgedRet", "NumNonRelJudgedRet(rel=2)"),
))

NumQ = register(Family(
    name="NumQ",
    summary="number of topics evaluated",
    definition="NumQ = number of topics (1 per topic, summed); trec_eval prints only the total",
    kernel=_num_q,
    aliases=(Alias("num_q", "trec_eval"),),
    trec=(TrecSyntax("num_q", groups=('official', 'set', 'all_trec', 'all_prefs', 'prefs', 'qrels_jg')),),
    needs=frozenset({"topics"}),
    aggregate=(("gpukit", "sum"), ("trec_eval", "sum")),
    trec_format="int",
    trec_per_query=False,
    trec_name=trec_names(uncut="num_q"),
    examples=("NumQ",),
))
