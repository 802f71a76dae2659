"""Counts and coverage: NumRet, NumRel, NumRelRet, Judged@k.

trec_eval sums counts over queries (``num_rel_ret all`` is the total); the
gpukit convention reports their mean.
"""
from __future__ import annotations

import torch

from gpukit.families.common import always, describe_binary, trec_names
from gpukit.families.params import REL
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family, TrecSyntax
from gpukit.metrics.coverage import judged_share
from gpukit.ranking import NOT_JUDGED

_SUM = (("trec_eval", "sum"),)


def _num_ret(r, m, cuts):
    v = r.num_ret.to(torch.float64)[:, None]
    return v, always(v)


def _num_rel(r, m, cuts):
    v = r.num_relevant(m.rel).to(torch.float64)[:, None]
    return v, always(v)


def _num_rel_ret(r, m, cuts):
    v = r.relevant(m.rel).sum(1).to(torch.float64)[:, None]
    return v, always(v)


def _judged(r, m, cuts):
    # ir_measures' judged provider: a document is judged when it is in the qrels at all (a negative
    # grade included), and the share is of the documents read, min(k, |ranking|).
    v = judged_share(r.grades != NOT_JUDGED, r.num_ret, cuts)
    return v, always(v)


NumRet = register(Family(
    name="NumRet",
    summary="number of documents retrieved (after -M)",
    definition="NumRet = |ranking|",
    kernel=_num_ret,
    aliases=(Alias("num_ret", "trec_eval"), Alias("numret", "ir_measures")),
    trec=(TrecSyntax("num_ret", groups=('official', 'set', 'all_trec')),),
    needs=frozenset({"num_ret"}),
    aggregate=_SUM,
    trec_format="int",
    trec_name=trec_names(uncut="num_ret"),
    examples=("NumRet",),
))

NumRel = register(Family(
    name="NumRel",
    summary="number of relevant judged documents (R)",
    definition="NumRel = R, relevant judged documents of the query, retrieved or not",
    kernel=_num_rel,
    params=(REL,),
    aliases=(Alias("num_rel", "trec_eval"), Alias("numrel", "ir_measures")),
    trec=(TrecSyntax("num_rel", groups=('official', 'set', 'all_trec')),),
    needs=frozenset({"ideal"}),
    aggregate=_SUM,
    trec_format="int",
    describe=describe_binary,
    trec_name=trec_names(uncut="num_rel"),
    examples=("NumRel", "NumRel(rel=2)"),
))

NumRelRet = register(Family(
    name="NumRelRet",
    summary="number of relevant documents retrieved",
    definition="NumRelRet = |relevant in the ranking|",
    kernel=_num_rel_ret,
    params=(REL,),
    aliases=(Alias("num_rel_ret", "trec_eval"), Alias("numrelret", "ir_measures")),
    trec=(TrecSyntax("num_rel_ret", groups=('official', 'set', 'all_trec')),),
    needs=frozenset({"grades"}),
    aggregate=_SUM,
    trec_format="int",
    describe=describe_binary,
    trec_name=trec_names(uncut="num_rel_ret"),
    examples=("NumRelRet", "NumRelRet(rel=2)"),
))

Judged = register(Family(
    name="Judged",
    summary="fraction of the documents read in the top k that are in the qrels",
    definition="Judged@k = |documents of the top k that are in the qrels| / min(k, |ranking|), 0 for an empty "
    "ranking; without a cutoff, over the whole ranking; a negative grade counts as judged here (ir_measures' judged "
    "provider; trec_eval's unj, gpukit Unjudged@k, divides by k and counts negative grades as unjudged)",
    kernel=_judged,
    cutoff="optional",
    aliases=(Alias("judged", "ir_measures"),),
    needs=frozenset({"grades", "num_ret"}),
    streamable="a stream's targets do not tell a document absent from the qrels from one with a negative grade",
    examples=("Judged@1", "Judged@5", "Judged"),
))
