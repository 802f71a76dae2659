"""Evaluation conventions: which topics are scored and which enter a mean.

``gpukit`` (default)
    Topics are all qrels queries (a query the run does not answer scores as an
    empty ranking). A query whose measure is undefined — R = 0 for R@k, AP,
    Rprec and bpref; IDCG = 0 for nDCG — is omitted from that measure's mean
    and counted in ``omitted``. Means are unweighted over evaluated queries.

``trec_eval``
    trec_eval's numbers: topics are the queries present in both run and qrels
    (``complete=True`` adds qrels topics missing from the run as empty
    rankings, like ``trec_eval -c``); undefined values score 0 and stay in the
    mean; scores are compared in float64 (``score_dtype=torch.float32`` for
    builds that read scores as float).
"""
from __future__ import annotations

from dataclasses import dataclass

from gpukit.errors import GpukitError

TIE_BREAK = "score descending, then doc id descending (byte-wise), as trec_eval"


@dataclass(frozen=True)
class Convention:
    name: str
    complete: bool
    omit_undefined: bool

    def zero_rule(self) -> str:
        if self.omit_undefined:
            return "queries where the measure is undefined (R = 0 for recall, AP, Rprec, bpref; IDCG = 0 for nDCG; each family's rule in `gpukit measures`) are omitted from the mean and counted"
        return "queries where the measure is undefined (R = 0, IDCG = 0, ...) score 0 and stay in the mean (trec_eval)"

    def topic_rule(self) -> str:
        if self.complete:
            return "all qrels queries; queries missing from the run score as empty rankings"
        return "queries in both run and qrels"


def get_convention(name: str, complete: bool | None = None) -> Convention:
    """Look up a convention by name; ``complete`` overrides its topic rule."""
    if name == "gpukit":
        return Convention("gpukit", True if complete is None else complete, True)
    if name in ("trec_eval", "trec-eval", "trec"):
        return Convention("trec_eval", False if complete is None else complete, False)
    raise GpukitError(f"unknown convention {name!r}; choose 'gpukit' or 'trec_eval'")
