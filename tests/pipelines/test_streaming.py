"""RetrievalEvaluator: streaming equals one-shot evaluation, exactly-additive state, no host sync."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest
import torch

import gpukit
from gpukit.errors import DeviceError, GpukitError
from gpukit.pipelines import RetrievalEvaluator
from gpukit.pipelines.streaming import (
    from_fixed_point,
    ranked_positions,
    to_fixed_point,
)

MEASURES = [
    "nDCG@10", "nDCG@3", "R@20", "RR@10", "RR", "AP", "AP@5", "P@5", "Rprec", "Bpref", "nDCG",
    "Success@3", "NumRelRet", "Unjudged@10", "DCG@5", "nDCG(gain=exp)@10", "P(rel=2)@5", "NumRel", "NumRet",
]
CUTOFF_MEASURES = ["nDCG@10", "R@20", "RR@10", "P@5", "AP@20", "Success@3", "P(rel=2)@5", "nDCG(gain=exp)@5", "nDCG(gains={1:3,2:9})@7"]


def _dense(batch: int, n: int, seed: int, tie_levels: int = 5, unjudged: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores with many ties and sparse grades (some queries with nothing relevant)."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, tie_levels, (batch, n), generator=g).to(torch.float32)
    grades = torch.randint(1, 3, (batch, n), generator=g) * (torch.rand(batch, n, generator=g) < 0.15)
    grades[0] = 0  # a query without relevant documents: undefined R, AP, nDCG
    if unjudged:
        grades = torch.where(torch.rand(batch, n, generator=g) < 0.2, torch.full_like(grades, -1), grades)
    return scores, grades


def _one_shot(scores: torch.Tensor, grades: torch.Tensor, measures, convention: str) -> gpukit.Report:
    """The same data as qrels + run. Column j gets id N-1-j (zero padded), so
    trec_eval's tie rule (doc id descending) ranks ties by column ascending."""
    b, n = scores.shape
    width = len(str(n))
    docs = [f"{n - 1 - j:0{width}d}" for j in range(n)]
    qids = [f"q{i:04d}" for i in range(b)]
    keep = grades.flatten() >= 0  # negative grade = candidate without judgment
    qrels = gpukit.Qrels.from_arrays(
        [q for q in qids for _ in range(n)], docs * b, grades.flatten().tolist()
    )
    if not bool(keep.all()):
        q_all = [q for q in qids for _ in range(n)]
        d_all = docs * b
        g_all = grades.flatten().tolist()
        rows = [i for i, k in enumerate(keep.tolist()) if k]
        qrels = gpukit.Qrels.from_arrays([q_all[i] for i in rows], [d_all[i] for i in rows], [g_all[i] for i in rows])
    run = gpukit.Run.from_topk(scores, torch.arange(n).expand(b, n).contiguous(), qids, docs)
    return gpukit.evaluate(qrels, run, measures, convention=convention, complete=True)


@pytest.mark.parametrize("convention", ["gpukit", "trec_eval"])
@pytest.mark.parametrize("measures", [MEASURES, CUTOFF_MEASURES], ids=["full", "cutoffs"])
def test_streaming_over_batches_equals_one_shot_evaluate(convention, measures):
    scores, grades = _dense(37, 60, seed=1)
    evaluator = RetrievalEvaluator(measures, convention=convention)
    for start in range(0, 37, 8):
        evaluator.update(scores[start : start + 8], grades[start : start + 8])
    got = evaluator.compute_report()
    expected = _one_shot(scores, grades, measures, convention)
    assert got.queries == 37
    for name in measures:
        ref = expected[name]
        mine = got.results[str(gpukit.parse_measure(name))]
        assert mine.mean == pytest.approx(ref.mean, rel=1e-12, abs=1e-15), name
        assert (mine.evaluated, mine.omitted) == (ref.evaluated, ref.omitted), name


def test_unjudged_candidates_count_as_nonrelevant_and_stay_out_of_the_ideal():
    scores, grades = _dense(20, 30, seed=2, unjudged=True)
    measures = ["nDCG@10", "Bpref", "Unjudged@10", "AP", "R@5"]  # Judged@k reads qrels presence: not streamable
    evaluator = RetrievalEvaluator(measures)
    evaluator.update(scores, grades)
    expected = _one_shot(scores, grades, measures, "gpukit")
    for name in measures:
        assert evaluator.compute()[name] == pytest.approx(expected[name].mean, rel=1e-12), name


def test_ranked_positions_break_ties_by_column():
    for seed in range(20):
        scores, _ = _dense(16, 50, seed=seed, tie_levels=1 + seed % 4)
        reference = torch.sort(scores, dim=1, descending=True, stable=True).indices
        for k in (1, 2, 7, 49, 50):
            assert torch.equal(ranked_positions(scores, k), reference[:, :k]), (seed, k)


def test_state_is_independent_of_batch_split_and_order():
    scores, grades = _dense(41, 33, seed=3)
    scores = scores + torch.rand(scores.shape, generator=torch.Generator().manual_seed(9))  # non-dyadic values
    one = RetrievalEvaluator(MEASURES)
    one.update(scores, grades)
    rng = random.Random(0)
    order = list(range(41))
    rng.shuffle(order)
    other = RetrievalEvaluator(MEASURES)
    cuts = sorted(rng.sample(range(1, 41), 6))
    for lo, hi in zip([0] + cuts, cuts + [41]):
        rows = torch.tensor(order[lo:hi])
        other.update(scores[rows], grades[rows])
    assert torch.equal(one.state, other.state)
    assert one.compute() == other.compute()


