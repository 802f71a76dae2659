"""Clustered synthetic embeddings with known relevant documents.

Corpus vectors are drawn around ``C`` random centres and L2-normalised:

    x_i = normalize(c_{a_i} + s_doc * g_i),      g_i ~ N(0, I_d)

and each query is a noisy copy of one corpus vector (its source):

    q_j = normalize(x_{src_j} + s_query * h_j),  h_j ~ N(0, I_d)

(centres are N(0, I_d) too; the query noise has norm about
``s_query * sqrt(d)`` against the unit-length source).

Clustering gives IVF/HNSW indexes realistic structure (uniform random
vectors make every approximate index look bad), and the source document is
the query's one relevant document (grade 1), so nDCG@10 can be computed.
Because vectors are unit length, ``ip`` and ``cosine`` rank identically.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch

from gpukit.judgments.qrels import Qrels
from gpukit.errors import GpukitError

# Per-coordinate standard deviations, chosen so that clusters overlap (IVF
# at nprobe=1 recalls roughly half of the exact top 10 at d = 64) and the
# source document is usually, not always, the exact nearest neighbour of
# its query (about 95% at d = 64, 75% at d = 16, 97% at d = 128).
DOC_SPREAD = 1.2
QUERY_SPREAD = 0.15


@dataclass(frozen=True)
class SyntheticData:
    corpus: torch.Tensor  # (N, d) float32
    queries: torch.Tensor  # (Q, d) float32
    sources: torch.Tensor  # (Q,) int64 row of each query's relevant document
    doc_ids: list[str]
    query_ids: list[str]
    qrels: Qrels


def parse_shape(text: str) -> tuple[int, int, int]:
    """``"N,Q,D"`` -> three positive ints (the CLI's ``--synthetic``)."""
    parts = text.replace("x", ",").split(",")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) < 1:
        raise GpukitError(f"--synthetic expects N,Q,D as three positive integers, e.g. 100000,1000,128; got {text!r}")
    return values  # type: ignore[return-value]


def _physical_memory_bytes() -> int:
    """Physical memory (POSIX sysconf), or the int64 maximum where unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 2**63 - 1


def synthetic_dataset(n: int, q: int, d: int, clusters: int | None = None, seed: int = 0) -> SyntheticData:
    """``n`` documents, ``q`` queries of dimension ``d`` (CPU float32 tensors).

    ``clusters`` defaults to ``round(sqrt(n))``, capped at 4096.
    """
    if min(n, q, d) < 1:
        raise GpukitError(f"synthetic sizes must be positive; got N={n}, Q={q}, D={d}")
    # The float32 corpus and queries alone; checked up front because torch
    # reports a failed allocation (or a size past int64) with a C++ trace.
    needed = (n + q) * d * 4
    if needed > _physical_memory_bytes():
        raise GpukitError(
            f"synthetic N={n}, Q={q}, D={d} needs {needed / 2**30:,.1f} GiB of float32 embeddings, "
            f"more than this machine's {_physical_memory_bytes() / 2**30:,.1f} GiB of memory"
        )
    c = clusters or max(1, min(4096, round(math.sqrt(n))))
    gen = torch.Generator().manual_seed(seed)
    centres = torch.randn(c, d, generator=gen)
    assign = torch.randint(0, c, (n,), generator=gen)
    corpus = torch.empty(n, d)
    # Row blocks bound the temporary memory for large corpora.
    for start in range(0, n, 65536):
        stop = min(n, start + 65536)
        block = centres[assign[start:stop]] + DOC_SPREAD * torch.randn(stop - start, d, generator=gen)
        corpus[start:stop] = torch.nn.functional.normalize(block, dim=1)
    sources = torch.randint(0, n, (q,), generator=gen)
    noisy = corpus[sources] + QUERY_SPREAD * torch.randn(q, d, generator=gen)
    queries = torch.nn.functional.normalize(noisy, dim=1)
    doc_ids = [f"d{i}" for i in range(n)]
    query_ids = [f"q{j}" for j in range(q)]
    qrels = Qrels.from_arrays(query_ids, [doc_ids[int(s)] for s in sources], [1] * q, source="<synthetic>")
    return SyntheticData(corpus, queries, sources, doc_ids, query_ids, qrels)
