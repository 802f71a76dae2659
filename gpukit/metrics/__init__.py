"""Functional metric kernels on padded (Q, K) tensors, any device.

No function here loops over queries in Python. Each takes ranked relevance
(or gains) in rank order and a list of cutoffs, and returns float64 (Q, C).
"""
from gpukit.metrics.binary import (
    average_precision,
    bpref,
    f_measure,
    first_relevant_rank,
    hits,
    pair_accuracy,
    precision,
    r_precision,
    recall,
    reciprocal_rank,
    running_hits,
    success,
)
from gpukit.metrics.coverage import judged_at_k
from gpukit.metrics.cutoffs import prefix_at
from gpukit.metrics.graded import dcg, discounts, gains, ideal_gains, ndcg

__all__ = [
    "average_precision",
    "bpref",
    "dcg",
    "discounts",
    "f_measure",
    "first_relevant_rank",
    "gains",
    "hits",
    "ideal_gains",
    "judged_at_k",
    "ndcg",
    "pair_accuracy",
    "precision",
    "prefix_at",
    "r_precision",
    "recall",
    "reciprocal_rank",
    "running_hits",
    "success",
]
