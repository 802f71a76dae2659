"""RetrievalEvaluator never gives a silent wrong number: repeated queries,
mismatched evaluators across processes, out-of-range grades, NaN scores."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

import gpukit
from gpukit.errors import GpukitError
from gpukit.pipelines import RetrievalEvaluator


def _qrels_and_run():
    qrels = gpukit.Qrels.from_dict({"q1": {"a": 1, "b": 0, "c": 1}, "q2": {"x": 1}})
    first = gpukit.Run.from_dict({"q1": {"a": 3.0, "b": 2.0}})
    second = gpukit.Run.from_dict({"q1": {"c": 1.0}, "q2": {"x": 1.0}})
    return qrels, first, second


def test_a_query_split_across_update_run_calls_is_an_error():
    qrels, first, second = _qrels_and_run()
    ev = RetrievalEvaluator(["AP"])
    ev.update_run(first, qrels)
    with pytest.raises(GpukitError, match="q1"):
        ev.update_run(second, qrels)


def test_the_same_batch_fed_twice_is_an_error():
    qrels, first, _ = _qrels_and_run()
    ev = RetrievalEvaluator(["AP"])
    ev.update_run(first, qrels)
    with pytest.raises(GpukitError, match="already"):
        ev.update_run(first, qrels)
    # The refused batch left the state as it was: AP of q1 = (1/1) / 2.
    assert ev.compute(sync=False)["AP"] == pytest.approx(0.5)
    ev.reset()
    ev.update_run(first, qrels)  # after reset the query may come again
    assert ev.compute_report(sync=False).queries == 1


def test_int64_grades_outside_int32_are_refused_at_compute():
    ev = RetrievalEvaluator(["nDCG@2"])
    scores = torch.tensor([[0.9, 0.1]])
    ev.update(scores, torch.tensor([[2**32 + 1, 0]], dtype=torch.int64))  # would wrap to 1 in int32
    with pytest.raises(GpukitError, match="int32"):
        ev.compute(sync=False)


def test_nan_scores_rank_last_deterministically_and_never_crash():
    # One NaN among the top k: ranked as -inf (after every finite score),
    # ties among NaNs by column ascending.
    scores = torch.tensor([[0.5, float("nan"), 0.9, 0.1, float("nan")]])
    targets = torch.tensor([[0, 1, 0, 0, 2]])
    ev = RetrievalEvaluator(["nDCG@3", "RR", "P@5"])
    ev.update(scores, targets)
    got = ev.compute(sync=False)
    # Ranking: col2 (0.9), col0 (0.5), col3 (0.1), col1 (NaN, grade 1), col4 (NaN, grade 2).
    assert got["RR"] == pytest.approx(1 / 4)
    assert got["nDCG@3"] == 0.0
    assert got["P@5"] == pytest.approx(2 / 5)
    finite = scores.nan_to_num(nan=-math.inf)
    ev2 = RetrievalEvaluator(["nDCG@3", "RR", "P@5"])
    ev2.update(finite, targets)
    assert ev2.compute(sync=False) == got


def _mismatch_worker(rank: int, init_file: str, out_dir: str, measures_by_rank: list, convention_by_rank: list) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        ev = RetrievalEvaluator(measures_by_rank[rank], convention=convention_by_rank[rank])
        ev.update(torch.tensor([[0.3, 0.2]]), torch.tensor([[1, 0]]))
        try:
            ev.compute()
            outcome = "ok"
        except GpukitError as exc:
            outcome = f"error: {exc}"
        Path(out_dir, f"rank{rank}.txt").write_text(outcome)
    finally:
        dist.destroy_process_group()


def _query_worker(rank: int, init_file: str, out_dir: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        qrels, first, second = _qrels_and_run()
        ev = RetrievalEvaluator(["AP"])
        ev.update_run(first if rank == 0 else second, qrels)  # both ranks see q1
        try:
            ev.compute()
            outcome = "ok"
        except GpukitError as exc:
            outcome = f"error: {exc}"
        Path(out_dir, f"rank{rank}.txt").write_text(outcome)
    finally:
        dist.destroy_process_group()


def _run(tmp_path: Path, target, *args) -> list[str]:
    out = tmp_path / "out"
    out.mkdir()
    mp.spawn(target, args=(str(tmp_path / "init"), str(out), *args), nprocs=2, join=True)
    return [(out / f"rank{r}.txt").read_text() for r in range(2)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "measures,conventions",
    [
        ([["P@5", "AP"], ["AP", "P@5"]], ["gpukit", "gpukit"]),  # same length, other order
        ([["P@5", "AP"], ["P@5", "AP", "RR"]], ["gpukit", "gpukit"]),  # different lengths (aborted gloo)
        ([["P@5"], ["P@5"]], ["gpukit", "trec_eval"]),
    ],
)
def test_ranks_with_different_evaluators_refuse_to_reduce(tmp_path, measures, conventions):
    outcomes = _run(tmp_path, _mismatch_worker, measures, conventions)
    assert all(o.startswith("error:") and "differ" in o for o in outcomes), outcomes


@pytest.mark.slow
def test_a_query_seen_on_two_ranks_is_an_error(tmp_path):
    outcomes = _run(tmp_path, _query_worker)
    assert all(o.startswith("error:") and "q1" in o for o in outcomes), outcomes
