"""gpukit.compat.torchmetrics against torchmetrics' retrieval metrics, same data, one process.

    python bench/compare_torchmetrics.py [--queries 10000] [--candidates 100] [--batches 10] [--repeats 5]

Data: ``--queries`` queries x ``--candidates`` candidates, scores distinct
and positive (a random permutation of 1..n per query, over n + 1), targets
0/1 with about 10% relevant (some queries with none), split into
``--batches`` update calls of rows shuffled over the whole run, so most
queries come in several updates. Distinct scores: no tie order involved, so
both libraries must give the same values (checked to 1e-6: torchmetrics
computes in float32).

Timed, for each metric: a fresh metric object gets every ``update(preds,
target, indexes)`` (timed as "update") and then ``compute()`` (timed as
"compute"); the two libraries alternate, repeat 0 warms up and is not
counted; medians of ``--repeats`` paired repeats, and the median of the
per-repeat ratios torchmetrics / gpukit.
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

METRICS = {
    "nDCG@10": ("RetrievalNormalizedDCG", {"top_k": 10}), "MAP": ("RetrievalMAP", {}), "MRR": ("RetrievalMRR", {}),
    "P@10": ("RetrievalPrecision", {"top_k": 10}), "AUROC": ("RetrievalAUROC", {}),
    "PRCurve@10": ("RetrievalPrecisionRecallCurve", {"max_k": 10}),
}


def make_batches(queries: int, candidates: int, batches: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    # A random permutation of 1..n per query, scaled into (0, 1): distinct and positive in float32.
    preds = ((torch.rand(queries, candidates, generator=g).argsort(1) + 1).float() / (candidates + 1)).flatten()
    target = (torch.rand(queries, candidates, generator=g) < 0.1).long().flatten()
    indexes = torch.arange(queries).repeat_interleave(candidates)
    perm = torch.randperm(preds.numel(), generator=g)
    preds, target, indexes = preds[perm], target[perm], indexes[perm]
    per = -(-preds.numel() // batches)
    return [(preds[i : i + per], target[i : i + per], indexes[i : i + per]) for i in range(0, preds.numel(), per)]


def run(cls, kwargs: dict, batches) -> tuple[float, float, torch.Tensor]:
    metric = cls(**kwargs)
    started = time.perf_counter()
    for preds, target, indexes in batches:
        metric.update(preds, target, indexes)
    updated = time.perf_counter()
    value = metric.compute()
    done = time.perf_counter()
    value = value[0] if isinstance(value, tuple) else value  # the curves: precision@1..max_k
    return updated - started, done - updated, value.double()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--metrics", nargs="*", default=list(METRICS))
    args = parser.parse_args()
    batches = make_batches(args.queries, args.candidates, args.batches)
    split = sum(1 for q in torch.cat([torch.unique(b[2]) for b in batches]).bincount().tolist() if q > 1)
    print(f"torchmetrics {torchmetrics.__version__}, torch {torch.__version__}, {args.queries} queries x "
          f"{args.candidates} candidates in {len(batches)} updates ({split} queries in more than one), "
          f"{args.repeats} repeats, CPU threads {torch.get_num_threads()}")
    for name in args.metrics:
        cls_name, kwargs = METRICS[name]
        impls = {"gpukit": getattr(ours, cls_name), "torchmetrics": getattr(theirs, cls_name)}
        times = {lib: {"update": [], "compute": []} for lib in impls}
        values: dict[str, torch.Tensor] = {}
        for r in range(args.repeats + 1):  # repeat 0 warms up
            for lib in (list(impls) if r % 2 else list(impls)[::-1]):
                update, compute, values[lib] = run(impls[lib], kwargs, batches)
                if r:
                    times[lib]["update"].append(update)
                    times[lib]["compute"].append(compute)
        for phase in ("update", "compute"):
            a, b = statistics.median(times["gpukit"][phase]), statistics.median(times["torchmetrics"][phase])
            ratio = statistics.median(t / g for g, t in zip(times["gpukit"][phase], times["torchmetrics"][phase]))
            print(f"{name:10s} {phase:7s} gpukit {a:8.4f} s  torchmetrics {b:8.4f} s  torchmetrics/gpukit {ratio:7.1f}x")
        gap = float((values["gpukit"] - values["torchmetrics"]).abs().max())
        print(f"{name:10s} values agree to {gap:.1e}")
        if gap > 1e-6:
            raise SystemExit(f"{name}: values disagree")


if __name__ == "__main__":
    main()
