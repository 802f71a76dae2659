"""gpukit.io.ir_datasets: an ir_datasets dataset's qrels_iter / scoreddocs_iter as Qrels / Run.

The datasets are built by ir_datasets itself over the bundled fixture files
(``ir_datasets.create_dataset`` and ``TrecScoredDocs`` on a ``LocalDownload``:
nothing is downloaded); the expected values are ir_datasets' own records.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import TESTS

import gpukit
from gpukit.errors import InputFormatError, UsageError
from gpukit.io.ir_datasets import load_qrels, load_run

ir_datasets = pytest.importorskip("ir_datasets")

DATA = TESTS / "data"
CASES = [(DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "results.test"),
         (DATA / "cacm" / "qrels.cacm.txt", DATA / "cacm" / "run.cacm-bm25.anserini.txt")]


def _scoreddocs_dataset(path: Path):
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecScoredDocs
    from ir_datasets.util import LocalDownload

    return Dataset(TrecScoredDocs(LocalDownload(str(path))))


@pytest.mark.parametrize(("qrels_path", "run_path"), CASES, ids=lambda p: p.name)
def test_loaded_qrels_and_run_are_ir_datasets_records(qrels_path, run_path):
    dataset = ir_datasets.create_dataset(qrels_trec=str(qrels_path))
    expected_qrels: dict[str, dict[str, int]] = {}
    for q in dataset.qrels_iter():
        expected_qrels.setdefault(q.query_id, {})[q.doc_id] = q.relevance
    qrels = load_qrels(dataset)
    assert qrels.to_dict() == expected_qrels
    scored = _scoreddocs_dataset(run_path)
    expected_run: dict[str, dict[str, float]] = {}
    for s in scored.scoreddocs_iter():
        expected_run.setdefault(s.query_id, {})[s.doc_id] = s.score
    run = load_run(scored, name="loaded")
    assert run.name == "loaded" and run.to_dict() == expected_run
    # Records given directly (an iterable of ScoredDoc) read the same.
    assert load_run(list(scored.scoreddocs_iter())).to_dict() == expected_run
    # And both evaluate as the files they came from.
    direct = gpukit.evaluate(gpukit.Qrels.from_trec(qrels_path), gpukit.Run.from_trec(run_path), ["AP", "nDCG@10"])
    loaded = gpukit.evaluate(qrels, run, ["AP", "nDCG@10"])
    for name in ("AP", "nDCG@10"):
        assert loaded[name].per_query.tolist() == direct[name].per_query.tolist()


def test_a_dataset_without_qrels_or_scoreddocs_is_a_usage_error():
    only_qrels = ir_datasets.create_dataset(qrels_trec=str(CASES[0][0]))
    with pytest.raises(UsageError, match="no scoreddocs"):
        load_run(only_qrels)
    with pytest.raises(UsageError, match="no qrels"):
        load_qrels(_scoreddocs_dataset(CASES[0][1]))


def test_empty_records_and_duplicates_are_input_errors():
    from ir_datasets.formats import GenericScoredDoc

    with pytest.raises(InputFormatError, match="empty run"):
        load_run([])
    twice = [GenericScoredDoc("q", "d", 1.0), GenericScoredDoc("q", "d", 2.0)]
    with pytest.raises(InputFormatError, match="twice"):
        load_run(twice)
    assert load_run(twice, dedup="max").to_dict() == {"q": {"d": 2.0}}
