"""Host-to-device copies of moving a run and wrapping search output.

``Run.to`` copies the doc keys; scores, which evaluation reads only when it
compares them in a narrower precision than stored, are copied on first read.
``Run.from_topk`` maps positions to doc keys with a key table built and
copied to the device once per corpus, and does no host sync before its
checks find a problem. Traced on the meta device (the non-CPU path).
"""
from __future__ import annotations

import pyarrow as pa
import pytest
import torch
from op_budget import DeviceOpCounter

from gpukit.data.run import Run
from gpukit.evaluation import evaluate
from gpukit.judgments.qrels import Qrels

RUN = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d2": 5.0, "d4": 4.0}}
QRELS = {"q1": {"d1": 1, "d3": 2}, "q2": {"d4": 1, "d9": 1}}


def test_run_to_copies_only_the_doc_keys():
    run = Run.from_dict(RUN)
    codes_bytes = run.doc_codes.numel() * run.doc_codes.element_size()
    with DeviceOpCounter() as count:
        moved = run.to("meta")
    assert count.host_to_device == 1 and count.host_to_device_bytes == codes_bytes, count.ops
    assert moved.doc_codes.device.type == "meta"
    with DeviceOpCounter() as count:
        scores = moved.scores  # copied when read, once
        again = moved.scores
    assert count.host_to_device == 1 and scores.device.type == "meta" and again is scores
    assert scores.shape == run.scores.shape and scores.dtype == run.scores.dtype


def test_run_in_blocks_moves_scores_when_read():
    deep = {"q0": {f"d{i}": float(-i) for i in range(40_000)}}
    shallow = {f"q{j}": {"d1": 1.0} for j in range(1, 40)}
    run = Run.from_dict({**deep, **shallow})
    assert run.blocks is not None  # lopsided: stored in depth blocks
    with DeviceOpCounter() as count:
        moved = run.to("meta")
    # rows (when a block lists them) and doc keys per block; no scores.
    expected = sum(1 + (b.rows is not None) for b in run.row_blocks())
    assert count.host_to_device == expected, count.ops
    assert all(b.scores.device.type == "meta" for b in moved.row_blocks())


@pytest.mark.parametrize("score_dtype", [torch.float64, torch.float32])
def test_evaluate_reads_scores_only_to_compare_them_narrower(score_dtype):
    """Scores left on a device they cannot be read from (meta): evaluation in
    the stored precision (the default) or a wider one never touches them;
    in a narrower one (float32 for float64 scores) it must read them."""
    run = Run.from_dict(RUN)
    unreadable = Run(run.query_ids, run.doc_space, run.doc_codes, run.scores.to("meta"), run.name)
    qrels = Qrels.from_dict(QRELS)
    expected = evaluate(qrels, run, ["AP", "nDCG@10", "P@2"], score_dtype=score_dtype)
    if score_dtype == torch.float64:
        got = evaluate(qrels, unreadable, ["AP", "nDCG@10", "P@2"], score_dtype=score_dtype)
        assert got.means() == expected.means()
    else:
        with pytest.raises(NotImplementedError, match="meta"):
            evaluate(qrels, unreadable, ["AP", "nDCG@10", "P@2"], score_dtype=score_dtype)


def test_float32_topk_scores_are_not_reread_to_compare_in_float64():
    """Widening float32 -> float64 is exact: rows ranked in float32 stay ranked."""
    scores = torch.tensor([[0.5, 0.5, 0.25], [1.0, 0.75, 0.75]], dtype=torch.float32)
    run = Run.from_topk(scores, torch.tensor([[0, 1, 2], [3, 1, 2]]), ["q1", "q2"], ["d1", "d2", "d3", "d4"])
    unreadable = Run(run.query_ids, run.doc_space, run.doc_codes, run.scores.to("meta"), run.name)
    qrels = Qrels.from_dict(QRELS)
    assert evaluate(qrels, unreadable, ["AP", "RR"]).means() == evaluate(qrels, run, ["AP", "RR"]).means()


