"""Preference families (trec_eval ``-R prefs`` / ``-R qrels_prefs``, ``-m all_prefs``)
and judgment-group families (``-R qrels_jg``, ``-m qrels_jg``).

They read inputs an ordinary qrels does not have — preferences, or several
judgment groups (JGs) per query — so ``needs`` names them ("prefs",
"judgment_groups"): ``gpukit.evaluate`` computes them from
:class:`~gpukit.Prefs` or :class:`~gpukit.JudgmentGroups` and refuses them
against any other judgments.

A preference a > b of a JG is *fulfilled* when the run ranks a above b; an
unretrieved document ranks below every retrieved one, so a > b with only a
retrieved is fulfilled ("implied"), with only b retrieved failed, and with
neither retrieved failed but "not occurring". ``_ret`` variants count only
preferences between two retrieved documents, ``_imp`` variants leave out the
not-occurring ones. Under the trec_eval convention a zero denominator gives
0; under gpukit's the query is omitted (each family's rule below).
"""
from __future__ import annotations

import torch

from gpukit import metrics
from gpukit.families.common import TREC_CUTOFFS, describe_binary, trec_names
from gpukit.families.params import REL, number
from gpukit.families.registry import register
from gpukit.families.spec import Family, TrecSyntax
from gpukit.metrics import prefs as pk

_PREFS = frozenset({"prefs"})
_JG = frozenset({"judgment_groups"})
_SUM = (("trec_eval", "sum"),)
_NO_STREAM_PREFS = "it needs preference judgments (trec_eval -R prefs), which a dense batch does not have"
_NO_STREAM_JG = "it needs several judgment groups per query (trec_eval -R qrels_jg), which a dense batch does not have"
_OFFICIAL = ("all_prefs", "prefs")  # trec_eval's -m prefs nickname is a subset of all_prefs


def _areas(r) -> pk.AreaCounts:
    return r.cached("areas", lambda: pk.area_counts(r.prefs, r.num_judged_ret))


def _pairs(r):
    return r.cached("pairs", lambda: pk.pair_ratio_sums(r.prefs, r.num_judged_ret))


