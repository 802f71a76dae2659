"""Judgments and runs: data containers and their readers."""
from gpukit.data.qrels import Qrels
from gpukit.data.run import Run
from gpukit.data.trec_files import read_trec_files

__all__ = ["Qrels", "Run", "read_trec_files"]
