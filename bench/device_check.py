"""The stages of ``bench/device_check.sh``: one JSON report per stage, then a summary.

    python bench/device_check.py STAGE --out DIR [--cpu-dry-run]
    python bench/device_check.py summary --out DIR --status DIR/status.tsv

Each stage writes ``DIR/STAGE.json``::

    {"stage", "device", "dry_run", "status": "ok" | "failed" | "skipped",
     "note", "seconds", "rows": [{"what", "value", "unit", "note"}]}

``--cpu-dry-run`` runs every stage on the CPU at tiny sizes: it tests the
plumbing (data generation, timing, comparisons, reports), and its figures
mean nothing. Without it a stage needs CUDA and is skipped without it.

Timing: on CUDA, CUDA events around each call (the closing event waited
for), median of the repeats after warm-up; on CPU, ``time.perf_counter``.
Figures of merit:

* metric kernels: queries/s of ``compute_measures`` (six measures) and the
  fraction of the copy-probe bandwidth that reading the ranking's tensors
  once would need at that speed (a lower bound on the traffic: inputs once);
* ``RetrievalEvaluator.update``: latency per (B, N) batch;
* exact search (bf16 storage, d = 768): queries/s, and the scoring matmul's
  FLOP rate (2 Q N d / time) as a fraction of a measured bf16 matmul rate;
* budgets: the device paths under ``torch.cuda.set_sync_debug_mode("error")``
  (any host synchronisation raises);
* CUDA graph: ``update`` captured once, replayed on new batches, state
  compared with eager updates bit for bit;
* host-streamed index: ``HostStreamedIndex`` (bf16 file, 1 GiB budget) with
  overlapped copies and with synchronous ones (the same blocks), equal to
  the in-memory ``ExactIndex`` with those blocks bit for bit; queries/s,
  corpus bytes streamed per second against a pinned and a pageable
  host-to-device copy probe and against the in-memory index, the measured
  peak device memory against the budget.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIX = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]
CUTOFF_MEASURES = ["nDCG@10", "R@100", "RR@10", "P@10"]
#: gpukit's core dependencies besides torch; the evaluation paths import pyarrow.
CORE = ("numpy", "pyarrow", "tqdm")
#: Rows per step when writing or reading the host-streamed stage's corpus file.
FILE_STEP = 262_144


class Skip(Exception):
    """A stage (or one of its parts) that cannot run here; the message says why."""


@dataclass
class Report:
    stage: str
    device: str
    dry_run: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, what: str, value: float | int | str | None, unit: str = "", note: str = "") -> None:
        self.rows.append({"what": what, "value": value, "unit": unit, "note": note})
        shown = f"{value:.6g}" if isinstance(value, float) else value
        print(f"  {what}: {shown} {unit} {note}".rstrip(), flush=True)

    def fail(self, message: str) -> None:
        self.failures.append(message)
        print(f"  FAILED: {message}", flush=True)


@dataclass(frozen=True)
class Sizes:
    """Problem sizes: the real check's, or the dry run's tiny ones."""

    kernels: tuple[tuple[int, int], ...]
    update: tuple[int, int]
    search_docs: tuple[int, ...]
    dim: int
    search_queries: int
    search_k: int
    matmul_n: int
    copy_bytes: int
    budget_update: tuple[int, int]
    graph_update: tuple[int, int]
    stats: tuple[int, int, int]
    repeats: int
    streamed_docs: int
    streamed_budget: int


REAL = Sizes(
    kernels=((10_000, 100), (1_000_000, 100), (10_000, 1000)),
    update=(1024, 100_000),
    search_docs=(1_000_000, 8_800_000),
    dim=768,
    search_queries=1024,
    search_k=100,
    matmul_n=8192,
    copy_bytes=2**31,
    budget_update=(256, 20_000),
    graph_update=(1024, 100_000),
    stats=(10_000, 10_000, 5),
    repeats=10,
    streamed_docs=2_000_000,  # 3.1 GB of bf16 at d = 768: ~29 blocks of the 1 GiB budget
    streamed_budget=2**30,
)
DRY = Sizes(
    kernels=((100, 10), (1000, 10), (100, 100)),
    update=(32, 2000),
    search_docs=(2000, 8800),
    dim=32,
    search_queries=16,
    search_k=10,
    matmul_n=64,
    copy_bytes=2**20,
    budget_update=(8, 500),
    graph_update=(8, 500),
    stats=(200, 200, 3),
    repeats=2,
    streamed_docs=3000,
    streamed_budget=200_000,
)


# ------------------------------------------------------------------ helpers
def missing_modules(names: tuple[str, ...]) -> list[str]:
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(fn: Callable[[], Any], device: torch.device, repeats: int, warmup: int = 1) -> float:
    """Median wall time of ``fn()``: CUDA events on CUDA, perf_counter on CPU."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            began = time.perf_counter()
            fn()
            times.append(time.perf_counter() - began)
    return statistics.median(times)


