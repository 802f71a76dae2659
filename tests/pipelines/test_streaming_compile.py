"""``RetrievalEvaluator.update`` under ``torch.compile(fullgraph=True)`` on CPU:
one graph (no graph break) and the same int64 state as eager, bit for bit.

``aot_eager`` traces exactly what inductor gets (dynamo + AOT autograd) and
takes seconds; the inductor run (generated C++ kernels) is the slow test.
P@k, R@k and AP have CPU-only NumPy fast paths in gpukit.metrics.binary;
they step aside while compiling, and the dense paths they equal are traced.
"""
from __future__ import annotations

import pytest
import torch

from gpukit.conventions import get_convention
from gpukit.measures import parse_measures
from gpukit.pipelines import RetrievalEvaluator
from gpukit.pipelines.streaming import dense_ranking, state_increment

COMPILABLE = ["nDCG@10", "RR@10", "nDCG", "nDCG@5"]


def _batches(seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for rows in (16, 16):  # same shapes: one compilation, two calls
        scores = torch.randn(rows, 300, generator=g).round(decimals=1)  # ties at the cut
        targets = torch.randint(-1, 4, (rows, 300), generator=g, dtype=torch.int32)
        out.append((scores, targets))
    return out


def _kernels(measures, convention):
    def kernels(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return state_increment(dense_ranking(scores, targets, measures), measures, convention)

    return kernels


@pytest.mark.parametrize("convention", ["gpukit", "trec_eval"])
def test_update_kernels_compile_to_one_graph_with_eager_state(convention):
    torch._dynamo.reset()
    measures = parse_measures(COMPILABLE)
    kernels = _kernels(measures, get_convention(convention, False))
    compiled = torch.compile(kernels, fullgraph=True, backend="aot_eager")
    for scores, targets in _batches():
        assert torch.equal(compiled(scores, targets), kernels(scores, targets))


def test_evaluator_update_compiles_and_keeps_eager_state():
    torch._dynamo.reset()
    eager = RetrievalEvaluator(COMPILABLE, device="cpu")
    traced = RetrievalEvaluator(COMPILABLE, device="cpu")
    update = torch.compile(traced.update, fullgraph=True, backend="aot_eager")
    for scores, targets in _batches(1):
        eager.update(scores, targets)
        update(scores, targets)
    assert torch.equal(traced.state, eager.state)
    assert traced.compute() == eager.compute()


@pytest.mark.slow
def test_update_kernels_under_inductor_match_eager_bit_for_bit():
    torch._dynamo.reset()
    measures = parse_measures(COMPILABLE)
    kernels = _kernels(measures, get_convention("gpukit", False))
    compiled = torch.compile(kernels, fullgraph=True)  # inductor: generated CPU kernels
    for scores, targets in _batches(2):
        assert torch.equal(compiled(scores, targets), kernels(scores, targets))


@pytest.mark.parametrize("name", ["P@10", "R@100", "AP"])
def test_binary_cutoff_and_ap_kernels_compile(name):
    """The CPU-only NumPy paths (row counts, sparse AP) step aside under
    compilation; the dense paths they equal bit for bit are traced instead."""
    torch._dynamo.reset()
    measures = parse_measures([name])
    kernels = _kernels(measures, get_convention("gpukit", False))
    compiled = torch.compile(kernels, fullgraph=True, backend="aot_eager")
    for scores, targets in _batches(2):
        assert torch.equal(compiled(scores, targets), kernels(scores, targets))
