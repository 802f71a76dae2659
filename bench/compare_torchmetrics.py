"""gpukit.compat.torchmetrics against torchmetrics' retrieval metrics, same data, one process.

    python bench/compare_torchmetrics.py [--queries 10000] [--candidates 100] [--batches 10] [--repeats 5]

Data: ``--queries`` queries x ``--candidates`` candidates, split into
``--batches`` update calls of whole queries (as a validation loop feeds
them); scores distinct and positive (a random permutation of 1..n per query, over n + 1), targets 0/1 with
about 10% relevant and some queries with none, so both libraries' conventions
give the same values (``docs/adapters.md``: ties, scores <= 0 and
``MAP(top_k)`` are where they differ; ``empty_target_action="neg"``).

Timed: for each metric, a fresh metric object, every ``update(preds, target,
indexes)`` then ``compute()``; median of ``--repeats``, the two libraries
alternating. Metrics: ``RetrievalNormalizedDCG(top_k=10)``,
``RetrievalMAP()``, ``RetrievalMRR()``. Prints both values (they must agree
to 1e-6: torchmetrics computes in float32) and the time ratio.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torchmetrics  # noqa: E402
import torchmetrics.retrieval as theirs  # noqa: E402

import gpukit.compat.torchmetrics as ours  # noqa: E402

METRICS = {"nDCG@10": ("RetrievalNormalizedDCG", {"top_k": 10}), "MAP": ("RetrievalMAP", {}), "MRR": ("RetrievalMRR", {})}


def make_batches(queries: int, candidates: int, batches: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    # A random permutation of 1..n per query, scaled into (0, 1): distinct and positive in float32.
    preds = (torch.rand(queries, candidates, generator=g).argsort(1) + 1).float() / (candidates + 1)
    target = (torch.rand(queries, candidates, generator=g) < 0.1).long()
    indexes = torch.arange(queries).repeat_interleave(candidates).view(queries, candidates)
    per = -(-queries // batches)
    return [(preds[i : i + per].flatten(), target[i : i + per].flatten(), indexes[i : i + per].flatten())
            for i in range(0, queries, per)]


def run(cls, kwargs: dict, batches) -> float:
    metric = cls(**kwargs)
    for preds, target, indexes in batches:
        metric.update(preds, target, indexes)
    return float(metric.compute())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    batches = make_batches(args.queries, args.candidates, args.batches)
    for preds, _, _ in batches:  # distinct scores: no tie convention involved
        assert preds.view(-1, args.candidates).sort(1).values.diff(1).gt(0).all()
    print(f"torchmetrics {torchmetrics.__version__}, torch {torch.__version__}, {args.queries} queries x "
          f"{args.candidates} candidates in {len(batches)} updates, {args.repeats} repeats, CPU threads {torch.get_num_threads()}")
    for name, (cls_name, kwargs) in METRICS.items():
        times: dict[str, list[float]] = {"gpukit": [], "torchmetrics": []}
        values: dict[str, float] = {}
        impls = {"gpukit": getattr(ours, cls_name), "torchmetrics": getattr(theirs, cls_name)}
        for r in range(args.repeats + 1):  # repeat 0 warms up
            for lib in (list(impls) if r % 2 else list(impls)[::-1]):
                started = time.perf_counter()
                values[lib] = run(impls[lib], kwargs, batches)
                if r:
                    times[lib].append(time.perf_counter() - started)
        a, b = statistics.median(times["gpukit"]), statistics.median(times["torchmetrics"])
        print(f"{name:8s} gpukit {a:7.3f} s  torchmetrics {b:7.3f} s  torchmetrics/gpukit {b / a:6.1f}x  "
              f"values {values['gpukit']:.6f} {values['torchmetrics']:.6f}")
        if abs(values["gpukit"] - values["torchmetrics"]) > 1e-6:
            raise SystemExit(f"{name}: values disagree")


if __name__ == "__main__":
    main()
