"""gpukit: retrieval evaluation at GPU speed.

Batched ranking metrics in PyTorch (CPU and CUDA, same code), next to exact
and FAISS search, with reports that state their conventions.
"""
from gpukit.conventions import Convention, get_convention
from gpukit.data import Qrels, Run
from gpukit.evaluation import evaluate
from gpukit.measures import Measure, parse_measure, parse_measures
from gpukit.report import MeasureResult, Report

__version__ = "0.1.0"

__all__ = [
    "Convention",
    "Measure",
    "MeasureResult",
    "Qrels",
    "Report",
    "Run",
    "evaluate",
    "get_convention",
    "parse_measure",
    "parse_measures",
]
