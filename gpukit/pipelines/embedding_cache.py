"""Corpus embeddings cached on disk in shards, resumable and checked before use.

Layout: ``cache_dir/corpus-<model>-<corpus>-<dtype>-u<rows>/`` holds

* ``meta.json``: format, model identifier, the model *fingerprint*, the
  corpus sha256 (:func:`~gpukit.pipelines.encoders.corpus_hash`), document
  count, storage dtype and rows per shard;
* ``shard-000000.pt``, ...: shard ``u`` is unit ``u`` of the global length
  order (:class:`~gpukit.pipelines.sharding.Deal`): its doc ids, its
  embeddings in the storage dtype (fp32, fp16 or bf16), the sha256 of their
  bytes and the fingerprint's sha256.

Fingerprint: the model identifier plus the embeddings of two fixed probe
texts (:data:`PROBE_TEXTS`); it tells apart two models under one name (new
weights saved in place). Probes match when they agree to ``rtol = 1e-3``
(``atol = 1e-3`` times the largest magnitude): another device or kernel
rounds differently, another model differs grossly.

Each shard is written atomically (temporary file + rename) as soon as its
unit is encoded, so an interrupted encoding resumes after the last complete
shard and a finished one is read back without encoding. A shard that cannot
be read, whose ids, dtype, shape, checksum or fingerprint disagree, or a
``meta.json`` for another model, raises :class:`EmbeddingCacheError`: a
cache is never silently reused, nor silently overwritten.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from gpukit.errors import EmbeddingCacheError
from gpukit.index.exact import parse_dtype
from gpukit.pipelines.encoders import corpus_hash

CACHE_FORMAT = 2
PROBE_TEXTS = ("gpukit embedding cache probe: the quick brown fox jumps over the lazy dog.", "Probe two.")
DTYPE_TAGS = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
PROBE_RTOL = 1e-3


def tensor_sha256(tensor: torch.Tensor) -> str:
    """sha256 of a CPU tensor's raw bytes (bf16 included: hashed as uint8)."""
    return hashlib.sha256(tensor.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)  # torch.save wants a suffix
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class ShardedEmbeddingCache:
    """One (model, corpus, dtype, shard size) cache directory (see the module docstring)."""

    def __init__(
        self,
        cache_dir: str | os.PathLike,
        model_id: str,
        probe: torch.Tensor,
        doc_ids: Sequence[str],
        texts: Sequence[str],
        dtype: torch.dtype | str = torch.float32,
        unit_rows: int = 1024,
    ) -> None:
        self.dtype = parse_dtype(dtype)
        self.probe = probe.detach().to("cpu", torch.float32)
        corpus_sha = corpus_hash(doc_ids, texts)
        model_sha = hashlib.sha256(model_id.encode("utf-8")).hexdigest()
        tag = DTYPE_TAGS[self.dtype]
        self.directory = Path(cache_dir) / f"corpus-{model_sha[:16]}-{corpus_sha[:16]}-{tag}-u{unit_rows}"
        self.fingerprint = hashlib.sha256(model_id.encode("utf-8") + tensor_sha256(self.probe).encode()).hexdigest()
        self.meta: dict[str, Any] = {
            "format": CACHE_FORMAT,
            "model": model_id,
            "fingerprint": self.fingerprint,
            "probe": self.probe.tolist(),
            "corpus_sha256": corpus_sha,
            "documents": len(doc_ids),
            "dtype": tag,
            "unit_rows": unit_rows,
        }

    # ------------------------------------------------------------------ meta
    def prepare(self, write: bool) -> None:
        """Check ``meta.json`` (``write``: create it when absent; one rank writes)."""
        path = self.directory / "meta.json"
        if write and not path.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(self.meta)))
            return
        if not path.exists():
            return
        try:
            stored = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise EmbeddingCacheError(f"{path}: unreadable cache metadata ({exc}); delete {self.directory}") from exc
        for key in ("format", "model", "corpus_sha256", "documents", "dtype", "unit_rows"):
            if not isinstance(stored, dict) or stored.get(key) != self.meta[key]:
                raise EmbeddingCacheError(f"{path}: {key} is {stored.get(key) if isinstance(stored, dict) else None!r}, expected {self.meta[key]!r}; delete {self.directory}")
        if stored.get("fingerprint") != self.fingerprint and not self._probe_matches(stored.get("probe")):
            raise EmbeddingCacheError(
                f"{self.directory} was written by another model under the name {self.meta['model']!r} "
                "(its probe embeddings differ); delete it or pass another model_name"
            )
        # A matching probe from another device: keep the stored fingerprint for the shards.
        self.fingerprint = stored["fingerprint"]

    def _probe_matches(self, stored: Any) -> bool:
        try:
            other = torch.tensor(stored, dtype=torch.float32)
        except (TypeError, ValueError):
            return False
        if other.shape != self.probe.shape:
            return False
        scale = float(self.probe.abs().max()) or 1.0
        return bool(torch.allclose(self.probe, other, rtol=PROBE_RTOL, atol=PROBE_RTOL * scale))

    # ---------------------------------------------------------------- shards
    def shard_path(self, unit: int) -> Path:
        return self.directory / f"shard-{unit:06d}.pt"

    def load(self, unit: int, doc_ids: Sequence[str], dim: int | None = None) -> torch.Tensor | None:
        """Shard ``unit``'s embeddings (storage dtype, CPU), None when not written yet."""
        path = self.shard_path(unit)
        if not path.exists():
            return None
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # truncated, garbled or not a torch file
            raise EmbeddingCacheError(f"{path}: unreadable cache shard ({type(exc).__name__}); delete it to re-encode") from exc
        problem = self._check(state, list(doc_ids), dim)
        if problem:
            raise EmbeddingCacheError(f"{path}: {problem}; delete it to re-encode")
        return state["embeddings"]

    def _check(self, state: Any, doc_ids: list[str], dim: int | None) -> str | None:
        if not isinstance(state, dict) or state.get("format") != CACHE_FORMAT:
            return "not a gpukit cache shard of this format"
        if state.get("fingerprint") != self.fingerprint:
            return "written by another model (fingerprint differs)"
        if state.get("ids") != doc_ids:
            return "its doc ids are not this unit's documents"
        emb = state.get("embeddings")
        if not isinstance(emb, torch.Tensor) or emb.dtype != self.dtype or emb.ndim != 2 or emb.shape[0] != len(doc_ids):
            return f"embeddings are not ({len(doc_ids)}, d) {DTYPE_TAGS[self.dtype]}"
        if dim is not None and emb.shape[1] != dim:
            return f"dimension {emb.shape[1]} differs from the other shards' {dim}"
        if state.get("sha256") != tensor_sha256(emb):
            return "checksum mismatch (the embeddings were modified)"
        return None

    def save(self, unit: int, doc_ids: Sequence[str], embeddings: torch.Tensor) -> torch.Tensor:
        """Write shard ``unit``; returns the stored (rounded) embeddings on the input's device."""
        stored = embeddings.detach().to("cpu", self.dtype).contiguous()
        state = {
            "format": CACHE_FORMAT,
            "fingerprint": self.fingerprint,
            "ids": list(doc_ids),
            "embeddings": stored,
            "sha256": tensor_sha256(stored),
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.shard_path(unit), lambda tmp: torch.save(state, tmp))
        return stored.to(embeddings.device)


