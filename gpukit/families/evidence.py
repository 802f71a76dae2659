"""Completeness of evidence: Complete@k, RCap@k (BEIR's R_cap), Hole@k, APCap@k.

Measures of embedding-retrieval benchmarks and multi-hop question answering,
none of them trec_eval's. Sources read for the definitions:

* BEIR ``beir/retrieval/custom_metrics.py`` (beir-cellar/beir, 2025-10):
  ``recall_cap`` divides the relevant documents (grade > 0) of the top k by
  ``min(R, k)``; ``hole`` counts the top-k documents absent from the
  *annotated corpus* -- every document of the qrels of any query, whatever
  its grade -- and divides by ``k``.
* MTEB ``mteb/_evaluators/retrieval_metrics.py`` (embeddings-benchmark/mteb,
  2026-08): the same two definitions per query, ranking ties by doc id
  descending (as trec_eval), R_cap undefined (None) when R = 0.
* sentence-transformers ``InformationRetrievalEvaluator.compute_metrics``
  (UKPLab/sentence-transformers, 2025-10): MAP@k divides the sum of P@i over
  the relevant ranks i <= k by ``min(k, R)``, where trec_eval's map_cut (gpukit
  ``AP@k``) divides by R: the two differ whenever R > k.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import torch

from gpukit.families.common import always, describe_binary, needs_relevant
from gpukit.families.params import REL
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family
from gpukit.metrics import evidence

if TYPE_CHECKING:  # pragma: no cover
    from gpukit.measures import Measure
    from gpukit.ranking import RankedJudgments

Values = tuple[torch.Tensor, torch.Tensor]

_R_RULE = "R > 0 (the query has a relevant judged document)"


def _over_r(kernel: Callable[[torch.Tensor, torch.Tensor, Sequence], torch.Tensor]) -> Callable[..., Values]:
    """Adapter of a kernel (relevant mask, R, cutoffs) -> values, defined where R > 0."""

    def adapter(r: "RankedJudgments", m: "Measure", cuts: Sequence) -> Values:
        v = kernel(r.relevant(m.rel), r.num_relevant(m.rel), cuts)
        return v, needs_relevant(r, m, v)

    return adapter


def _hole(r: "RankedJudgments", m: "Measure", cuts: Sequence) -> Values:
    width = r.grades.shape[1]
    retrieved = torch.arange(width, device=r.device)[None, :] < r.num_ret[:, None]
    v = evidence.hole(retrieved & ~r.annotated(), cuts)
    return v, always(v)


def _describe_hole(m: "Measure") -> dict[str, str]:
    return {
        "annotated": "a document judged for any query of the qrels, whatever its grade (BEIR, MTEB)",
        "denominator": "k, even when fewer documents are retrieved",
    }


def _describe_capped(m: "Measure") -> dict[str, str]:
    return {**describe_binary(m), "denominator": "min(k, R), not R (trec_eval's map_cut and recall use R)"}


Complete = register(Family(
    name="Complete",
    summary="1 if every relevant document is in the top k (the evidence is complete)",
    definition="Complete@k = 1 if |relevant in the top k| = R, else 0; without a cutoff, over the whole "
    "ranking; R = 0 scores 0 under trec_eval's convention",
    kernel=_over_r(evidence.complete),
    cutoff="optional",
    params=(REL,),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=describe_binary,
    examples=("Complete@5", "Complete", "Complete(rel=2)@3"),
))

RCap = register(Family(
    name="RCap",
    summary="capped recall: relevant in the top k over min(k, R) (BEIR R_cap@k)",
    definition="RCap@k = |relevant in the top k| / min(k, R) (BEIR recall_cap; reaches 1 when R > k and the "
    "top k is all relevant, unlike R@k)",
    kernel=_over_r(evidence.capped_recall),
    cutoff="required",
    params=(REL,),
    aliases=(Alias("R_cap", "beir", bare="error"), Alias("recall_cap", "beir", bare="error")),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=_describe_capped,
    examples=("RCap@5", "RCap(rel=2)@3", "RCap@20"),
))

Hole = register(Family(
    name="Hole",
    summary="fraction of the top k not judged for any query (BEIR/MTEB Hole@k)",
    definition="Hole@k = |retrieved top-k documents absent from the qrels of every query| / k (BEIR, MTEB: "
    "a document judged for another query, or with a negative grade, is annotated; the denominator is k)",
    kernel=_hole,
    cutoff="required",
    aliases=(Alias("hole", "beir", bare="error"),),
    needs=frozenset({"annotated", "num_ret"}),
    streamable="it needs the document ids of every judgment (the annotated corpus), which a dense batch does not have",
    describe=_describe_hole,
    examples=("Hole@1", "Hole@5", "Hole@20"),
))

APCap = register(Family(
    name="APCap",
    summary="average precision over min(k, R) (sentence-transformers / BEIR-style MAP@k), not map_cut",
    definition="APCap@k = (1 / min(k, R)) * sum over relevant ranks i <= k of P@i (sentence-transformers "
    "InformationRetrievalEvaluator MAP@k); trec_eval's map_cut, gpukit AP@k, divides by R instead",
    kernel=_over_r(evidence.capped_average_precision),
    cutoff="required",
    params=(REL,),
    needs=frozenset({"grades", "ideal"}),
    defined_when=_R_RULE,
    describe=_describe_capped,
    examples=("APCap@3", "APCap(rel=2)@5", "APCap@20"),
))
