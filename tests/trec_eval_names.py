"""trec_eval's printed measure names (``P_10``, ``ndcg_cut_10``) as gpukit names.

Shared by the tests that compare with trec_eval's expected outputs and with
a trec_eval binary; written from trec_eval's output format, not from gpukit's
alias table.
"""
from __future__ import annotations

import re

# trec_eval output name -> gpukit measure name
_SIMPLE = {
    "map": "AP",
    "Rprec": "Rprec",
    "bpref": "Bpref",
    "recip_rank": "RR",
    "ndcg": "nDCG",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    "num_q": "NumQ",
    "gm_map": "GMAP",
    "gm_bpref": "GMBpref",
    "infAP": "infAP",
    "11pt_avg": "IPrecAvg",
    "utility": "Utility",
    "set_P": "SetP",
    "set_relative_P": "SetP(relative=True)",
    "set_recall": "SetR",
    "set_map": "SetAP",
    "set_F": "SetF",
    "num_nonrel_judged_ret": "NumNonRelJudgedRet",
    "binG": "BinG",
    "G": "G",
    "ndcg_rel": "nDCGRel",
    "Rndcg": "RnDCG",
    "rbp": "RBP(p=0.9)",
    "rbp_resid": "RBPResid(p=0.9)",
    # -R prefs / qrels_prefs (m_prefs_*.c) and -R qrels_jg
    "prefs_num_prefs_poss": "PrefsNumPoss",
    "prefs_num_prefs_ful": "PrefsNumFul",
    "prefs_num_prefs_ful_ret": "PrefsNumFulRet",
    "prefs_simp": "PrefsSimp",
    "prefs_pair": "PrefsPair",
    "prefs_avgjg": "PrefsAvgJG",
    "prefs_avgjg_Rnonrel": "PrefsAvgJGRnonrel",
    "prefs_simp_ret": "PrefsSimpRet",
    "prefs_pair_ret": "PrefsPairRet",
    "prefs_avgjg_ret": "PrefsAvgJGRet",
    "prefs_avgjg_Rnonrel_ret": "PrefsAvgJGRnonrelRet",
    "prefs_simp_imp": "PrefsSimpImp",
    "prefs_pair_imp": "PrefsPairImp",
    "prefs_avgjg_imp": "PrefsAvgJGImp",
    "map_avgjg": "APAvgJG",
}
_CUT = {"P": "P@{}", "recall": "R@{}", "ndcg_cut": "nDCG@{}", "map_cut": "AP@{}", "success": "Success@{}", "unj": "Unjudged@{}"}


def to_gpukit(name: str) -> str | None:
    if name in _SIMPLE:
        return _SIMPLE[name]
    m = re.fullmatch(r"(P|recall|ndcg_cut|map_cut|success|unj)_(\d+)", name)
    if m:
        return _CUT[m.group(1)].format(m.group(2))
    m = re.fullmatch(r"(iprec_at_recall|Rprec_mult)_(\d+\.\d\d)", name)
    if m:  # trec_eval prints float levels with %3.2f
        return {"iprec_at_recall": "IPrec@{}", "Rprec_mult": "RprecMult(mult={})"}[m.group(1)].format(m.group(2))
    m = re.fullmatch(r"relative_P_(\d+)", name)
    if m:
        return f"RelativeP@{m.group(1)}"
    m = re.fullmatch(r"(11pt_avg|utility|set_F)_([-\d.,]+)", name)
    if m:  # parameters given on the command line, printed as given (11pt_avg_.25,.5,.75)
        return f"{m.group(1)}.{m.group(2)}"
    m = re.fullmatch(r"P_avgjg_(\d+)", name)
    if m:
        return f"PAvgJG@{m.group(1)}"
    m = re.fullmatch(r"Rprec_mult_avgjg_(\d+\.\d+)", name)
    if m:  # trec_eval prints the level with %3.2f
        return f"RprecMultAvgJG(mult={float(m.group(1)):g})"
    m = re.fullmatch(r"ndcg_((?:\d+=[\d.]+,?)+)", name)
    if m:  # custom gains, e.g. ndcg_1=3,2=9,4=4.5
        return "ndcg." + m.group(1)
    return None