def test_fixed_point_is_exact_for_normal_range_values():
    g = torch.Generator().manual_seed(4)
    values = torch.cat([
        torch.rand(200, generator=g, dtype=torch.float64),
        torch.rand(50, generator=g, dtype=torch.float64) * 1e6,
        -torch.rand(50, generator=g, dtype=torch.float64),
        torch.tensor([2.0**-43, 1.0 / 3.0, 0.0, 2.0**52 + 1.0], dtype=torch.float64),
    ])
    limbs = to_fixed_point(values)
    for v, row in zip(values.tolist(), limbs.tolist()):
        assert from_fixed_point(row) == Fraction(v)
    assert from_fixed_point(limbs.sum(0).tolist()) == sum(Fraction(v) for v in values.tolist())


def _forbid(*_args, **_kwargs):
    raise AssertionError("host synchronisation inside update()")


def test_update_does_no_host_synchronisation(monkeypatch):
    scores, grades = _dense(12, 40, seed=5)
    evaluator = RetrievalEvaluator(MEASURES, device="cpu")
    # ``numpy`` stays allowed: CPU kernels may read their own host memory
    # through NumPy views (no device is involved). The device code path is
    # proven free of value reads by the meta-device test below.
    for name in ("item", "cpu", "tolist", "__bool__", "__int__", "__float__", "__index__", "nonzero", "unique"):
        monkeypatch.setattr(torch.Tensor, name, _forbid)
    monkeypatch.setattr(torch, "nonzero", _forbid)
    monkeypatch.setattr(torch, "unique", _forbid)
    evaluator.update(scores, grades)
    evaluator.update(scores, grades)
    monkeypatch.undo()
    assert evaluator.compute_report().queries == 24


@pytest.mark.parametrize("measures", [MEASURES, CUTOFF_MEASURES], ids=["full", "cutoffs"])
def test_update_runs_on_the_meta_device(measures):
    """Meta tensors have no data: any value read or data-dependent shape
    (nonzero, masked indexing, unique, .item()) raises, so passing proves the
    update is static-shape and sync-free, as CUDA graphs need."""
    evaluator = RetrievalEvaluator(measures, device="meta")
    scores = torch.empty(8, 64, device="meta")
    grades = torch.empty(8, 64, dtype=torch.int64, device="meta")
    evaluator.update(scores, grades)
    evaluator.reset()
    assert evaluator.state.shape == (len(gpukit.parse_measures(measures)), 6)


def test_update_run_equals_evaluate():
    scores, grades = _dense(30, 25, seed=6)
    b, n = scores.shape
    docs = [f"d{j:02d}" for j in range(n)]
    qids = [f"q{i:02d}" for i in range(b)]
    qrels = gpukit.Qrels.from_arrays([q for q in qids for _ in range(n)], docs * b, grades.flatten().tolist())
    positions = torch.arange(n).expand(b, n).contiguous()
    full = gpukit.Run.from_topk(scores, positions, qids, docs)
    evaluator = RetrievalEvaluator(MEASURES)
    for lo in range(0, b, 7):
        batch = gpukit.Run.from_topk(scores[lo : lo + 7], positions[lo : lo + 7], qids[lo : lo + 7], docs)
        evaluator.update_run(batch, qrels)
    expected = gpukit.evaluate(qrels, full, MEASURES)
    got = evaluator.compute_report()
    for name in MEASURES:
        mine = got.results[str(gpukit.parse_measure(name))]
        assert mine.mean == pytest.approx(expected[name].mean, rel=1e-12), name
        assert mine.evaluated == expected[name].evaluated


def test_reset_empty_and_bool_targets():
    evaluator = RetrievalEvaluator(["nDCG@5", "P@2"])
    report = evaluator.compute_report()
    assert report.queries == 0 and all(r != r for r in report.means().values())  # NaN without data
    scores = torch.tensor([[0.9, 0.1, 0.5]])
    evaluator.update(scores, torch.tensor([[False, False, True]]))
    # ranking: col0 (non-rel), col2 (rel), col1: P@2 = 1/2, nDCG@5 = (1/log2 3) / 1
    result = evaluator.compute()
    assert result["P@2"] == 0.5
    assert result["nDCG@5"] == pytest.approx(1 / torch.log2(torch.tensor(3.0, dtype=torch.float64)).item())
    evaluator.reset()
    assert evaluator.compute_report().queries == 0


def test_trec_eval_count_measures_are_sums():
    scores, grades = _dense(10, 20, seed=7)
    evaluator = RetrievalEvaluator(["NumRelRet", "NumRel"], convention="trec_eval")
    evaluator.update(scores, grades)
    report = evaluator.compute_report()
    assert report.results["NumRel"].mean == float((grades >= 1).sum())
    assert report.results["NumRel"].aggregate == "sum"


def test_bad_inputs_are_rejected():
    evaluator = RetrievalEvaluator(["nDCG@10"], device="cpu")
    with pytest.raises(GpukitError, match="same"):
        evaluator.update(torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.int64))
    with pytest.raises(GpukitError, match="integer"):
        evaluator.update(torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(DeviceError):
        evaluator.update(torch.zeros(2, 3, device="meta"), torch.zeros(2, 3, dtype=torch.int64, device="meta"))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    scores, grades = _dense(64, 500, seed=8)
    cpu = RetrievalEvaluator(MEASURES, device="cpu")
    gpu = RetrievalEvaluator(MEASURES, device="cuda")
    cpu.update(scores, grades)
    gpu.update(scores.cuda(), grades.cuda())
    assert cpu.compute() == gpu.compute()
