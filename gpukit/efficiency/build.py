"""Build axis: time of each visible construction stage, never summed with query costs.

Stages, each timed separately (device-synchronised):

* ``encode`` (optional): turning corpus texts into embeddings, when an
  encoder is used; reported on its own line and not part of the index total;
* ``train``: faiss training where the index needs it (IVF coarse k-means,
  PQ/SQ codebooks), on the training sample;
* ``add``: storing the vectors (exact: copy/normalise/norms; IVF: assign
  to lists and encode);
* ``graph_build``: for graph indexes (HNSW, NSG) faiss builds the graph
  inside ``add``, so that stage is named for what it does.

``index_seconds = train + add/graph_build``: the sporadic cost of
(re)building the index from ready embeddings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from gpukit.efficiency.specs import IndexSpec
from gpukit.efficiency.timing import time_call
from gpukit.errors import EncoderError
from gpukit.index import FaissIndex, SearchIndex

GRAPH_MARKERS = ("HNSW", "NSG")


@dataclass
class BuildStage:
    name: str
    seconds: float
    what: str

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.name, "seconds": self.seconds, "what": self.what}


@dataclass
class BuildResult:
    """The built index and its stage timings."""

    index: SearchIndex
    stages: list[BuildStage]
    encode: BuildStage | None = None
    train_vectors: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def index_seconds(self) -> float:
        return sum(stage.seconds for stage in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": [stage.to_dict() for stage in self.stages],
            "index_seconds": self.index_seconds,
            "encode": None if self.encode is None else self.encode.to_dict(),
            "train_vectors": self.train_vectors,
            "notes": self.notes,
        }


def time_encoding(
    encoder: Callable[[Sequence[str]], Any], texts: Sequence[str], device: torch.device
) -> tuple[torch.Tensor, BuildStage]:
    """Encode ``texts`` with ``encoder`` (returning an (N, d) array) and time it."""
    seconds, embeddings = time_call(lambda: encoder(texts), device)
    tensor = torch.as_tensor(embeddings)
    if tensor.ndim != 2 or tensor.shape[0] != len(texts):
        raise EncoderError(f"encoder returned shape {tuple(tensor.shape)} for {len(texts)} texts; expected (N, d)")
    return tensor.float(), BuildStage("encode", seconds, f"encoder over {len(texts)} corpus texts")


def build_index(
    spec: IndexSpec, corpus: torch.Tensor, device: torch.device, train_size: int | None = None
) -> BuildResult:
    """Build ``spec`` on ``corpus`` (already on ``device``), timing each stage.

    ``train_size`` caps the training sample of faiss indexes that need
    training (the first rows; faiss itself subsamples large samples).
    """
    index = spec.build_empty(corpus.shape[1], device)
    stages: list[BuildStage] = []
    notes: list[str] = []
    train_vectors = 0
    if isinstance(index, FaissIndex) and not index.is_trained:
        sample = corpus if train_size is None else corpus[:train_size]
        train_vectors = int(sample.shape[0])
        seconds, _ = time_call(lambda: index.train(sample), device)
        stages.append(BuildStage("train", seconds, f"faiss training of {spec.factory!r} on {train_vectors} vectors"))
    seconds, _ = time_call(lambda: index.add(corpus), device)
    if isinstance(index, FaissIndex) and any(marker in spec.factory for marker in GRAPH_MARKERS):
        stages.append(BuildStage("graph_build", seconds, "faiss add, which inserts every vector into the graph"))
    elif isinstance(index, FaissIndex):
        stages.append(BuildStage("add", seconds, "faiss add: assign to lists / encode vectors"))
    else:
        stages.append(BuildStage("add", seconds, f"store {spec.dtype} vectors on {device}"))
        notes.append("exact search has no training or graph stage")
    return BuildResult(index=index, stages=stages, train_vectors=train_vectors, notes=notes)
