"""A tiny deterministic mteb encoder for offline tests and benchmarks: hashed bag of words.

A text's vector counts its lower-cased alphanumeric words, each added at
``crc32(word) % dim``; similarity is cosine. No weights, no network, the same
vectors on every machine, and scores that rank SciFact far above chance, so
the measures compared are not all zero.
"""
from __future__ import annotations

import re
import zlib

import numpy as np
import torch

WORD = re.compile(r"[a-z0-9]+")


class HashedWords:
    """mteb ``EncoderProtocol``: ``encode(dataloader, ...)``, ``similarity``, ``mteb_model_meta``."""

    def __init__(self, dim: int = 256) -> None:
        from mteb.models.model_meta import ModelMeta

        self.dim = dim
        self.mteb_model_meta = ModelMeta(
            loader=None, name="local/hashed-words", revision="0", release_date=None, languages=None, n_parameters=0,
            n_embedding_parameters=0, memory_usage_mb=0, max_tokens=np.inf, embed_dim=dim, license="mit",
            open_weights=True, public_training_code=None, public_training_data=None, framework=[],
            similarity_fn_name="cosine", use_instructions=False, training_datasets=set(), modalities=["text"], reference=None)

    def vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        for word in WORD.findall(text.lower()):
            out[zlib.crc32(word.encode()) % self.dim] += 1.0
        return out

    def encode(self, inputs, **kwargs) -> np.ndarray:
        return np.stack([self.vector(text) for batch in inputs for text in batch["text"]])

    def similarity(self, a, b) -> torch.Tensor:
        a, b = (torch.nn.functional.normalize(torch.as_tensor(x), dim=-1) for x in (a, b))
        return a @ b.T

    def similarity_pairwise(self, a, b) -> torch.Tensor:
        a, b = (torch.nn.functional.normalize(torch.as_tensor(x), dim=-1) for x in (a, b))
        return (a * b).sum(-1)
