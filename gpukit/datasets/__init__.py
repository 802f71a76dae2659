"""Test collections: a BEIR reader and the bundled SciFact test split.

``gpukit.datasets.scifact_path()`` is the folder of BEIR SciFact (5,183
abstracts, 300 test queries, 339 judgments; Wadden et al. 2020, distributed
by BEIR under CC BY-NC 2.0, see ``data/scifact/LICENSE.md``), shipped inside
the package so that ``gpukit demo`` and the tests run offline.
"""
from __future__ import annotations

from pathlib import Path

from gpukit.datasets.beir import (
    BeirData,
    document_text,
    load_beir,
    read_beir_corpus,
    read_beir_qrels,
    read_beir_queries,
)

_DATA = Path(__file__).resolve().parent / "data"

#: File name of the bundled all-MiniLM-L6-v2 run on the SciFact test queries.
SCIFACT_RUN_NAME = "minilm-l6-v2.test.run.gz"


def scifact_path() -> Path:
    """Folder of the bundled BEIR SciFact collection (test split only)."""
    return _DATA / "scifact"


def scifact_run_path() -> Path:
    """The bundled TREC run of all-MiniLM-L6-v2 on SciFact test (top 100 per query).

    Made by ``bench/make_scifact_run.py``; ``gpukit demo`` evaluates it when
    the model cannot be loaded.
    """
    return scifact_path() / SCIFACT_RUN_NAME


def load_scifact(split: str = "test") -> BeirData:
    """``load_beir(scifact_path(), split)``."""
    return load_beir(scifact_path(), split)


__all__ = [
    "BeirData",
    "SCIFACT_RUN_NAME",
    "document_text",
    "load_beir",
    "load_scifact",
    "read_beir_corpus",
    "read_beir_qrels",
    "read_beir_queries",
    "scifact_path",
    "scifact_run_path",
]
