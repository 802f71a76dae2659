"""Binary-relevance families: P, R, Rprec, RR, Success, AP, Bpref, Hits, F.

A document is relevant when its judged grade is >= ``rel`` (default 1,
trec_eval's ``-l``). R is the number of judged relevant documents of the
query, retrieved or not.
"""
from __future__ import annotations

from gpukit import metrics
from gpukit.families.common import TREC_CUTOFFS, always, describe_binary, needs_relevant, trec_names
from gpukit.families.params import BETA, REL
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family, TrecSyntax

_R_RULE = "R > 0 (the query has a relevant judged document)"


def _precision(r, m, cuts):
    v = metrics.precision(r.relevant(m.rel), cuts)
    return v, always(v)


def _recall(r, m, cuts):
    v = metrics.recall(r.relevant(m.rel), r.num_relevant(m.rel), cuts)
    return v, needs_relevant(r, m, v)


def _success(r, m, cuts):
    v = metrics.success(r.relevant(m.rel), cuts)
    return v, always(v)


def _rr(r, m, cuts):
    v = metrics.reciprocal_rank(r.relevant(m.rel), cuts)
    return v, always(v)


def _ap(r, m, cuts):
    v = metrics.average_precision(r.relevant(m.rel), r.num_relevant(m.rel), cuts)
    return v, needs_relevant(r, m, v)


def _rprec(r, m, cuts):
    v = metrics.r_precision(r.relevant(m.rel), r.num_relevant(m.rel))
    return v, needs_relevant(r, m, v)


def _hits(r, m, cuts):
    v = metrics.hits(r.relevant(m.rel), cuts)
    return v, always(v)


def _f(r, m, cuts):
    v = metrics.f_measure(r.relevant(m.rel), r.num_relevant(m.rel), cuts, m.param("beta"))
    return v, needs_relevant(r, m, v)


def _bpref(r, m, cuts):
    num_rel = r.num_relevant(m.rel)
    judged_nonrel = r.judged() & ~r.relevant(m.rel)
    v = metrics.bpref(r.relevant(m.rel), judged_nonrel, num_rel, r.num_judged() - num_rel)
    return v, needs_relevant(r, m, v)


P = register(Family(
    name="P",
    summary="precision at rank k",
    definition="P@k = |relevant in the top k| / k (k, not the number retrieved, as trec_eval)",
    kernel=_precision,
    cutoff="required",
    params=(REL,),
    aliases=(Alias("p", "ir_measures", bare="expand"), Alias("precision", "ranx", bare_family="SetP")),
    trec=(TrecSyntax("P", "cutoffs", TREC_CUTOFFS, groups=('official', 'all_trec')),),
    trec_cutoffs=TREC_CUTOFFS,
    needs=frozenset({"grades"}),
    describe=describe_binary,
    trec_name=trec_names(cut="P"),
    examples=("P@5", "P(rel=2)@3", "P@20"),
))

R = register(Family(
    name="R",
    summary="recall at rank k (or of the whole ranking)",
    definition="R@k = |relevant in the top k| / R; without a cutoff, over the whole ranking (trec_eval "
    "set_recall, ir_measures SetR: the same computation)",
    kernel=_recall,
    cutoff="optional",
    params=(REL,),
    aliases=(Alias("r", "ir_measures"), Alias("recall", "trec_eval", bare="expand"),
             Alias("SetR", "ir_measures"), Alias("set_recall", "trec_eval")),
    trec=(TrecSyntax("recall", "cutoffs", TREC_CUTOFFS, groups=('all_trec',)), TrecSyntax("set_recall", groups=('set', 'all_trec'))),
    trec_cutoffs=TREC_CUTOFFS,
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    trec_name=trec_names(cut="recall", uncut="set_recall"),
    examples=("R@5", "R", "R(rel=2)@3"),
))

Rprec = register(Family(
    name="Rprec",
    summary="precision at rank R",
    definition="Rprec = |relevant in the top R| / R",
    kernel=_rprec,
    params=(REL,),
    aliases=(Alias("rprec", "ir_measures"), Alias("r-precision", "ranx"), Alias("r_precision", "ranx")),
    trec=(TrecSyntax("Rprec", groups=('official', 'all_trec')),),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    trec_name=trec_names(uncut="Rprec"),
    examples=("Rprec", "Rprec(rel=2)"),
))

