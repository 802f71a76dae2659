"""The search-index interface and the input rules every index shares.

Conventions (all indexes):

* ``search(queries, k)`` returns ``(scores, indices)``: ``scores`` is a
  float32 ``(Q, k)`` tensor where **larger is better** for every metric (for
  L2 the score is the negative squared Euclidean distance), ``indices`` an
  int64 ``(Q, k)`` tensor of external ids (when ``add`` was given ids) or
  insertion positions. Both live on ``index.device``. An approximate index
  that finds fewer than ``k`` results pads with index ``-1`` / score ``-inf``.
* Device honesty: inputs are converted without copying (``torch.from_dlpack``
  for DLPack producers such as CuPy, ``torch.as_tensor`` for NumPy) and must
  then already be on ``index.device``; a mismatch raises
  :class:`~gpukit.errors.DeviceError` instead of copying silently. So NumPy
  arrays are accepted by CPU indexes, CuPy arrays by CUDA indexes.
* ``k`` must satisfy ``1 <= k <= ntotal``; anything else raises
  :class:`IndexUsageError` (no silent clamping).
"""
from __future__ import annotations

import abc
import os
import warnings
from typing import Any, ClassVar, Sequence

import numpy as np
import torch

from gpukit.device import DeviceLike
# IndexUsageError is defined in gpukit.errors and still importable from here.
from gpukit.errors import DeviceError, IndexFileError, IndexUsageError

METRICS: tuple[str, ...] = ("ip", "cosine", "l2")
# Bumped when the layout of saved files changes incompatibly.
SAVE_FORMAT_VERSION = 1


def check_metric(metric: str, allowed: Sequence[str] = METRICS) -> str:
    if metric not in allowed:
        raise IndexUsageError(f"unknown metric {metric!r}; expected one of {', '.join(allowed)}")
    return metric


def as_device_tensor(data: Any, device: torch.device, name: str) -> torch.Tensor:
    """View ``data`` as a tensor without copying and require it on ``device``.

    Accepts torch tensors, DLPack producers (CuPy, JAX, ...) and anything
    ``torch.as_tensor`` understands (NumPy arrays, nested lists). A tensor on
    another device raises :class:`DeviceError` naming the fix.
    """
    if isinstance(data, torch.Tensor):
        tensor = data
    elif hasattr(data, "__dlpack__") and not isinstance(data, np.ndarray):
        tensor = torch.from_dlpack(data)
    else:
        with warnings.catch_warnings():
            # Read-only NumPy arrays (np.load mmap) trigger a warning about
            # writes; gpukit never writes into caller arrays.
            warnings.simplefilter("ignore", UserWarning)
            tensor = torch.as_tensor(data)
    if tensor.device != device:
        raise DeviceError(
            f"{name} is on {tensor.device} but the index is on {device}; "
            f"call .to(index.device) (i.e. .to('{device}')) on {name} first"
        )
    return tensor


def as_matrix(data: Any, dim: int, device: torch.device, name: str) -> torch.Tensor:
    """Validate a ``(n, dim)`` floating-point matrix of finite values on ``device``."""
    tensor = as_device_tensor(data, device, name)
    if tensor.ndim != 2 or tensor.shape[1] != dim:
        raise IndexUsageError(f"{name} must have shape (n, {dim}); got {tuple(tensor.shape)}")
    if not tensor.is_floating_point():
        raise IndexUsageError(f"{name} must be floating point; got {tensor.dtype}")
    check_finite(tensor, name, IndexUsageError)
    return tensor


def check_finite(tensor: torch.Tensor, name: str, error: type[IndexUsageError]) -> None:
    """Raise ``error`` naming the first row holding NaN or infinity.

    Such a vector scores NaN or inf, and top-k would rank it first (NaN
    compares as the largest value in ``torch.topk``).
    """
    if tensor.device.type == "meta":
        return  # shapes only, no values (tracing the device path)
    if tensor.numel() and bool(torch.isfinite(tensor.sum())):
        return  # one pass, no temporary: a NaN or inf term makes the sum NaN or inf (an overflow falls through)
    bad = ~torch.isfinite(tensor)
    if bool(bad.any()):  # one device sync; the row lookup runs only on error
        row = int(torch.nonzero(bad.any(dim=1))[0])
        raise error(f"{name} row {row} (from 0) holds NaN or infinity")