def _meta_topk(q: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty((q, k), device="meta"), torch.empty((q, k), dtype=torch.int64, device="meta")


def test_from_topk_copies_the_corpus_key_table_once_and_syncs_once():
    corpus = pa.array([f"doc-{i:06d}" for i in range(5000)])
    query_ids = [f"q{i}" for i in range(64)]
    counts = []
    for _ in range(3):
        with DeviceOpCounter(answer_syncs=True) as count:
            run = Run.from_topk(*_meta_topk(64, 100), query_ids, corpus)
        counts.append(count)
    assert run.doc_codes.device.type == "meta"
    # The first call copies the (N + 1) int64 key table; later ones copy nothing.
    assert counts[0].host_to_device == 1 and counts[0].host_to_device_bytes == 5001 * 8
    assert [c.host_to_device for c in counts[1:]] == [0, 0]
    # Every check read back at once: one sync, one device-to-host transfer.
    assert all(c.syncs == 1 and c.device_to_host == 1 for c in counts), [c.ops for c in counts]


@pytest.fixture
def device_path(monkeypatch):
    """from_topk's non-CPU path, run on CPU tensors (values can be compared)."""
    import gpukit.data.run_from_topk as run_module

    monkeypatch.setattr(run_module, "_syncs_are_cheap", lambda device: False)


def _random_topk(seed: int, q: int, k: int, n: int, empty_row: bool) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, 4, (q, k), generator=g).float() / 4  # many ties
    indices = torch.stack([torch.randperm(n, generator=g)[:k] for _ in range(q)])
    indices[torch.rand(q, k, generator=g) < 0.2] = -1  # missing results
    if empty_row:
        indices[1] = -1  # a row without any result (the path that drops rows)
    return scores, indices


@pytest.mark.parametrize("empty_row", [False, True])
@pytest.mark.parametrize("ids", ["short", "long"])
def test_from_topk_device_path_gives_the_cpu_run(device_path, ids, empty_row, monkeypatch):
    import gpukit.data.run_from_topk as run_module

    n = 300
    doc_ids = [f"d{i}" if ids == "short" else f"a-longer-document-id-{i}" for i in range(n)]
    for seed in range(5):
        scores, indices = _random_topk(seed, 20, 30, n, empty_row)
        query_ids = [f"q{i}" for i in range(20)]
        on_device = Run.from_topk(scores, indices, query_ids, doc_ids)
        monkeypatch.setattr(run_module, "_syncs_are_cheap", lambda device: True)
        on_cpu = Run.from_topk(scores, indices, query_ids, doc_ids)
        monkeypatch.setattr(run_module, "_syncs_are_cheap", lambda device: False)
        assert on_device.query_id_list() == on_cpu.query_id_list()
        assert torch.equal(on_device.doc_codes, on_cpu.doc_codes)
        valid = on_cpu.doc_codes >= 0  # scores of padding slots are not part of a run
        assert torch.equal(on_device.scores[valid], on_cpu.scores[valid])
        assert on_device.to_dict() == on_cpu.to_dict()


@pytest.mark.parametrize(
    "scores, indices, message",
    [
        ([[1.0, 0.5]], [[0, 7]], "doc index 7 out of range for 3 doc ids"),
        ([[1.0, 0.5]], [[0, -2]], "row 0: doc index -2; only -1 may mark a missing result"),
        ([[1.0, float("nan")]], [[0, 1]], "scores contain NaN"),
        ([[1.0, 0.5]], [[2, 2]], "retrieved twice"),
        ([[1.0, 0.5]], [[-1, -1]], "no result in any row"),
    ],
)
def test_from_topk_device_path_names_the_same_problems(device_path, scores, indices, message):
    from gpukit.errors import InputFormatError

    with pytest.raises(InputFormatError, match=message):
        Run.from_topk(torch.tensor(scores), torch.tensor(indices), ["q1"], ["d1", "d2", "d3"])


def test_scores_held_on_a_device_are_copied_when_the_run_moves():
    """Only host scores are deferred: a run leaving a device does not keep
    device memory alive (here the copy out of meta is attempted, and fails, at once)."""
    run = Run.from_dict(RUN)
    # Keys on the CPU (their copy is a no-op), scores on a device: the move copies the scores now.
    scores_on_meta = Run(run.query_ids, run.doc_space, run.doc_codes, run.scores.to("meta"), run.name)
    with pytest.raises(NotImplementedError, match="meta"):
        scores_on_meta.to("cpu")
