"""Turning "an encoder" into batched device embeddings, with an on-disk cache.

An encoder is either

* a callable ``list[str] -> (n, d)`` tensor / NumPy array / anything
  ``torch.as_tensor`` accepts, or
* a sentence-transformers model (anything with ``.encode``), called as
  ``model.encode(texts, convert_to_tensor=True, batch_size=..., show_progress_bar=False)``.

Texts are encoded in batches of ``batch_size`` behind one tqdm bar. Batches
are formed after sorting the texts by length (longest first, stable), as
sentence-transformers does internally, so each batch pads to similar lengths;
results are written back in the original order. Each batch's output is copied
once to the target device into a preallocated float32 matrix.

Cache keys. Corpus embeddings can be cached in ``cache_dir``
(:mod:`~gpukit.pipelines.embedding_cache`) under a name made from sha256
hashes of a *model identifier* and of the *corpus*:

* model identifier: ``model_name=`` if given; else, for sentence-transformers
  models, ``name_or_path`` of the underlying transformer plus
  ``max_seq_length`` and the module stack; else an encoder attribute
  ``name_or_path``. A plain callable without one of these cannot be
  identified (its behaviour may depend on weights or closures), so caching
  it requires ``model_name=``.
* corpus hash: sha256 over every (doc id, encoded text) pair in order,
  length-prefixed so no two different corpora hash alike by concatenation.

The cache records both full identifiers and is only used when both match,
plus a probe encoding that catches new weights under an old name (for a
model trained in place, still put the step in ``model_name``).
"""
from __future__ import annotations

import hashlib
import re
import zlib
from typing import Any, Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from gpukit.errors import EncoderError, UsageError  # EncoderError re-exported for old imports

Encoder = Callable[[list[str]], Any]
_TOKEN = re.compile(r"\w+")


def is_sentence_transformer(encoder: Any) -> bool:
    """Duck typing: sentence-transformers models (and look-alikes) have ``.encode``."""
    return callable(getattr(encoder, "encode", None))


def encoder_device(encoder: Any) -> torch.device | None:
    """The device a sentence-transformers model runs on, if it says."""
    device = getattr(encoder, "device", None) if is_sentence_transformer(encoder) else None
    return torch.device(device) if device is not None else None


def similarity_name(encoder: Any) -> str | None:
    """The model's declared similarity (``cosine``, ``dot``, ``euclidean``, ...), if any.

    sentence-transformers >= 3 stores it as ``similarity_fn_name`` (``None``
    until first use, meaning its default, cosine).
    """
    if not is_sentence_transformer(encoder):
        return None
    name = getattr(encoder, "similarity_fn_name", None)
    if name is None and hasattr(encoder, "similarity_fn_name"):
        return "cosine"
    return str(getattr(name, "value", name)) if name is not None else None


def _encode_batch(encoder: Any, texts: list[str], batch_size: int) -> Any:
    if is_sentence_transformer(encoder):
        return encoder.encode(texts, convert_to_tensor=True, batch_size=batch_size, show_progress_bar=False)
    return encoder(texts)


def _as_matrix(output: Any, expected_rows: int) -> torch.Tensor:
    if isinstance(output, torch.Tensor):
        tensor = output
    elif isinstance(output, list) and output and isinstance(output[0], torch.Tensor):
        tensor = torch.stack(output)  # sentence-transformers may return a list of tensors
    else:
        tensor = torch.as_tensor(np.asarray(output))
    if tensor.ndim != 2 or tensor.shape[0] != expected_rows:
        raise EncoderError(f"the encoder returned shape {tuple(tensor.shape)} for {expected_rows} texts; expected ({expected_rows}, d)")
    if not (tensor.is_floating_point() or tensor.dtype in (torch.int8, torch.uint8, torch.int32, torch.int64)):
        raise EncoderError(f"the encoder returned dtype {tensor.dtype}; expected floating-point embeddings")
    return tensor


def encode_texts(
    encoder: Any,
    texts: Sequence[str],
    *,
    device: torch.device,
    batch_size: int = 64,
    show_progress: bool = True,
    desc: str = "encode",
) -> torch.Tensor:
    """Encode ``texts`` into a float32 ``(n, d)`` tensor on ``device`` (see module docstring)."""
    if batch_size < 1:
        raise UsageError(f"batch_size must be >= 1, got {batch_size}")
    n = len(texts)
    if n == 0:
        raise EncoderError("nothing to encode: no texts")
    # Longest first, so the first batch also sizes the peak memory use.
    order = sorted(range(n), key=lambda i: -len(texts[i]))
    out: torch.Tensor | None = None
    with tqdm(total=n, desc=desc, unit="text", disable=not show_progress, leave=False) as bar:
        for start in range(0, n, batch_size):
            rows = order[start : start + batch_size]
            batch = _as_matrix(_encode_batch(encoder, [texts[i] for i in rows], batch_size), len(rows))
            if out is None:
                out = torch.empty((n, batch.shape[1]), dtype=torch.float32, device=device)
            elif batch.shape[1] != out.shape[1]:
                raise EncoderError(f"the encoder returned dimension {batch.shape[1]} after {out.shape[1]}")
            index = torch.as_tensor(rows, dtype=torch.int64, device=device)
            out.index_copy_(0, index, batch.to(device=device, dtype=torch.float32))
            bar.update(len(rows))
    assert out is not None
    return out


# --------------------------------------------------------------------- cache
def model_identifier(encoder: Any, model_name: str | None = None) -> str | None:
    """A string identifying the encoder for the cache, or None if it cannot be identified."""
    if model_name is not None:
        return f"name:{model_name}"
    if is_sentence_transformer(encoder):
        parts = []
        first = encoder[0] if hasattr(encoder, "__getitem__") and hasattr(encoder, "__len__") and len(encoder) else None
        auto_model = getattr(first, "auto_model", None)
        name = getattr(getattr(auto_model, "config", None), "_name_or_path", None) or getattr(getattr(encoder, "tokenizer", None), "name_or_path", None)
        if name:
            parts.append(f"st:{name}")
            parts.append(f"max_seq_length={getattr(encoder, 'max_seq_length', None)}")
            if hasattr(encoder, "__iter__"):
                parts.append("modules=" + ",".join(type(m).__name__ for m in encoder))
            return ";".join(parts)
    name = getattr(encoder, "name_or_path", None)
    if isinstance(name, str) and name:
        return f"path:{name}"
    return None


def corpus_hash(doc_ids: Sequence[str], texts: Sequence[str]) -> str:
    """sha256 over length-prefixed (doc id, text) pairs, in order."""
    digest = hashlib.sha256()
    for doc_id, text in zip(doc_ids, texts):
        for part in (doc_id, text):
            data = part.encode("utf-8")
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
    return digest.hexdigest()


class HashingEncoder:
    """A weightless stand-in model: hashed bag of words.

    ``v[crc32(w) mod dim] += 1`` for every token ``w`` of the lower-cased text
    (runs of word characters, ``\\w+``). Deterministic across processes (crc32
    is unsalted), the same vector in any batch, and integer-valued, so inner
    products are exact in float32 (below 2^24). For exercising pipelines,
    tests and benchmarks (``gpukit embed-eval --model hash:DIM``); not a
    retriever to report.
    """

    def __init__(self, dim: int = 256) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise UsageError(f"the hashing encoder's dimension must be a positive int; got {dim!r}")
        self.dim = dim
        self.name_or_path = f"hash:{dim}"  # the cache's model identifier

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                out[row, zlib.crc32(token.encode("utf-8")) % self.dim] += 1
        return out