def _col(v: torch.Tensor, defined: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    v = v.to(torch.float64)[:, None]
    d = torch.ones_like(v, dtype=torch.bool) if defined is None else defined[:, None]
    return v, d


# The three readings of "fulfilled / possible" (all, _ret, _imp), per JG (T, G).
def _ful_poss(r, variant: str) -> tuple[torch.Tensor, torch.Tensor]:
    a = _areas(r)
    if variant == "ret":
        return a.ful_ret, a.poss_ret
    if variant == "imp":
        return a.ful_ret + a.ful_imp, a.poss_ret + a.poss_imp
    return a.ful_ret + a.ful_imp, a.poss_ret + a.poss_imp + a.notoccur


def _num_poss(r, m, cuts):
    return _col(_ful_poss(r, "all")[1].sum(1))


def _num_ful(r, m, cuts):
    return _col(_ful_poss(r, "all")[0].sum(1))


def _num_ful_ret(r, m, cuts):
    return _col(_areas(r).ful_ret.sum(1))


def _simp(variant: str):
    def kernel(r, m, cuts):
        ful, poss = _ful_poss(r, variant)
        f, p = ful.sum(1), poss.sum(1)
        return _col(pk.ratio(f, p), p > 0)

    return kernel


def _avgjg(variant: str):
    def kernel(r, m, cuts):
        ful, poss = _ful_poss(r, variant)
        return _col(pk.average_over_jgs(pk.ratio(ful, poss), r.valid), ((poss > 0) & r.valid).any(1))

    return kernel


def _pair(variant: str):
    def kernel(r, m, cuts):
        s_ret, s_imp, n_ret, n_imp, n_none = _pairs(r)
        if variant == "ret":
            s, n = s_ret, n_ret
        elif variant == "imp":
            s, n = s_ret + s_imp, n_ret + n_imp
        else:
            s, n = s_ret + s_imp, n_ret + n_imp + n_none
        return _col(pk.ratio(s, n), n > 0)

    return kernel


def _rnonrel(retrieved_only: bool):
    def kernel(r, m, cuts):
        docs = pk.JudgedDocs(r.prefs, r.present, r.relevant, r.lowest, r.single, r.num_judged_ret)
        per_jg = pk.rnonrel_ratio(_areas(r), docs, retrieved_only)
        defined = (per_jg.isfinite() | ~r.valid).all(1)
        return _col(pk.average_over_jgs(per_jg, r.valid), defined)

    return kernel


_CONVENTION = (" Under gpukit's convention the query is omitted when {}; trec_eval scores it 0.")
_AVG = "the mean over the query's JGs of fulfilled_g / possible_g (a JG without possible preferences adds 0)"


def _prefs_family(name: str, trec: str, summary: str, definition: str, kernel, *, defined_when: str | None,
                  count: bool = False, groups: tuple[str, ...] = ("all_prefs",)) -> Family:
    return register(Family(
        name=name,
        summary=summary,
        definition=definition + ("" if defined_when is None else _CONVENTION.format(defined_when)),
        kernel=kernel,
        trec=(TrecSyntax(trec, groups=groups),),
        needs=_PREFS,
        defined_when=defined_when,
        aggregate=_SUM if count else (),
        streamable=_NO_STREAM_PREFS,
        trec_format="int" if count else "float",
        trec_name=lambda m, t=trec: t,
        examples=(name,),
    ))


PrefsNumPoss = _prefs_family(
    "PrefsNumPoss", "prefs_num_prefs_poss", "number of preferences of the judgments (all JGs)",
    "sum over JGs of the preferences a > b the JG expresses (transitively), retrieved or not; trec_eval sums "
    "it over queries", _num_poss, defined_when=None, count=True, groups=_OFFICIAL)
PrefsNumFul = _prefs_family(
    "PrefsNumFul", "prefs_num_prefs_ful", "number of preferences the ranking fulfils (implied ones included)",
    "preferences a > b with a retrieved and ranked above b (b retrieved below a, or not retrieved), summed over "
    "JGs; trec_eval sums it over queries", _num_ful, defined_when=None, count=True, groups=_OFFICIAL)
PrefsNumFulRet = _prefs_family(
    "PrefsNumFulRet", "prefs_num_prefs_ful_ret", "number of preferences fulfilled between retrieved documents",
    "preferences a > b with both retrieved and a ranked above b, summed over JGs; trec_eval sums it over queries",
    _num_ful_ret, defined_when=None, count=True, groups=_OFFICIAL)
PrefsSimp = _prefs_family(
    "PrefsSimp", "prefs_simp", "fulfilled / possible preferences",
    "fulfilled / possible over all preferences of all JGs (implied preferences count; a preference between two "
    "unretrieved documents fails)", _simp("all"), defined_when="there are no preferences", groups=_OFFICIAL)
PrefsPair = _prefs_family(
    "PrefsPair", "prefs_pair", "mean over document pairs of the share of JGs whose preference the ranking fulfils",
    "mean over document pairs {a, b} with a preference in some JG of c(a>b) / (c(a>b) + c(b>a)), a ranked above "
    "b and c counting JGs; pairs of two unretrieved documents score 0", _pair("all"),
    defined_when="no document pair has a preference", groups=_OFFICIAL)
PrefsAvgJG = _prefs_family(
    "PrefsAvgJG", "prefs_avgjg", "fulfilled / possible preferences per JG, averaged over JGs",
    _AVG + " (implied preferences count; a preference between two unretrieved documents fails)", _avgjg("all"),
    defined_when="no JG has preferences", groups=_OFFICIAL)
PrefsAvgJGRnonrel = _prefs_family(
    "PrefsAvgJGRnonrel", "prefs_avgjg_Rnonrel", "PrefsAvgJG with the non-relevant documents of each JG set to R",
    _AVG + ", where each JG counts as many non-relevant (level 0) documents as relevant ones (R): with N < R "
    "non-relevant, R - N notional ones below every relevant document are added; with N > R only the first R "
    "(docid rank order) are kept and the preferences recounted (trec_eval's rules, quirks included); a JG whose "
    "count is 0/0 makes trec_eval score the query 0", _rnonrel(False),
    defined_when="some JG has no preferences left to count (0/0)")
PrefsSimpRet = _prefs_family(
    "PrefsSimpRet", "prefs_simp_ret", "fulfilled / possible preferences between retrieved documents",
    "fulfilled / possible over the preferences of all JGs between two retrieved documents", _simp("ret"),
    defined_when="no preference is between two retrieved documents")
PrefsPairRet = _prefs_family(
    "PrefsPairRet", "prefs_pair_ret", "PrefsPair over pairs of retrieved documents",
    "mean over pairs {a, b} of retrieved documents with a preference in some JG of c(a>b) / (c(a>b) + c(b>a)), "
    "a ranked above b", _pair("ret"), defined_when="no pair of retrieved documents has a preference")
PrefsAvgJGRet = _prefs_family(
    "PrefsAvgJGRet", "prefs_avgjg_ret", "PrefsAvgJG over preferences between retrieved documents",
    _AVG + ", counting only preferences between two retrieved documents", _avgjg("ret"),
    defined_when="no JG has a preference between two retrieved documents")
PrefsAvgJGRnonrelRet = _prefs_family(
    "PrefsAvgJGRnonrelRet", "prefs_avgjg_Rnonrel_ret", "PrefsAvgJGRnonrel over retrieved documents",
    "PrefsAvgJGRnonrel counting only retrieved documents: R and N are the JG's relevant and non-relevant "
    "retrieved documents, R - N notional non-relevant ones add relevant retrieved * (R - N) fulfilled and "
    "relevant * (R - N) possible preferences (trec_eval's rules, quirks included)", _rnonrel(True),
    defined_when="some JG has no preferences left to count (0/0)")
PrefsSimpImp = _prefs_family(
    "PrefsSimpImp", "prefs_simp_imp", "fulfilled / possible preferences with a retrieved document",
    "fulfilled / possible over the preferences of all JGs with at least one retrieved document", _simp("imp"),
    defined_when="no preference involves a retrieved document")
PrefsPairImp = _prefs_family(
    "PrefsPairImp", "prefs_pair_imp", "PrefsPair over pairs with a retrieved document",
    "mean over pairs {a, b} with at least one retrieved document and a preference in some JG of "
    "c(a>b) / (c(a>b) + c(b>a)), a ranked above b", _pair("imp"),
    defined_when="no pair with a retrieved document has a preference")
PrefsAvgJGImp = _prefs_family(
    "PrefsAvgJGImp", "prefs_avgjg_imp", "PrefsAvgJG over preferences with a retrieved document",
    _AVG + ", counting only preferences with at least one retrieved document", _avgjg("imp"),
    defined_when="no JG has a preference involving a retrieved document")


# ------------------------------------------------------------- judgment groups
def _rows(r, m):
    g = r.groups
    return g.relevant(m.rel), g.num_relevant(m.rel)


def _some_relevant(r, m, v):
    return pk.any_group(r.groups.num_relevant(m.rel) > 0, r.row_of)[:, None].expand_as(v)


def _ap_avgjg(r, m, cuts):
    rel, num_rel = _rows(r, m)
    v = pk.average_over_groups(metrics.average_precision(rel, num_rel, [None]), r.row_of)
    return v, _some_relevant(r, m, v)


def _p_avgjg(r, m, cuts):
    rel, _ = _rows(r, m)
    v = pk.average_over_groups(metrics.precision(rel, cuts), r.row_of)
    return v, torch.ones_like(v, dtype=torch.bool)


def _rprec_mult_avgjg(r, m, cuts):
    rel, num_rel = _rows(r, m)
    v = pk.average_over_groups(pk.rprec_mult(rel, num_rel, m.param("mult"))[:, None], r.row_of)
    return v, _some_relevant(r, m, v)


_JG_NOTE = " for each judgment group (JG) of the query, then averaged over its JGs"
_JG_RULE = "some JG of the query has a relevant document (R > 0)"
_MULT_LEVELS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)