def state_tensor(
    state: dict[str, Any], key: str, shape: tuple[int, ...], dtypes: Sequence[torch.dtype]
) -> torch.Tensor:
    """``state[key]`` if it is a tensor of ``shape`` (-1: any size) and one of ``dtypes``."""
    value = state.get(key)
    if not isinstance(value, torch.Tensor):
        raise IndexFileError(f"{key} is {type(value).__name__}, not a tensor")
    fits = value.ndim == len(shape) and all(want in (-1, got) for want, got in zip(shape, value.shape))
    if not fits or value.dtype not in dtypes:
        wanted = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
        raise IndexFileError(f"{key} is {value.dtype} {tuple(value.shape)}; expected {wanted} of shape {shape}")
    return value


def check_k(k: int, ntotal: int) -> int:
    """Return ``k`` if ``1 <= k <= ntotal``; otherwise raise IndexUsageError."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise IndexUsageError(f"k must be an int; got {type(k).__name__}")
    if ntotal == 0:
        raise IndexUsageError("the index is empty; call add() before search()")
    if not 1 <= k <= ntotal:
        raise IndexUsageError(f"k must be between 1 and the index size {ntotal}; got {k}")
    return int(k)


class SearchIndex(abc.ABC):
    """Abstract base: ``add`` / ``search`` / ``memory_bytes`` / ``save`` / ``load``.

    Subclasses implement the vector storage and the positional search
    (``_add_vectors``, ``_search_positions``) plus (de)serialisation of their
    own state; this class owns external-id bookkeeping and the file format.
    """

    # Subclass name -> class, so SearchIndex.load can dispatch on file contents.
    _registry: ClassVar[dict[str, type["SearchIndex"]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        SearchIndex._registry[cls.__name__] = cls

    def __init__(self, dim: int, metric: str, device: torch.device) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise IndexUsageError(f"dim must be a positive int; got {dim!r}")
        self.dim = dim
        self.metric = metric
        self.device = device
        # External int64 ids aligned with insertion positions, or None when
        # the index reports positions.
        self._external_ids: torch.Tensor | None = None

    # ----------------------------------------------------------- interface
    @property
    @abc.abstractmethod
    def ntotal(self) -> int:
        """Number of stored vectors."""

    @abc.abstractmethod
    def memory_bytes(self) -> int:
        """Bytes held by the index's stored data (vectors, norms, ids)."""

    @abc.abstractmethod
    def _add_vectors(self, embeddings: torch.Tensor) -> None:
        """Store validated ``(n, dim)`` embeddings (already on ``self.device``)."""

    @abc.abstractmethod
    def _state(self) -> dict[str, Any]:
        """Constructor arguments and stored data, as CPU tensors / plain values."""

    @classmethod
    @abc.abstractmethod
    def _from_state(cls, state: dict[str, Any], device: DeviceLike) -> "SearchIndex":
        """Rebuild an index from :meth:`_state` output on ``device``."""

    # -------------------------------------------------------------- public
    def add(self, embeddings: Any, ids: Any = None) -> None:
        """Append ``(n, dim)`` embeddings, optionally with int64 external ids.

        Either every ``add`` passes ``ids`` or none does; searches then return
        the external ids instead of insertion positions.
        """
        vectors = as_matrix(embeddings, self.dim, self.device, "embeddings")
        new_ids = self._validate_ids(ids, vectors.shape[0])
        self._add_vectors(vectors)
        if new_ids is not None:
            self._external_ids = (
                new_ids if self._external_ids is None else torch.cat([self._external_ids, new_ids])
            )

    def queries_tensor(self, queries: Any) -> torch.Tensor:
        """Validated ``(Q, dim)`` query tensor on ``self.device`` (no copy)."""
        return as_matrix(queries, self.dim, self.device, "queries")

    def positions_to_ids(self, positions: torch.Tensor) -> torch.Tensor:
        """Map insertion positions to external ids; ``-1`` padding stays ``-1``."""
        if self._external_ids is None:
            return positions
        looked_up = self._external_ids[positions.clamp(min=0)]
        return torch.where(positions >= 0, looked_up, positions)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to one file (``torch.save`` of plain tensors/values)."""
        state = self._state()
        state.update(
            kind=type(self).__name__,
            format_version=SAVE_FORMAT_VERSION,
            dim=self.dim,
            metric=self.metric,
            device=str(self.device),
            external_ids=None if self._external_ids is None else self._external_ids.cpu(),
        )
        torch.save(state, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: DeviceLike = None) -> "SearchIndex":
        """Read a file written by :meth:`save`.

        ``device=None`` restores the device recorded at save time (a
        DeviceError if it is unavailable here); pass ``"cpu"`` etc. to move.
        ``SearchIndex.load`` dispatches on the stored kind; a subclass's
        ``load`` insists on its own kind.

        The file is checked before use: unreadable, truncated or corrupt
        files, and states whose fields disagree (shapes, dtypes, ids, norms),
        are an :class:`IndexFileError` naming the file.
        """
        try:
            # weights_only: the unpickler builds only tensors and plain
            # containers, so loading a file can never run code from it.
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch reports damaged files with many exception types
            reason = str(exc).split("\n", 1)[0]
            raise IndexFileError(f"{path}: not a readable index file ({type(exc).__name__}: {reason})") from exc
        kind = state.get("kind") if isinstance(state, dict) else None
        if kind not in SearchIndex._registry or state.get("format_version") != SAVE_FORMAT_VERSION:
            raise IndexFileError(f"{path}: not a gpukit index file (format {SAVE_FORMAT_VERSION})")
        target = SearchIndex._registry[kind]
        if not issubclass(target, cls):
            raise IndexFileError(f"{path}: holds a {kind}, not a {cls.__name__}")
        try:
            dim, external = state.get("dim"), state.get("external_ids")
            if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
                raise IndexFileError(f"dim is {dim!r}, not a positive int")
            check_metric(state.get("metric"))
            if not isinstance(state.get("device"), str):
                raise IndexFileError(f"device is {state.get('device')!r}, not a device name")
            index = target._from_state(state, state["device"] if device is None else device)
            if external is not None:
                external = state_tensor(state, "external_ids", (index.ntotal,), (torch.int64,))
                index._external_ids = external.to(index.device)
        except IndexUsageError as exc:  # includes the constructors' checks of tampered settings
            raise IndexFileError(f"{path}: inconsistent index file: {exc}") from exc
        return index

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, metric={self.metric!r}, "
            f"ntotal={self.ntotal}, device={self.device})"
        )

    # ------------------------------------------------------------- helpers
    def _validate_ids(self, ids: Any, count: int) -> torch.Tensor | None:
        if ids is None:
            if self._external_ids is not None:
                raise IndexUsageError("this index holds external ids; pass ids to every add()")
            return None
        if self.ntotal > 0 and self._external_ids is None:
            raise IndexUsageError("this index was filled without ids; ids cannot start midway")
        if isinstance(ids, (list, tuple, range)):
            # Plain Python sequences have no device, so placing them is no copy
            # of user device data.
            ids = torch.as_tensor(list(ids), dtype=torch.int64, device=self.device)
        tensor = as_device_tensor(ids, self.device, "ids")
        if tensor.ndim != 1 or tensor.shape[0] != count:
            raise IndexUsageError(f"ids must have shape ({count},); got {tuple(tensor.shape)}")
        if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
            raise IndexUsageError(f"ids must be integers; got {tensor.dtype}")
        return tensor.to(torch.int64)
