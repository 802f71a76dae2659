"""GMBpref: trec_eval's gm_bpref, bpref aggregated by a geometric mean.

trec_eval prints gm_bpref only as a summary: exp(mean over queries of
log(max(bpref, 1e-5))), which rewards systems that are consistent across
topics. The per-query value gpukit reports is the query's bpref.
"""
from __future__ import annotations

from gpukit.families.binary import _bpref
from gpukit.families.common import describe_binary, trec_names
from gpukit.families.params import REL
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family, TrecSyntax

GMBpref = register(Family(
    name="GMBpref",
    summary="bpref aggregated by a geometric mean over queries (trec_eval gm_bpref)",
    definition="GMBpref = exp(mean over queries of log(max(bpref_q, 1e-5))); bpref_q as Bpref (judged "
    "non-relevant ranked above each retrieved relevant document, unjudged skipped); per query: bpref_q",
    kernel=_bpref,
    params=(REL,),
    aliases=(Alias("gm_bpref", "trec_eval"),),
    trec=(TrecSyntax("gm_bpref"),),
    needs=frozenset({"grades", "ideal"}),
    defined_when="R > 0 (the query has a relevant judged document)",
    aggregate=(("gpukit", "gmean"), ("trec_eval", "gmean")),
    streamable="its aggregate is a geometric mean",
    trec_per_query=False,
    describe=describe_binary,
    trec_name=trec_names(uncut="gm_bpref"),
    examples=("GMBpref", "GMBpref(rel=2)"),
    trec_groups=("all_trec",),
))