@contextlib.contextmanager
def no_sync_allowed(device: torch.device) -> Iterator[str]:
    """Any host synchronisation inside raises (CUDA); on CPU nothing is guarded."""
    if device.type != "cuda":
        yield "unguarded (sync debug mode needs CUDA)"
        return
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield 'torch.cuda.set_sync_debug_mode("error")'
    finally:
        torch.cuda.set_sync_debug_mode(previous)


def random_ranking(queries: int, depth: int, device: torch.device, judged: int = 15, seed: int = 0):
    """A (queries, depth) judged ranking built directly on ``device`` (no host data)."""
    from gpukit.ranking import RankedJudgments

    g = torch.Generator(device=device).manual_seed(seed)
    grades = torch.randint(-1, 4, (queries, depth), generator=g, device=device, dtype=torch.int32)
    ideal = torch.randint(0, 4, (queries, judged), generator=g, device=device, dtype=torch.int32)
    ideal = torch.sort(ideal, dim=1, descending=True).values
    return RankedJudgments(
        query_ids=[""] * queries,
        grades=grades,
        num_ret=torch.full((queries,), depth, dtype=torch.int64, device=device),
        ideal=ideal,
        in_run=torch.ones(queries, dtype=torch.bool, device=device),
        run_queries_not_in_qrels=0,
    )


