"""``Run.from_topk`` agrees with the TREC run file written from the same search output.

Index -1 is "no result" (FAISS padding). A query whose row is all -1 has no
line in the written file, so trec_eval never sees it: without -c it is not a
topic, with -c it scores as an empty ranking. The in-memory run must give
the same numbers as evaluating that file, under every convention.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gpukit.cli.search_cmd import write_trec_run
from gpukit.data.run import Run
from gpukit.errors import GpukitError, InputFormatError
from gpukit.evaluation import evaluate
from gpukit.judgments.qrels import Qrels

pytrec_eval = pytest.importorskip("pytrec_eval")

NINF = float("-inf")
DOC_IDS = [f"d{i}" for i in range(6)]
QUERY_IDS = ["q1", "q2", "q3", "q4"]
# q2 found nothing (all -1); q3 found two of three (FAISS pads with -1 / -inf).
SCORES = torch.tensor([[0.9, 0.8, 0.1], [NINF, NINF, NINF], [0.7, 0.6, NINF], [0.5, 0.4, 0.3]])
INDICES = torch.tensor([[0, 2, 4], [-1, -1, -1], [3, 1, -1], [5, 0, 1]])
QRELS = {
    "q1": {"d0": 1, "d4": 2, "d5": 1},
    "q2": {"d1": 1, "d3": 1},  # relevant documents exist, none retrieved
    "q3": {"d1": 2, "d2": 1},
    "q4": {"d0": 1},
}
MEASURES = {"P@2": "P_2", "AP": "map", "nDCG@3": "ndcg_cut_3", "RR": "recip_rank", "R@3": "recall_3"}


@pytest.fixture()
def written_run(tmp_path: Path) -> Path:
    path = tmp_path / "run.trec"
    write_trec_run(path, QUERY_IDS, DOC_IDS, SCORES, INDICES, "test")
    return path


def test_all_missing_row_has_no_line_in_the_file(written_run: Path) -> None:
    assert "q2" not in {line.split()[0] for line in written_run.read_text().splitlines()}


@pytest.mark.parametrize("convention", ["trec_eval", "gpukit"])
@pytest.mark.parametrize("complete", [None, True, False])
def test_from_topk_evaluates_like_the_file_it_writes(written_run: Path, convention: str, complete: bool | None) -> None:
    qrels = Qrels.from_dict(QRELS)
    in_memory = evaluate(qrels, Run.from_topk(SCORES, INDICES, QUERY_IDS, DOC_IDS), list(MEASURES),
                         convention=convention, complete=complete)
    from_file = evaluate(qrels, Run.from_trec(written_run), list(MEASURES), convention=convention, complete=complete)
    assert in_memory.query_ids == from_file.query_ids
    for name in MEASURES:
        assert in_memory[name].per_query.tolist() == from_file[name].per_query.tolist()
        assert in_memory[name].mean == from_file[name].mean


def test_trec_eval_convention_matches_pytrec_eval_on_the_written_file(written_run: Path) -> None:
    file_run = Run.from_trec(written_run).to_dict()
    evaluator = pytrec_eval.RelevanceEvaluator(QRELS, {"P.2", "map", "ndcg_cut.3", "recip_rank", "recall.3"})
    expected = evaluator.evaluate(file_run)
    assert set(expected) == {"q1", "q3", "q4"}  # trec_eval drops q2
    report = evaluate(Qrels.from_dict(QRELS), Run.from_topk(SCORES, INDICES, QUERY_IDS, DOC_IDS), list(MEASURES),
                      convention="trec_eval")
    for name, key in MEASURES.items():
        mean = sum(values[key] for values in expected.values()) / len(expected)
        assert report[name].mean == pytest.approx(mean, abs=1e-12)


def test_all_missing_row_is_not_a_run_query() -> None:
    run = Run.from_topk(SCORES, INDICES, QUERY_IDS, DOC_IDS)
    assert run.query_id_list() == ["q1", "q3", "q4"]
    assert run.to_dict()["q3"] == {"d3": pytest.approx(0.7), "d1": pytest.approx(0.6)}


@pytest.mark.parametrize("bad", [-2, -7, -(2**40)])
def test_index_below_minus_one_is_an_error(bad: int) -> None:
    indices = INDICES.clone()
    indices[0, 1] = bad
    with pytest.raises(InputFormatError, match=str(bad)) as info:
        Run.from_topk(SCORES, indices, QUERY_IDS, DOC_IDS)
    assert isinstance(info.value, GpukitError)


def test_no_result_in_any_row_is_an_error() -> None:
    with pytest.raises(InputFormatError, match="no result"):
        Run.from_topk(torch.full((2, 3), NINF), torch.full((2, 3), -1), ["a", "b"], DOC_IDS)
