"""Score normalisation of a run's rows before fusion, as batched tensor ops.

Each function takes one run's rows as (R, K) float64 ``scores`` (or several
runs' of one depth, (R, N, K): everything is per row of the last dimension) with a
``valid`` mask (documents; padding is False, always at a row's end, rows in
ranking order: score descending, ties by doc id descending) and returns the
normalised (R, K) values, 0 on padding. Per row, over its n documents
(ranx's definitions, with its floor of 1e-9 on every denominator):

* ``min-max``: (s - min) / max(max - min, 1e-9)
* ``min-max-inverted``: (max - s) / max(max - min, 1e-9); the row is then
  re-ranked by the new value (see :func:`inverted_order`)
* ``max``: s / max(max, 1e-9)
* ``sum``: (s - min) / max(sum - n * min, 1e-9)
* ``zmuv`` (z-score): (s - mean) / max(std, 1e-9), population std
* ``rank``: 1 - i / n, i the 0-based rank
* ``borda``: 1 - i / n_c for a ranked document, and every other candidate
  (a document some other run ranks for the query; n_c of them in all) gets
  0.5 - (n - 1) / (2 n_c): it needs the candidates, so it is applied during
  fusion (:mod:`gpukit.fusion.combine`), not here.

Every normalisation but ``min-max-inverted`` keeps the row's order, so a
document's rank after it is its rank in the run.
"""
from __future__ import annotations

import torch

from gpukit.errors import UsageError

#: Floor of every denominator (ranx's), so that a row of equal scores maps to 0.
FLOOR = 1e-9

#: Normalisation names (``None``: the scores as they are).
NORMS: tuple[str, ...] = ("min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda")

_ALIASES = {
    "min_max": "min-max",
    "minmax": "min-max",
    "min_max_inverted": "min-max-inverted",
    "min-max-inv": "min-max-inverted",
    "z-score": "zmuv",
    "zscore": "zmuv",
    "z_score": "zmuv",
    "none": None,
}


def norm_name(norm: str | None) -> str | None:
    """The canonical name of ``norm`` (aliases such as ``min_max`` or
    ``z-score`` accepted); an unknown name is a one-line error."""
    if norm is None:
        return None
    if not isinstance(norm, str):
        raise UsageError(f"norm must be a name or None, got {type(norm).__name__}")
    key = norm.strip().lower()
    key = _ALIASES.get(key, key)
    if key is not None and key not in NORMS:
        raise UsageError(f"unknown normalisation {norm!r}; choose one of {', '.join(NORMS)} or None")
    return key


def _masked_max(scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    return scores.masked_fill(~valid, -torch.inf).amax(-1, keepdim=True)


def _masked_min(scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    return scores.masked_fill(~valid, torch.inf).amin(-1, keepdim=True)


def normalise(scores: torch.Tensor, valid: torch.Tensor, norm: str | None) -> torch.Tensor:
    """``scores`` normalised per row (see the module docstring); ``norm`` is
    canonical (:func:`norm_name`) and not ``"borda"``. Padding gives 0."""
    if norm is None:
        return scores.masked_fill(~valid, 0.0)
    if norm == "rank":
        n = valid.sum(-1, keepdim=True).clamp(min=1).to(scores.dtype)
        rank = torch.arange(scores.shape[-1], device=scores.device, dtype=scores.dtype)
        return (1.0 - rank / n).masked_fill_(~valid, 0.0)
    if norm in ("min-max", "min-max-inverted"):
        hi, lo = _masked_max(scores, valid), _masked_min(scores, valid)
        denominator = (hi - lo).clamp(min=FLOOR)
        out = (hi - scores) / denominator if norm == "min-max-inverted" else (scores - lo) / denominator
    elif norm == "max":
        out = scores / _masked_max(scores, valid).clamp(min=FLOOR)
    elif norm == "sum":
        lo = _masked_min(scores, valid)
        n = valid.sum(-1, keepdim=True).to(scores.dtype)
        total = scores.masked_fill(~valid, 0.0).sum(-1, keepdim=True)
        out = (scores - lo) / (total - lo * n).clamp(min=FLOOR)
    elif norm == "zmuv":
        n = valid.sum(-1, keepdim=True).clamp(min=1).to(scores.dtype)
        mean = scores.masked_fill(~valid, 0.0).sum(-1, keepdim=True) / n
        centred = (scores - mean).masked_fill_(~valid, 0.0)
        std = torch.sqrt((centred * centred).sum(-1, keepdim=True) / n)
        out = centred / std.clamp(min=FLOOR)
    else:  # pragma: no cover - norm_name admits nothing else
        raise UsageError(f"normalisation {norm!r} is applied during fusion")
    # Rows without documents give inf - inf above; padding is 0 whatever it was.
    return out.masked_fill_(~valid, 0.0)


def inverted_order(values: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """(R, K) permutation that ranks rows by ``min-max-inverted`` values:
    value descending (the original scores ascending); tied documents keep
    the run's order among them (doc id descending), padding last. One
    stable sort of a row already in ranking order."""
    return torch.sort(values.masked_fill(~valid, -torch.inf), dim=-1, descending=True, stable=True).indices
