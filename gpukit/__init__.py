"""gpukit: retrieval evaluation at GPU speed.

Batched ranking metrics in PyTorch (CPU and CUDA, same code), next to exact
and FAISS search, with reports that state their conventions.

The names below are imported on first use (PEP 562 module ``__getattr__``):
``import gpukit`` costs almost nothing, and ``gpukit eval`` never loads the
statistics, pipelines or dataset modules it does not use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gpukit.lazy_names import lazy_names

__version__ = "0.1.0"

#: Public name -> the module that defines it (a name equal to its module's last part is the module itself).
_LAZY: dict[str, str] = {
    "ComparisonTable": "gpukit.stats",
    "Convention": "gpukit.conventions",
    "Measure": "gpukit.measures",
    "MeasureResult": "gpukit.report",
    "JudgmentGroups": "gpukit.judgments",
    "Prefs": "gpukit.judgments",
    "Qrels": "gpukit.judgments",
    "SubtopicQrels": "gpukit.judgments",
    "Report": "gpukit.report",
    "RetrievalEvaluator": "gpukit.pipelines",
    "Run": "gpukit.data",
    "compare": "gpukit.stats",
    "datasets": "gpukit.datasets",
    "evaluate": "gpukit.evaluation",
    "evaluate_embeddings": "gpukit.pipelines",
    "fuse": "gpukit.fusion",
    "get_convention": "gpukit.conventions",
    "optimize_fusion": "gpukit.fusion",
    "pairwise": "gpukit.pairwise",
    "parse_measure": "gpukit.measures",
    "parse_measures": "gpukit.measures",
    "pool": "gpukit.pooling",
    "coverage": "gpukit.pooling",
    "Pool": "gpukit.pooling",
    "qrels_diff": "gpukit.qrels_diff",
    "read_trec_files": "gpukit.data",
    "sharded_search": "gpukit.pipelines",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


if TYPE_CHECKING:  # static checkers and IDEs see the eager imports
    from gpukit import datasets, pairwise, qrels_diff
    from gpukit.conventions import Convention, get_convention
    from gpukit.data import Run, read_trec_files
    from gpukit.judgments import JudgmentGroups, Prefs, Qrels, SubtopicQrels
    from gpukit.evaluation import evaluate
    from gpukit.fusion import fuse, optimize_fusion
    from gpukit.measures import Measure, parse_measure, parse_measures
    from gpukit.pooling import Pool, coverage, pool
    from gpukit.pipelines import RetrievalEvaluator, evaluate_embeddings, sharded_search
    from gpukit.report import MeasureResult, Report
    from gpukit.stats import ComparisonTable, compare
