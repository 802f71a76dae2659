"""Shared input handling for the statistics kernels.

Every kernel in :mod:`gpukit.stats` works on *paired* per-query scores:
``a`` and ``b`` hold the same metric for two systems over the same queries,
so only the differences ``d = a - b`` matter. Inputs are ``(Q,)`` or
``(S, Q)`` (``S`` comparisons batched into one call); ``b`` may be ``(Q,)``
and is then shared by every row of ``a`` (one baseline, many systems).
"""
from __future__ import annotations

import numbers
from types import ModuleType
from typing import Any

import torch

from gpukit.errors import StatsError  # re-exported: imported from here by the stats modules

ArrayLike = Any  # torch.Tensor, numpy array or nested sequence of floats

#: Most resamples one test may draw (1000x the default): the bootstrap keeps
#: one float64 per resample and system, 80 MB per system at this bound, and
#: time grows linearly.
MAX_RESAMPLES = 10**7
#: ``torch.Generator.manual_seed`` accepts exactly this range.
SEED_RANGE = (-(2**63), 2**64 - 1)


def _integer_in(value: int, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise StatsError(f"{name} must be an integer between {low:,} and {high:,}, got {value!r}")
    return int(value)


def check_resamples(n_resamples: int) -> int:
    """``n_resamples`` if it is an integer in ``[1, MAX_RESAMPLES]``, else a StatsError."""
    return _integer_in(n_resamples, "n_resamples", 1, MAX_RESAMPLES)


def check_seed(seed: int) -> int:
    """``seed`` if ``torch.Generator.manual_seed`` accepts it, else a StatsError."""
    return _integer_in(seed, "seed", *SEED_RANGE)


def as_float64(x: ArrayLike) -> torch.Tensor:
    """``x`` as a float64 tensor (kept on its device when already a tensor)."""
    if isinstance(x, torch.Tensor):
        return x.to(torch.float64)
    # dtype given up front: torch would read a list of Python floats as float32.
    return torch.as_tensor(x, dtype=torch.float64)


def paired_differences(a: ArrayLike, b: ArrayLike, *, min_queries: int = 1) -> torch.Tensor:
    """Return ``a - b`` as a float64 ``(S, Q)`` tensor, validating shapes.

    Args:
        a: ``(Q,)`` or ``(S, Q)`` scores of the compared system(s).
        b: ``(Q,)`` or ``(S, Q)`` scores of the reference system(s).
        min_queries: smallest acceptable ``Q``.

    Raises:
        StatsError: on shape mismatch, NaN/inf entries or too few queries.
            NaN usually means an omitted query; callers must drop omitted
            queries (the same for both systems) before testing.
    """
    ta, tb = as_float64(a), as_float64(b)
    if ta.ndim not in (1, 2) or tb.ndim not in (1, 2):
        raise StatsError(f"scores must be (Q,) or (S, Q); got {tuple(ta.shape)} and {tuple(tb.shape)}")
    if tb.device != ta.device:
        tb = tb.to(ta.device)
    if ta.shape[-1] != tb.shape[-1]:
        raise StatsError(f"paired scores need the same number of queries; got {ta.shape[-1]} and {tb.shape[-1]}")
    if ta.ndim == 2 and tb.ndim == 2 and ta.shape[0] != tb.shape[0]:
        raise StatsError(f"(S, Q) inputs disagree on S: {ta.shape[0]} vs {tb.shape[0]}")
    d = ta - tb
    if d.ndim == 1:
        d = d.unsqueeze(0)
    if d.shape[-1] < min_queries:
        raise StatsError(f"need at least {min_queries} paired queries, got {d.shape[-1]}")
    if not bool(torch.isfinite(d).all()):
        raise StatsError("scores contain NaN or infinite values; drop omitted queries before testing")
    return d


def squeeze_like(t: torch.Tensor, a: ArrayLike, b: ArrayLike) -> torch.Tensor:
    """Drop the batch dimension when both inputs were 1-D (a single comparison)."""
    one_d = _ndim(a) == 1 and _ndim(b) == 1
    return t.squeeze(0) if one_d else t


def _ndim(x: ArrayLike) -> int:
    return x.ndim if hasattr(x, "ndim") else as_float64(x).ndim


def scipy_special() -> ModuleType:
    """Import :mod:`scipy.special` lazily (optional extra ``gpukit[stats]``)."""
    try:
        import scipy.special as special
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StatsError(
            "this test needs scipy for its distribution function; install gpukit[stats]"
        ) from exc
    return special


def t_statistic(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Row-wise ``(mean, sd, t)`` of ``x`` (``(S, n)``, n >= 2) against 0.

    ``sd`` uses ddof = 1 and the two-pass formula numpy uses, and
    ``t = mean / (sd / sqrt(n))``; 0/0 gives NaN and x/0 gives +-inf.
    """
    n = x.shape[-1]
    mean = x.mean(dim=-1)
    sd = torch.sqrt(((x - mean.unsqueeze(-1)) ** 2).sum(dim=-1) / (n - 1))
    return mean, sd, mean / (sd / n**0.5)
