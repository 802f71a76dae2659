"""FAISS indexes behind the gpukit interface, with torch tensors in and out.

``spec`` is any ``faiss.index_factory`` string (``"Flat"``, ``"IVF1024,Flat"``,
``"IVF4096,PQ64"``, ``"HNSW32"``, ...). Metrics map to FAISS as
``ip -> METRIC_INNER_PRODUCT``, ``cosine -> inner product on L2-normalised
vectors`` and ``l2 -> METRIC_L2``; L2 scores are returned negated
(``-|q - x|^2``) so larger is better, like :class:`~gpukit.index.ExactIndex`.

The index lives on the GPU when ``device`` is CUDA and faiss has GPU support
(``faiss.StandardGpuResources``); CUDA without it is a DeviceError, and
``device="auto"`` picks CUDA only when both torch and faiss can use it.
``faiss.contrib.torch_utils`` lets faiss read and write torch tensors
directly (CPU tensors for CPU indexes, CUDA tensors for GPU indexes).
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import DeviceError, IndexFileError
from gpukit.index.base import (
    IndexUsageError,
    SearchIndex,
    as_matrix,
    check_k,
    check_metric,
    state_tensor,
)

try:
    import faiss
    import faiss.contrib.torch_utils  # noqa: F401  (patches faiss.Index methods for torch tensors)
except ImportError:  # pragma: no cover - exercised only without faiss installed
    faiss = None


#: Largest k and nprobe a faiss GPU index accepts: faiss-gpu selects the top k
#: (and the nprobe nearest lists) with k-selection kernels bounded by
#: GPU_MAX_SELECTION_K = 2048 (faiss/gpu/utils/DeviceDefs.cuh); beyond it
#: faiss aborts the search with an assertion deep inside the call.
GPU_MAX_SELECTION = 2048


def check_gpu_search_limits(on_gpu: bool, k: int, nprobe: int | None) -> None:
    """Refuse, before faiss is called, a ``k`` or ``nprobe`` above faiss-gpu's limit.

    ``on_gpu`` says whether the index lives on the GPU; CPU indexes have no
    such limit and pass unchecked.
    """
    if not on_gpu:
        return
    for name, value in (("k", k), ("nprobe", nprobe)):
        # Non-integers are left to the parameter checks that follow.
        if isinstance(value, int) and value > GPU_MAX_SELECTION:
            raise IndexUsageError(
                f"{name} = {value} exceeds faiss-gpu's limit of {GPU_MAX_SELECTION} on GPU indexes; "
                f"use {name} <= {GPU_MAX_SELECTION}, or a CPU faiss index or ExactIndex for larger values"
            )


def faiss_has_gpu() -> bool:
    """True when the installed faiss was built with GPU support."""
    return faiss is not None and hasattr(faiss, "StandardGpuResources")


def faiss_device(device: DeviceLike) -> torch.device:
    """Resolve ``device`` for a FAISS index (see the module docstring)."""
    if device == "auto":  # CUDA only where this faiss build can use it
        use_gpu = torch.cuda.is_available() and faiss_has_gpu()
        return resolve_device("cuda" if use_gpu else "cpu")
    resolved = resolve_device(device)
    if resolved.type == "cuda" and not faiss_has_gpu():
        raise DeviceError(
            f"device {resolved} requested but the installed faiss has no GPU support "
            "(faiss.StandardGpuResources is missing); install faiss-gpu or use device='cpu'"
        )
    if resolved.type not in ("cpu", "cuda"):
        raise DeviceError(f"faiss indexes run on cpu or cuda, not {resolved}")
    return resolved


def _search_parameter_defaults(cpu_index: Any) -> dict[str, int | None]:
    """Current ``nprobe`` / ``efSearch`` of an index, None where not applicable."""
    ivf = faiss.try_extract_index_ivf(cpu_index)
    node = faiss.downcast_index(cpu_index)
    # Walk through wrappers (pre-transforms, refinement) to the HNSW graph.
    while not hasattr(node, "hnsw") and (hasattr(node, "index") or hasattr(node, "base_index")):
        node = faiss.downcast_index(getattr(node, "index", None) or node.base_index)
    return {
        "nprobe": None if ivf is None else int(ivf.nprobe),
        "efSearch": int(node.hnsw.efSearch) if hasattr(node, "hnsw") else None,
    }


class FaissIndex(SearchIndex):
    """A faiss index built from a factory ``spec`` (see the module docstring).

    IVF/PQ indexes need training: call :meth:`train`, or the first
    :meth:`add` trains on the vectors it is given.
    """

    def __init__(
        self, dim: int, spec: str = "Flat", metric: str = "ip", device: DeviceLike = "auto"
    ) -> None:
        if faiss is None:
            raise IndexUsageError("FaissIndex needs faiss: pip install 'gpukit[faiss]'")
        super().__init__(dim, check_metric(metric), faiss_device(device))
        self.spec = spec
        faiss_metric = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
        try:
            cpu_index = faiss.index_factory(dim, spec, faiss_metric)
        except RuntimeError as exc:
            raise IndexUsageError(f"invalid faiss index spec {spec!r}: {exc}") from exc
        self._install(cpu_index)

    def _install(self, cpu_index: Any) -> None:
        """Adopt ``cpu_index``, copying it to the GPU when the device is CUDA."""
        self._parameter_defaults = _search_parameter_defaults(cpu_index)
        if self.device.type != "cuda":
            self._index = cpu_index
            return
        self._gpu_resources = faiss.StandardGpuResources()
        try:
            self._index = faiss.index_cpu_to_gpu(self._gpu_resources, self.device.index, cpu_index)
        except RuntimeError as exc:
            raise DeviceError(f"faiss cannot run index {self.spec!r} on GPU: {exc}") from exc

    @property
    def on_gpu(self) -> bool:
        """True when the faiss index lives on the GPU (faiss-gpu's limits apply)."""
        return self.device.type == "cuda"

    def _cpu_index(self) -> Any:
        return faiss.index_gpu_to_cpu(self._index) if self.device.type == "cuda" else self._index

    def _prepare(self, vectors: torch.Tensor) -> torch.Tensor:
        """float32, contiguous, normalised for cosine: what faiss reads."""
        vectors = vectors.float()
        if self.metric == "cosine":
            vectors = F.normalize(vectors, dim=1)
        return vectors.contiguous()

    # ---------------------------------------------------------------- data
    @property
    def ntotal(self) -> int:
        return int(self._index.ntotal)

    @property
    def is_trained(self) -> bool:
        return bool(self._index.is_trained)

    def train(self, embeddings: Any) -> None:
        """Train the index (IVF centroids, PQ codebooks) on ``(n, dim)`` vectors."""
        self._train(self._prepare(as_matrix(embeddings, self.dim, self.device, "embeddings")))

    def _train(self, vectors: torch.Tensor) -> None:
        try:
            self._index.train(vectors)
        except RuntimeError as exc:
            raise IndexUsageError(f"faiss could not train {self.spec!r}: {exc}") from exc

    def _add_vectors(self, embeddings: torch.Tensor) -> None:
        vectors = self._prepare(embeddings)
        if not self.is_trained:
            self._train(vectors)
        self._index.add(vectors)

    def memory_bytes(self) -> int:
        """Size of the serialised faiss index plus external ids.

        The serialised form holds the codes, lists and graphs that dominate
        the in-memory footprint; computing it serialises the index (O(size)).
        """
        ids_bytes = 0 if self._external_ids is None else self._external_ids.numel() * 8
        return int(faiss.serialize_index(self._cpu_index()).size) + ids_bytes

    # -------------------------------------------------------------- search
    def search(
        self, queries: Any, k: int, nprobe: int | None = None, efSearch: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-``k`` ``(scores, indices)`` as float32 / int64 tensors on ``self.device``.

        ``nprobe`` (IVF) and ``efSearch`` (HNSW) apply to this call only; when
        omitted the index's defaults are used. Passing one the index does not
        have is an IndexUsageError. Missing results are index ``-1``, score ``-inf``.
        """
        query_vectors = self._prepare(self.queries_tensor(queries))
        k = check_k(k, self.ntotal)
        effective_nprobe = self._parameter_defaults["nprobe"] if nprobe is None else nprobe
        check_gpu_search_limits(self.on_gpu, k, effective_nprobe)
        self._set_search_parameters({"nprobe": nprobe, "efSearch": efSearch})
        try:
            distances, positions = self._index.search(query_vectors, k)
        except RuntimeError as exc:
            raise IndexUsageError(f"faiss search on {self.spec!r} failed: {exc}") from exc
        scores = -distances if self.metric == "l2" else distances
        scores = scores.masked_fill(positions < 0, float("-inf"))
        return scores, self.positions_to_ids(positions)

    def _set_search_parameters(self, requested: dict[str, int | None]) -> None:
        """Set every applicable parameter: the requested value or the default
        recorded at build time, so one call's setting never leaks into the next."""
        space = faiss.GpuParameterSpace() if self.device.type == "cuda" else faiss.ParameterSpace()
        for name, value in requested.items():
            default = self._parameter_defaults[name]
            if default is None:
                if value is not None:
                    raise IndexUsageError(f"{name} does not apply to faiss index {self.spec!r}")
                continue
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise IndexUsageError(f"{name} must be a positive int; got {value!r}")
            space.set_index_parameter(self._index, name, default if value is None else value)

    # ------------------------------------------------------- serialisation
    def _state(self) -> dict[str, Any]:
        serialized = faiss.serialize_index(self._cpu_index())
        return {"spec": self.spec, "faiss_index": torch.from_numpy(serialized.copy())}

    @classmethod
    def _from_state(cls, state: dict[str, Any], device: DeviceLike) -> "FaissIndex":
        """Rebuild after checking the serialised index against the settings.

        faiss >= 1.15.1 (the version gpukit requires) rejects truncated or
        corrupt HNSW/IVF data with an error instead of crashing; that error
        becomes an IndexFileError, as does a dimension or metric that differs
        from the stored settings.
        """
        if not isinstance(state.get("spec"), str):
            raise IndexFileError(f"spec is {state.get('spec')!r}, not a faiss factory string")
        blob = state_tensor(state, "faiss_index", (-1,), (torch.uint8,))
        index = cls(state["dim"], spec=state["spec"], metric=state["metric"], device=device)
        try:
            cpu_index = faiss.deserialize_index(blob.numpy())
        except RuntimeError as exc:
            raise IndexFileError(f"faiss cannot read the stored index: {str(exc).splitlines()[0]}") from exc
        want_metric = faiss.METRIC_L2 if state["metric"] == "l2" else faiss.METRIC_INNER_PRODUCT
        if cpu_index.d != state["dim"] or cpu_index.metric_type != want_metric:
            raise IndexFileError(
                f"the stored faiss index has dimension {cpu_index.d} and metric type {cpu_index.metric_type}; "
                f"the file's settings say dim={state['dim']}, metric={state['metric']!r}"
            )
        index._install(cpu_index)
        return index