def dense_batch(rows: int, candidates: int, device: torch.device, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random scores and 20 relevant candidates per row (grades 1-2), made on ``device``."""
    g = torch.Generator(device=device).manual_seed(seed)
    scores = torch.randn(rows, candidates, generator=g, device=device)
    targets = torch.zeros(rows, candidates, dtype=torch.int8, device=device)
    columns = torch.randint(0, candidates, (rows, min(20, candidates)), generator=g, device=device)
    grades = torch.randint(1, 3, columns.shape, generator=g, device=device, dtype=torch.int8)
    targets.scatter_(1, columns, grades)
    return scores, targets


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings: best matmul rate in ``dtype`` and best copy bandwidth."""

    matmul_flops_per_s: float
    matmul_n: int
    memory_bytes_per_s: float
    copy_bytes: int


def best_seconds(fn: Callable[[], Any], device: torch.device, repeats: int = 5) -> float:
    """Fastest of ``repeats`` timed calls after one warm-up (a ceiling, not a typical time)."""
    return min(median_seconds(fn, device, 1, warmup=1 if i == 0 else 0) for i in range(repeats))


def ceilings(device: torch.device, sizes: Sizes, dtype: torch.dtype) -> Ceilings:
    """The probes behind the fractions (own code: gpukit.efficiency would need pyarrow).

    Matmul: an (n, n) @ (n, n) product, ``2 n^3`` FLOPs. Copy: ``dst.copy_(src)``,
    ``2 * bytes`` moved (read + write).
    """
    n = sizes.matmul_n
    g = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, generator=g, device=device).to(dtype)
    b = torch.randn(n, n, generator=g, device=device).to(dtype)
    matmul = 2 * n**3 / best_seconds(lambda: a @ b, device)
    del a, b
    src = torch.ones(sizes.copy_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    copy = 2 * src.numel() * 4 / best_seconds(lambda: dst.copy_(src), device)
    return Ceilings(matmul, n, copy, src.numel() * 4)


# ------------------------------------------------------------------- stages
def stage_env(report: Report, device: torch.device, sizes: Sizes) -> None:
    report.add("torch", torch.__version__, note=f"CUDA {torch.version.cuda}, available {torch.cuda.is_available()}")
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        report.add("device", p.name, note=f"cc {p.major}.{p.minor}, {p.total_memory / 2**30:.1f} GiB")
    report.add("python", sys.version.split()[0])
    try:
        smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout.strip()
        report.add("nvidia-smi -L", smi.replace("\n", "; ") or "(no output)")
    except (OSError, subprocess.SubprocessError) as exc:
        report.add("nvidia-smi -L", "not available", note=type(exc).__name__)
    for name in CORE + ("pytest", "faiss", "triton", "pytrec_eval", "ranx", "torchmetrics", "scipy", "hypothesis"):
        try:
            module = importlib.import_module(name)
            extra = f" gpu={hasattr(module, 'StandardGpuResources')}" if name == "faiss" else ""
            report.add(name, str(getattr(module, "__version__", "present")) + extra)
        except Exception as exc:  # noqa: BLE001 - any import failure means absent here
            core = " (a core dependency of gpukit: pip install it)" if name in CORE else ""
            report.add(name, "ABSENT", note=f"{type(exc).__name__}{core}")
            if name in CORE:
                report.notes.append(f"{name} is missing: the gpukit stages that import it are skipped")


def stage_cuda_tests(report: Report, device: torch.device, sizes: Sizes) -> None:
    if missing_modules(("pytest",)):
        raise Skip("pytest is not installed")
    target = [os.path.join(REPO, "tests", "stats", "test_stats_cuda.py")] if report.dry_run else [os.path.join(REPO, "tests")]
    command = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", *target, "-p", "no:cacheprovider",
               "--continue-on-collection-errors", "-o", "addopts=-ra"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    print(done.stdout[-6000:], done.stderr[-2000:], sep="\n", flush=True)
    tail = [line for line in done.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
    report.add("pytest -m cuda", tail[0].strip("= "), note=f"rc {done.returncode}")
    if done.returncode not in (0, 5):  # 5: nothing collected
        report.fail(f"pytest -m cuda exited {done.returncode}: {tail[0]}")


def stage_kernels(report: Report, device: torch.device, sizes: Sizes) -> None:
    from gpukit.evaluation import compute_measures
    from gpukit.measures import parse_measures

    probe = ceilings(device, sizes, torch.float32)
    report.add("copy bandwidth", probe.memory_bytes_per_s / 1e9, "GB/s", f"best dst.copy_(src) of {probe.copy_bytes} B, read + write")
    measures = parse_measures(SIX)
    for queries, depth in sizes.kernels:
        ranking = random_ranking(queries, depth, device)
        seconds = median_seconds(lambda: compute_measures(ranking, measures), device, sizes.repeats)
        read_once = sum(t.numel() * t.element_size() for t in (ranking.grades, ranking.ideal, ranking.num_ret, ranking.in_run))
        fraction = read_once / seconds / probe.memory_bytes_per_s
        report.add(f"six measures {queries}x{depth}", queries / seconds, "queries/s",
                   f"median {seconds * 1e3:.3f} ms; inputs once = {fraction:.3f} of copy bandwidth")
        del ranking


def stage_update(report: Report, device: torch.device, sizes: Sizes) -> None:
    from gpukit.pipelines import RetrievalEvaluator

    rows, candidates = sizes.update
    scores, targets = dense_batch(rows, candidates, device, seed=1)
    cases = (("cutoffs", CUTOFF_MEASURES), ("cutoffs + AP", CUTOFF_MEASURES + ["AP"]),
             ("cutoffs + uncut AP, nDCG (the budget's six)", CUTOFF_MEASURES + ["AP", "nDCG"]))
    for label, measures in cases:
        evaluator = RetrievalEvaluator(measures, device=device)
        seconds = median_seconds(lambda: evaluator.update(scores, targets), device, sizes.repeats)
        report.add(f"update {rows}x{candidates} {label}", seconds * 1e3, "ms", "median per batch")


def stage_search(report: Report, device: torch.device, sizes: Sizes) -> None:
    from gpukit.index import ExactIndex

    probe = ceilings(device, sizes, torch.bfloat16)
    report.add("bf16 matmul rate", probe.matmul_flops_per_s / 1e12, "TFLOP/s", f"best of {probe.matmul_n}^3 bf16 matmuls")
    d, q, k = sizes.dim, sizes.search_queries, sizes.search_k
    g = torch.Generator(device=device).manual_seed(3)
    queries = torch.randn(q, d, generator=g, device=device)
    block = 1_000_000
    for n in sizes.search_docs:
        needed = n * d * 2 * 2.3  # stored bf16 corpus, one transient copy on concatenation, margin
        if device.type == "cuda" and torch.cuda.mem_get_info(device)[0] < needed:
            report.add(f"exact bf16 N={n:,}", "SKIPPED", note=f"needs ~{needed / 2**30:.0f} GiB free on the device")
            continue
        index = ExactIndex(d, dtype="bf16", device=device)
        for start in range(0, n, block):
            index.add(torch.randn(min(block, n - start), d, generator=g, device=device, dtype=torch.bfloat16))
        seconds = median_seconds(lambda: index.search(queries, k), device, max(3, sizes.repeats // 3))
        rate = 2 * q * n * d / seconds
        report.add(f"exact bf16 N={n:,} d={d}", q / seconds, "queries/s",
                   f"median {seconds * 1e3:.2f} ms for {q} queries, k={k}; matmul {rate / 1e12:.1f} TFLOP/s "
                   f"= {rate / probe.matmul_flops_per_s:.3f} of the bf16 rate")
        del index
        if device.type == "cuda":
            torch.cuda.empty_cache()


def stage_budgets(report: Report, device: torch.device, sizes: Sizes) -> None:
    from gpukit.evaluation import compute_measures
    from gpukit.index import ExactIndex
    from gpukit.measures import parse_measures
    from gpukit.pipelines import RetrievalEvaluator
    from gpukit.stats.resampling import bootstrap_draws, sign_flips

    ranking = random_ranking(10_000 if not report.dry_run else 100, 1000 if not report.dry_run else 50, device)
    measures = parse_measures(SIX)
    rows, candidates = sizes.budget_update
    scores, targets = dense_batch(rows, candidates, device, seed=2)
    evaluator = RetrievalEvaluator(SIX[:4] + ["AP", "nDCG"], device=device)
    index = ExactIndex(64, dtype="bf16", device=device)
    index.add(torch.randn(20_000, 64, device=device))
    queries = torch.randn(64, 64, device=device)
    workloads = {
        "compute_measures (six measures)": lambda: compute_measures(ranking, measures),
        "RetrievalEvaluator.update (uncut AP, nDCG)": lambda: evaluator.update(scores, targets),
        "ExactIndex.search bf16": lambda: index.search(queries, 10),
        "bootstrap_draws": lambda: bootstrap_draws(0, 0, 256, 10_000, device),
        "sign_flips": lambda: sign_flips(0, 0, 256, 10_000, device),
    }
    for name, fn in workloads.items():
        fn()  # first calls may copy tables to the device (once per device)
        synchronize(device)
        try:
            with no_sync_allowed(device) as guard:
                fn()
            report.add(name, "no host sync" if device.type == "cuda" else "ran", note=guard)
        except Exception as exc:  # noqa: BLE001 - the sync debug mode raises RuntimeError
            report.fail(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        synchronize(device)
    budget_from_topk(report, device, small=report.dry_run)


def budget_from_topk(report: Report, device: torch.device, small: bool) -> None:
    """Run.from_topk reads all its checks back at once: 1 sync (CPU-proved
    in tests/data/test_run_device_copies.py), counted here with the "warn" mode."""
    import warnings

    import pyarrow as pa

    from gpukit.data.run import Run

    queries, depth, docs = (8, 10, 200) if small else (256, 100, 5000)
    keys = pa.array([f"doc-{i}" for i in range(docs)])
    scores = torch.rand(queries, depth, device=device)
    indices = torch.argsort(torch.rand(queries, docs, device=device), dim=1)[:, :depth]  # no repeats in a row
    query_ids = [f"q{i}" for i in range(queries)]
    Run.from_topk(scores, indices, query_ids, keys)  # first call copies the corpus key table
    synchronize(device)
    if device.type != "cuda":
        report.add("Run.from_topk syncs", "n/a", note="sync debug mode needs CUDA")
        return
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            Run.from_topk(scores, indices, query_ids, keys)
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    syncs = sum("synchroniz" in str(w.message) for w in caught)
    report.add("Run.from_topk syncs", syncs, note="expected 1 (all checks read back at once)")
    if syncs > 1:
        report.fail(f"Run.from_topk synchronised {syncs} times, budget 1")


def stage_graph(report: Report, device: torch.device, sizes: Sizes) -> None:
    from gpukit.pipelines import RetrievalEvaluator

    rows, candidates = sizes.graph_update
    measures = CUTOFF_MEASURES + ["AP"]
    batches = [dense_batch(rows, candidates, device, seed=10 + i) for i in range(4)]
    eager, replayed = RetrievalEvaluator(measures, device=device), RetrievalEvaluator(measures, device=device)
    static_scores, static_targets = batches[0][0].clone(), batches[0][1].clone()
    if device.type == "cuda":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture stream, as CUDA graphs need
            for _ in range(3):
                replayed.update(static_scores, static_targets)
        torch.cuda.current_stream().wait_stream(side)
        replayed.reset()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            replayed.update(static_scores, static_targets)
        replay: Callable[[], None] = graph.replay
        how = "captured with torch.cuda.graph, replayed"
    else:
        replay = lambda: replayed.update(static_scores, static_targets)  # noqa: E731
        how = "CPU dry run: no capture, the same call replayed"
    for scores, targets in batches:
        static_scores.copy_(scores)
        static_targets.copy_(targets)
        replay()
        eager.update(scores, targets)
    equal = torch.equal(eager.state, replayed.state)
    report.add("graph state == eager state", str(equal), note=how)
    if not equal:
        report.fail("replayed state differs from eager updates")
    report.add("replay", median_seconds(replay, device, sizes.repeats) * 1e3, "ms", f"{rows}x{candidates}")
    report.add("eager update", median_seconds(lambda: eager.update(static_scores, static_targets), device, sizes.repeats) * 1e3,
               "ms", f"{rows}x{candidates}")


def stage_stats(report: Report, device: torch.device, sizes: Sizes) -> None:
    from gpukit.stats import paired_bootstrap, paired_randomization_test

    queries, resamples, systems = sizes.stats
    g = torch.Generator().manual_seed(0)
    a = (torch.randint(0, 101, (systems, queries), generator=g).double() / 100).to(device)
    b = (torch.randint(0, 101, (queries,), generator=g).double() / 100).to(device)
    for name, fn in (("bootstrap", paired_bootstrap), ("randomization", paired_randomization_test)):
        seconds = median_seconds(lambda: fn(a, b, resamples, 0), device, max(2, sizes.repeats // 3))
        report.add(f"{name} {queries} queries x {resamples} resamples x {systems} systems", seconds, "s", "median")
    cpu = paired_bootstrap(a.cpu(), b.cpu(), min(resamples, 2000), 1, device="cpu")
    here = paired_bootstrap(a, b, min(resamples, 2000), 1, device=device)
    same = all(torch.equal(getattr(cpu, f), getattr(here, f)) for f in ("ci_low", "ci_high", "p_value", "count"))
    report.add("bootstrap CPU == device", str(same))
    if not same:
        report.fail("bootstrap results differ between the CPU and the device")


def write_bf16_corpus(path: str, n: int, d: int, device: torch.device, seed: int) -> None:
    """Gaussian rows rounded to bf16, made on ``device`` in steps, saved as a
    ``.npy`` of their bit patterns (the file HostStreamedIndex maps)."""
    import numpy as np

    g = torch.Generator(device=device).manual_seed(seed)
    stored = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint16, shape=(n, d))
    for start in range(0, n, FILE_STEP):
        rows = torch.randn(min(FILE_STEP, n - start), d, generator=g, device=device).to(torch.bfloat16)
        stored[start : start + rows.shape[0]] = rows.view(torch.int16).cpu().numpy().view(np.uint16)
    stored.flush()
    del stored


def add_bf16_file(index: Any, path: str, device: torch.device) -> None:
    """Add the rows of a ``write_bf16_corpus`` file to an in-memory index, in steps."""
    import numpy as np

    bits = np.load(path, mmap_mode="r")
    for start in range(0, bits.shape[0], FILE_STEP):
        rows = torch.from_numpy(np.ascontiguousarray(bits[start : start + FILE_STEP]).view(np.int16))
        index.add(rows.view(torch.bfloat16).to(device))


def host_to_device_rate(device: torch.device, nbytes: int, pinned: bool) -> float:
    """Best bytes/s of one host-to-device copy of ``nbytes`` (pinned: non-blocking)."""
    host = torch.ones(nbytes, dtype=torch.uint8, pin_memory=pinned)
    target = torch.empty(nbytes, dtype=torch.uint8, device=device)
    return nbytes / best_seconds(lambda: target.copy_(host, non_blocking=pinned), device)


def count_syncs(fn: Callable[[], Any], device: torch.device) -> int | str:
    """Host synchronisations ``fn`` makes, as torch's sync debug mode ("warn") reports them."""
    import warnings

    if device.type != "cuda":
        return "n/a"
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    return sum("synchroniz" in str(w.message) for w in caught)


def stage_streamed(report: Report, device: torch.device, sizes: Sizes) -> None:
    import tempfile

    from gpukit.index import ExactIndex
    from gpukit.index.streamed import HostStreamedIndex

    n, d, q, k, budget = sizes.streamed_docs, sizes.dim, sizes.search_queries, sizes.search_k, sizes.streamed_budget
    queries = torch.randn(q, d, generator=torch.Generator(device=device).manual_seed(4), device=device)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.npy")
        write_bf16_corpus(path, n, d, device, seed=5)
        overlapped = HostStreamedIndex(path, dtype="bf16", device=device, max_memory=budget, overlap=True)
        overlapped.search(queries, k)  # plans the blocks; the file is in the page cache since it was written
        plan = overlapped.last_plan
        blocks = {"chunk_size": plan.corpus_chunk, "query_batch_size": plan.query_batch}
        synchronous = HostStreamedIndex(path, dtype="bf16", device=device, max_memory=budget, overlap=False, **blocks)
        in_memory = ExactIndex(d, dtype="bf16", device=device)
        same_blocks = ExactIndex(d, dtype="bf16", device=device, **blocks)
        for index in (in_memory, same_blocks):
            add_bf16_file(index, path, device)
        file_bytes = os.path.getsize(path)
        report.add("blocks", f"{plan.corpus_chunk} rows x {plan.query_batch} queries",
                   note=f"{-(-n // plan.corpus_chunk)} blocks of a {file_bytes / 1e9:.2f} GB bf16 file, budget {budget} B")
        report.add("accounted device bytes", overlapped.device_bytes(q, k), "B",
                   f"overlap; synchronous: {synchronous.device_bytes(q, k, plan, overlapped=False)} B")
        searches = {
            "in_memory": lambda: in_memory.search(queries, k),
            "in_memory_same_blocks": lambda: same_blocks.search(queries, k),
            "streamed_overlap": lambda: overlapped.search(queries, k),
            "streamed_sync": lambda: synchronous.search(queries, k),
        }
        want = searches["in_memory_same_blocks"]()
        for name in ("streamed_overlap", "streamed_sync"):
            got = searches[name]()
            equal = bool(torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]))
            report.add(f"{name} == ExactIndex (same blocks)", str(equal), note="scores and positions, bit for bit")
            if not equal:
                report.fail(f"{name} differs from ExactIndex with the same blocks")
        if device.type == "cuda":
            synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            overlapped.search(queries, k)
            synchronize(device)
            peak = torch.cuda.max_memory_allocated(device) - before
            report.add("peak device bytes, overlapped search", peak, "B", f"budget {budget} B")
            if peak > budget:
                report.fail(f"overlapped search peaked at {peak} device bytes, over the budget of {budget}")
        seconds = {name: median_seconds(fn, device, sizes.repeats) for name, fn in searches.items()}
        for name, s in seconds.items():
            report.add(name, q / s, "queries/s", f"median {s * 1e3:.3g} ms; corpus bytes at {file_bytes / s / 1e9:.3g} GB/s")
        report.add("overlap / sync", seconds["streamed_overlap"] / seconds["streamed_sync"], "x", "time ratio, same blocks")
        report.add("streamed_overlap / in_memory", seconds["streamed_overlap"] / seconds["in_memory"], "x", "time ratio")
        for name in ("streamed_overlap", "streamed_sync"):
            report.add(f"host syncs, {name}", count_syncs(searches[name], device), note='torch.cuda.set_sync_debug_mode("warn")')
    if device.type == "cuda":
        probe = min(file_bytes, 2**30)
        for pinned in (True, False):
            rate = host_to_device_rate(device, probe, pinned)
            report.add(f"H2D copy probe, {'pinned' if pinned else 'pageable'}", rate / 1e9, "GB/s", f"best of {probe} B copies")
    else:
        report.add("H2D copy probe", "n/a", note="CPU dry run: no host-to-device copy")


STAGES: dict[str, tuple[Callable[[Report, torch.device, Sizes], None], tuple[str, ...]]] = {
    "env": (stage_env, ()),
    "cuda_tests": (stage_cuda_tests, ()),
    "kernels": (stage_kernels, CORE),
    "update": (stage_update, CORE),
    "search": (stage_search, ("numpy", "tqdm")),
    "budgets": (stage_budgets, CORE),
    "graph": (stage_graph, CORE),
    "stats": (stage_stats, ("numpy", "tqdm")),
    "streamed": (stage_streamed, ("numpy", "tqdm")),
}


def run_stage(name: str, out: str, dry_run: bool) -> dict[str, Any]:
    """Run one stage, write ``out/name.json`` and return what was written."""
    function, needs = STAGES[name]
    device = torch.device("cpu" if dry_run else "cuda")
    report = Report(name, str(device), dry_run)
    began = time.perf_counter()
    status, note = "ok", ""
    try:
        if not dry_run and name not in ("env", "cuda_tests") and not torch.cuda.is_available():
            raise Skip("no CUDA device (use --cpu-dry-run to test the plumbing on CPU)")
        missing = missing_modules(needs)
        if missing:
            raise Skip(f"{', '.join(missing)} missing (core dependencies of gpukit: pip install {' '.join(missing)})")
        function(report, device, DRY if dry_run else REAL)
        if report.failures:
            status, note = "failed", "; ".join(report.failures)
    except Skip as exc:
        status, note = "skipped", str(exc)
    except Exception as exc:  # noqa: BLE001 - one stage's crash must not lose its report
        traceback.print_exc()
        status, note = "failed", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    result = {
        "stage": name, "device": report.device, "dry_run": dry_run, "status": status,
        "note": "; ".join(filter(None, [note, *report.notes])), "seconds": round(time.perf_counter() - began, 3),
        "rows": report.rows,
    }
    with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2)
    print(f"{name}: {status}{' (' + result['note'] + ')' if result['note'] else ''}", flush=True)
    return result


# ------------------------------------------------------------------ summary
def _cell(text: Any) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def write_summary(out: str, status_file: str, destination: str) -> str:
    """``summary.md``: one row per stage (shell status, seconds, JSON status), then each stage's figures."""
    rows = []
    if os.path.exists(status_file):
        with open(status_file, encoding="utf-8") as handle:
            rows = [line.rstrip("\n").split("\t") for line in handle if line.strip()]
    lines = ["# gpukit device check", ""]
    reports = {}
    for name, *_ in rows:
        path = os.path.join(out, f"{name}.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                reports[name] = json.load(handle)
    dry = any(r.get("dry_run") for r in reports.values())
    if dry:
        lines += ["**CPU dry run**: plumbing only, tiny sizes; no figure here is a GPU measurement.", ""]
    lines += ["| stage | run | seconds | result | note |", "|---|---|---:|---|---|"]
    for name, run_status, seconds, *rest in rows:
        report = reports.get(name, {})
        result = report.get("status", "see log" if os.path.exists(os.path.join(out, f"{name}.log")) else "-")
        note = report.get("note", "") or (rest[0] if rest else "")
        lines.append(f"| {name} | {_cell(run_status)} | {seconds} | {result} | {_cell(note)} |")
    for name, run_status, *_ in rows:
        log = os.path.join(out, f"{name}.log")
        if name in reports or not os.path.exists(log):
            continue
        with open(log, encoding="utf-8", errors="replace") as handle:
            tail = handle.read().splitlines()[-15:]
        lines += ["", f"## {name} (last lines of {name}.log)", "", "```", *tail, "```"]
    for name, report in reports.items():
        if not report.get("rows"):
            continue
        lines += ["", f"## {name} ({report['device']})", "", "| what | value | unit | note |", "|---|---:|---|---|"]
        for row in report["rows"]:
            value = row["value"]
            shown = f"{value:.4g}" if isinstance(value, float) else value
            lines.append(f"| {_cell(row['what'])} | {_cell(shown)} | {row['unit']} | {_cell(row['note'])} |")
    text = "\n".join(lines) + "\n"
    for folder in {out, destination}:
        with open(os.path.join(folder, "summary.md"), "w", encoding="utf-8") as handle:
            handle.write(text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=[*STAGES, "summary"])
    parser.add_argument("--out", required=True, help="folder for the stage's JSON")
    parser.add_argument("--cpu-dry-run", action="store_true", help="tiny sizes on the CPU (plumbing only)")
    parser.add_argument("--status", help="summary: the shell's stage status table (TSV)")
    parser.add_argument("--destination", help="summary: also write summary.md here")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.stage == "summary":
        print(write_summary(args.out, args.status or os.path.join(args.out, "status.tsv"), args.destination or args.out))
        return 0
    result = run_stage(args.stage, args.out, args.cpu_dry_run)
    return 1 if result["status"] == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