def encode_units(
    encode: Callable[[list[str]], torch.Tensor],
    deal: Any,
    rank: int,
    doc_ids: Sequence[str],
    texts: Sequence[str],
    cache: ShardedEmbeddingCache | None,
    agree: Callable[[int], int],
    progress: Any = None,
) -> tuple[list[int], list[torch.Tensor], bool]:
    """Rank ``rank``'s units of ``deal``: (rows, float32 embeddings per unit, whether any was encoded).

    Cached shards are read first; a bad one on any rank fails every rank
    (``agree`` max-reduces a flag) before anyone encodes, so no rank waits
    forever in a collective for one that raised. Missing units are encoded
    (``encode``) and written at once, so a restart resumes after them.
    """
    units = deal.unit_ids(rank)
    found: dict[int, torch.Tensor] = {}
    failure: EmbeddingCacheError | None = None
    if cache is not None:
        dim = None
        for u in units:
            try:
                emb = cache.load(u, [doc_ids[i] for i in deal.units[u]], dim)
            except EmbeddingCacheError as exc:
                failure = exc
                break
            if emb is not None:
                found[u], dim = emb, emb.shape[1]
    if agree(1 if failure else 0):
        raise failure or EmbeddingCacheError(f"another rank found an unusable shard in {cache.directory if cache else 'the cache'}")
    rows: list[int] = []
    parts: list[torch.Tensor] = []
    for u in units:
        unit_rows = deal.units[u]
        emb = found.get(u)
        if emb is None:
            emb = encode([texts[i] for i in unit_rows])
            if cache is not None:
                emb = cache.save(u, [doc_ids[i] for i in unit_rows], emb)
        rows.extend(unit_rows)
        parts.append(emb.float())
        if progress is not None:
            progress.update(len(unit_rows))
    return rows, parts, len(found) < len(units)
