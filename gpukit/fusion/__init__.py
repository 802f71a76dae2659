"""Rank fusion and score normalisation on gpukit's padded (Q, K) runs.

``gpukit.fuse(runs, method=..., norm=..., weights=...)`` combines runs into
one :class:`~gpukit.Run` (ranx's methods and normalisations, as batched
tensor ops: CPU and CUDA, same code); ``gpukit.optimize_fusion`` picks the
weights (or a method's parameter) that maximise a measure on judged
queries, evaluating every candidate at once. See docs/fusion.md.
"""
from __future__ import annotations

from gpukit.fusion.fuse import fuse
from gpukit.fusion.methods import METHODS
from gpukit.fusion.normalise import NORMS
from gpukit.fusion.optimize import FusionOptimization, optimize_fusion

__all__ = ["METHODS", "NORMS", "FusionOptimization", "fuse", "optimize_fusion"]
