"""End-to-end pipelines: embedding-model evaluation, streaming and distributed evaluation."""
from gpukit.pipelines.distributed import sharded_search
from gpukit.pipelines.embeddings import EmbeddingEvaluation, evaluate_embeddings
from gpukit.pipelines.streaming import RetrievalEvaluator, StreamingReport

__all__ = [
    "EmbeddingEvaluation",
    "RetrievalEvaluator",
    "StreamingReport",
    "evaluate_embeddings",
    "sharded_search",
]
