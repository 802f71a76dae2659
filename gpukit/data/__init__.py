"""Judgments and runs: data containers and their readers."""
from gpukit.data.qrels import Qrels
from gpukit.data.run import Run

__all__ = ["Qrels", "Run"]
