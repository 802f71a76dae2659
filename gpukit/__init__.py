"""gpukit: retrieval evaluation at GPU speed.

Batched ranking metrics in PyTorch (CPU and CUDA, same code), next to exact
and FAISS search, with reports that state their conventions.
"""
from gpukit import datasets
from gpukit.conventions import Convention, get_convention
from gpukit.data import Qrels, Run
from gpukit.evaluation import evaluate
from gpukit.measures import Measure, parse_measure, parse_measures
from gpukit.prefs_evaluation import evaluate_judgment_groups, evaluate_prefs  # noqa: F401  (exported)
from gpukit.pipelines import RetrievalEvaluator, evaluate_embeddings, sharded_search
from gpukit.report import MeasureResult, Report
from gpukit.stats import ComparisonTable, compare

__version__ = "0.1.0"

__all__ = [
    "ComparisonTable",
    "Convention",
    "Measure",
    "MeasureResult",
    "Qrels",
    "Report",
    "RetrievalEvaluator",
    "Run",
    "compare",
    "datasets",
    "evaluate",
    "evaluate_embeddings",
    "get_convention",
    "parse_measure",
    "parse_measures",
    "sharded_search",
]