RR = register(Family(
    name="RR",
    summary="reciprocal rank of the first relevant document",
    definition="RR@k = 1 / rank of the first relevant document if it is within k, else 0",
    kernel=_rr,
    cutoff="optional",
    params=(REL,),
    aliases=(Alias("rr", "ir_measures"), Alias("mrr", "ranx"), Alias("recip_rank", "trec_eval")),
    trec=(TrecSyntax("recip_rank", groups=('official', 'all_trec')),),
    needs=frozenset({"grades"}),
    describe=describe_binary,
    trec_name=trec_names(uncut="recip_rank"),
    examples=("RR", "RR@3", "RR(rel=2)"),
))

Success = register(Family(
    name="Success",
    summary="1 if a relevant document is in the top k",
    definition="Success@k = 1 if |relevant in the top k| > 0, else 0",
    kernel=_success,
    cutoff="required",
    params=(REL,),
    aliases=(Alias("success", "trec_eval", bare="expand"), Alias("hit_rate", "ranx", bare="error"),
             Alias("hitrate", "ranx", bare="error")),
    trec=(TrecSyntax("success", "cutoffs", (1, 5, 10), groups=('all_trec',)),),
    trec_cutoffs=(1, 5, 10),
    needs=frozenset({"grades"}),
    describe=describe_binary,
    trec_name=trec_names(cut="success"),
    examples=("Success@1", "Success@3", "Success(rel=2)@5"),
))

AP = register(Family(
    name="AP",
    summary="average precision (trec_eval map, map_cut)",
    definition="AP@k = (1/R) * sum over relevant ranks i <= k of P@i; R counts every relevant judged "
    "document, retrieved or not, whatever k is",
    kernel=_ap,
    cutoff="optional",
    params=(REL,),
    aliases=(Alias("ap", "ir_measures"), Alias("map", "trec_eval"), Alias("map_cut", "trec_eval", bare="expand")),
    trec=(TrecSyntax("map", groups=('official', 'all_trec')), TrecSyntax("map_cut", "cutoffs", TREC_CUTOFFS, groups=('all_trec',))),
    trec_cutoffs=TREC_CUTOFFS,
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    trec_name=trec_names(cut="map_cut", uncut="map"),
    examples=("AP", "AP@3", "AP(rel=2)"),
))

Bpref = register(Family(
    name="Bpref",
    summary="binary preference (Buckley & Voorhees), as trec_eval",
    definition="bpref = (1/R) * sum over retrieved relevant r of (1 - min(n_r, R) / min(N, R)); n_r = judged "
    "non-relevant ranked above r, N = judged non-relevant; unjudged documents are skipped",
    kernel=_bpref,
    params=(REL,),
    aliases=(Alias("bpref", "trec_eval"),),
    trec=(TrecSyntax("bpref", groups=('official', 'all_trec')),),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    trec_name=trec_names(uncut="bpref"),
    examples=("Bpref", "Bpref(rel=2)"),
))

Hits = register(Family(
    name="Hits",
    summary="number of relevant documents in the top k (ranx hits)",
    definition="Hits@k = |relevant in the top k|; without a cutoff, over the whole ranking (NumRelRet per query, "
    "but averaged under every convention, as ranx, where trec_eval sums num_rel_ret)",
    kernel=_hits,
    cutoff="optional",
    params=(REL,),
    aliases=(Alias("hits", "ranx"),),
    needs=frozenset({"grades"}),
    describe=describe_binary,
    examples=("Hits@5", "Hits", "Hits(rel=2)@3", "Hits@20"),
))

F = register(Family(
    name="F",
    summary="F measure at rank k: weighted harmonic mean of P@k and R@k (ranx f1@k)",
    definition="F@k = (beta + 1) * P@k * R@k / (beta * P@k + R@k), P@k dividing by k; 0 when nothing relevant is "
    "in the top k; beta = 1 (default) is ranx's f1@k (ranx's bare f1, over the whole retrieved set, is SetF)",
    kernel=_f,
    cutoff="required",
    params=(REL, BETA),
    aliases=(Alias("f1", "ranx", bare_family="SetF"),),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    examples=("F@5", "F@1", "F(beta=0.5)@3", "F(rel=2)@10", "F(beta=0)@20"),
))
