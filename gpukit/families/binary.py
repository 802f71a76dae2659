"""Binary-relevance families: P, R, Rprec, RR, Success, AP, Bpref, Accuracy, Hits, F.

A document is relevant when its judged grade is >= ``rel`` (default 1,
trec_eval's ``-l``). R is the number of judged relevant documents of the
query, retrieved or not.
"""
from __future__ import annotations

import torch

from gpukit import metrics
from gpukit.families.common import TREC_CUTOFFS, always, describe_binary, needs_relevant, trec_names
from gpukit.families.params import BETA, REL
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family, TrecSyntax
from gpukit.ideal_grades import NOT_JUDGED

_R_RULE = "R > 0 (the query has a relevant judged document)"


def _shared_hits(r, m):
    """The ranking's running hits at ``m.rel`` if a measure formed them already
    (AP and Rprec always do, and are computed first: see ``Family.forms_running_hits``),
    else None and the kernel counts only the columns its cutoffs reach.
    Counts are exact either way, so the values do not depend on which is used."""
    return r.running_hits(m.rel) if r.has_running_hits(m.rel) else None


def _precision(r, m, cuts):
    v = metrics.precision(r.relevant(m.rel), cuts, _shared_hits(r, m))
    return v, always(v)


def _recall(r, m, cuts):
    v = metrics.recall(r.relevant(m.rel), r.num_relevant(m.rel), cuts, _shared_hits(r, m))
    return v, needs_relevant(r, m, v)


def _success(r, m, cuts):
    v = metrics.success(r.relevant(m.rel), cuts, _shared_hits(r, m))
    return v, always(v)


def _rr(r, m, cuts):
    v = metrics.reciprocal_rank(r.relevant(m.rel), cuts)
    return v, always(v)


def _ap(r, m, cuts):
    v = metrics.average_precision(r.relevant(m.rel), r.num_relevant(m.rel), cuts, r.running_hits(m.rel))
    return v, needs_relevant(r, m, v)


def _rprec(r, m, cuts):
    # R may be any depth: the running hits answer every topic with one gather.
    v = metrics.r_precision(r.relevant(m.rel), r.num_relevant(m.rel), r.running_hits(m.rel))
    return v, needs_relevant(r, m, v)


def _hits(r, m, cuts):
    v = metrics.hits(r.relevant(m.rel), cuts, _shared_hits(r, m))
    return v, always(v)


def _f(r, m, cuts):
    v = metrics.f_measure(r.relevant(m.rel), r.num_relevant(m.rel), cuts, m.param("beta"), _shared_hits(r, m))
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
    forms_running_hits=True,
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
    forms_running_hits=True,
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


def _accuracy(r, m, cuts):
    # ir_measures' accuracy provider reads an unjudged document as grade 0
    # (qrel.get(doc, 0)), so with rel <= 0 it is relevant; a judged negative
    # grade stays below 0.
    retrieved = torch.arange(r.grades.shape[1], device=r.device)[None, :] < r.num_ret[:, None]
    grades = r.grades if m.rel > 0 else r.grades.masked_fill(r.grades == NOT_JUDGED, 0)
    rel = retrieved & (grades >= m.rel)
    return metrics.pair_accuracy(rel, retrieved & ~rel, cuts)


def _describe_accuracy(m):
    unjudged = "relevant (grade 0)" if m.rel <= 0 else "non-relevant"
    return {"relevance": f"grade >= {m.rel} is relevant; an unjudged document is {unjudged}, as ir_measures"}


Accuracy = register(Family(
    name="Accuracy",
    summary="share of (relevant, non-relevant) pairs of the top k ranked relevant first (ir_measures)",
    definition="Accuracy@k = 1 - sum over relevant r in the top k of n_r / (N_k * R_k); n_r = non-relevant "
    "documents above r, N_k and R_k the non-relevant and relevant documents in the top k (unjudged ones "
    "included: a diagnostic of the retrieved list, not of the qrels); without a cutoff, the whole ranking",
    kernel=_accuracy,
    cutoff="optional",
    params=(REL,),
    needs=frozenset({"grades", "num_ret"}),
    defined_when="the top k holds a relevant and a non-relevant document (ir_measures reports no value otherwise)",
    describe=_describe_accuracy,
    examples=("Accuracy", "Accuracy@10", "Accuracy(rel=2)@20"),
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