APAvgJG = register(Family(
    name="APAvgJG",
    summary="average precision averaged over judgment groups (trec_eval map_avgjg)",
    definition="AP = (1/R) * sum over relevant ranks i of P@i" + _JG_NOTE + " (a JG with R = 0 adds 0)",
    kernel=_ap_avgjg,
    params=(REL,),
    trec=(TrecSyntax("map_avgjg", groups=('qrels_jg',)),),
    needs=_JG,
    defined_when=_JG_RULE,
    streamable=_NO_STREAM_JG,
    describe=describe_binary,
    trec_name=trec_names(uncut="map_avgjg"),
    examples=("APAvgJG", "APAvgJG(rel=2)"),
))

PAvgJG = register(Family(
    name="PAvgJG",
    summary="precision at rank k averaged over judgment groups (trec_eval P_avgjg)",
    definition="P@k = |relevant in the top k| / k" + _JG_NOTE,
    kernel=_p_avgjg,
    cutoff="required",
    params=(REL,),
    trec=(TrecSyntax("P_avgjg", "cutoffs", TREC_CUTOFFS, groups=('qrels_jg',)),),
    trec_cutoffs=TREC_CUTOFFS,
    needs=_JG,
    streamable=_NO_STREAM_JG,
    describe=describe_binary,
    trec_name=trec_names(cut="P_avgjg"),
    examples=("PAvgJG@5", "PAvgJG(rel=2)@3", "PAvgJG@20"),
))


def _rprec_mult_name(m) -> str | None:
    return f"Rprec_mult_avgjg_{m.param('mult'):3.2f}"


RprecMultAvgJG = register(Family(
    name="RprecMultAvgJG",
    summary="precision at mult * R averaged over judgment groups (trec_eval Rprec_mult_avgjg)",
    definition="precision at rank c = floor(mult * R + 0.9) (0 when c = 0)" + _JG_NOTE,
    kernel=_rprec_mult_avgjg,
    params=(REL, number("mult", "multiple of R at which precision is measured (trec_eval's level)", 1.0, low=0.0)),
    trec=(TrecSyntax("Rprec_mult_avgjg", "levels", _MULT_LEVELS, param="mult", groups=('qrels_jg',)),),
    needs=_JG,
    defined_when=_JG_RULE,
    streamable=_NO_STREAM_JG,
    describe=describe_binary,
    trec_name=_rprec_mult_name,
    examples=("RprecMultAvgJG", "RprecMultAvgJG(mult=0.2)", "RprecMultAvgJG(rel=2,mult=1.6)"),
))
