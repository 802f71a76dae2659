"""mteb's retrieval evaluation of SciFact with each search backend, in one process.

    python bench/compare_mteb.py [--repeats 5] [--device cpu]

The task: gpukit's bundled SciFact test split (300 queries, 5,183 documents)
as an mteb task (``gpukit.compat.mteb.local_task``, no network), encoded by
a hashed bag-of-words encoder (``tests/mteb_encoder.py``: cheap and the same
under every backend, so the differences are the search). Each repeat runs
``task.evaluate`` (index, search at mteb's top_k 1000, mteb's scoring) once
per backend, in rotating order; medians over repeats:

* default        ``SearchEncoderWrapper(model)``: mteb's chunked torch search
* mteb-faiss     ``SearchEncoderWrapper(model, index_backend=FaissSearchIndex(model))``
* gpukit-index   ``SearchEncoderWrapper(model, index_backend=GpukitSearchIndex(model))``
* gpukit         ``gpukit.compat.mteb.search_model(model)`` (the same index; the
                 wrapper maps hits to ids through a list)

Prints, per backend, the median seconds of the whole ``evaluate`` and of
its similarity/search phase (mteb's timer; for the default backend that
phase includes encoding the corpus, which the others do in ``index``), and
nDCG@10, which must be the same for all.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gpukit.datasets  # noqa: E402
from gpukit.compat.mteb import GpukitSearchIndex, local_task, search_model  # noqa: E402


def backends(model, device: str) -> dict:
    from mteb.models import SearchEncoderWrapper
    from mteb.models.search_encoder_index.search_indexes.faiss_search_index import FaissSearchIndex

    return {
        "default": lambda: SearchEncoderWrapper(model),
        "mteb-faiss": lambda: SearchEncoderWrapper(model, index_backend=FaissSearchIndex(model)),
        "gpukit-index": lambda: SearchEncoderWrapper(model, index_backend=GpukitSearchIndex(model, device=device)),
        "gpukit": lambda: search_model(model, device=device),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    import datasets
    from mteb.timing import TimingStack
    from mteb_encoder import HashedWords

    import mteb

    datasets.disable_progress_bars()

    model, task = HashedWords(), local_task(gpukit.datasets.load_scifact())
    makers = backends(model, args.device)
    encode = {"batch_size": 512, "show_progress_bar": False}
    total: dict[str, list[float]] = {n: [] for n in makers}
    phase: dict[str, list[float]] = {n: [] for n in makers}
    ndcg: dict[str, float] = {}
    names = list(makers)
    for r in range(args.repeats + 1):  # repeat 0 warms up (imports, allocator) and is not counted
        for name in names[r % len(names):] + names[: r % len(names)]:
            timer = TimingStack()
            started = time.perf_counter()
            scores = task.evaluate(makers[name](), "test", encode_kwargs=encode, timer=timer)["default"]
            elapsed = time.perf_counter() - started
            search = sum(p["end"] - p["start"] for p in timer.phases if p["name"] in ("Searching corpus", "Computing similarity"))
            ndcg[name] = scores["ndcg_at_10"]
            if r:
                total[name].append(elapsed), phase[name].append(search)
    print(f"mteb {mteb.__version__}, SciFact test, {args.repeats} repeats, device {args.device}")
    base = statistics.median(total["default"])
    for name in names:
        t, s = statistics.median(total[name]), statistics.median(phase[name])
        print(f"{name:13s} evaluate {t:6.2f} s ({t / base:4.2f}x default)  search phase {s:6.2f} s  nDCG@10 {ndcg[name]}")
    if len(set(ndcg.values())) != 1:
        raise SystemExit(f"backends disagree: {ndcg}")


if __name__ == "__main__":
    main()
