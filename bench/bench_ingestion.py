"""Ingestion benchmarks: TREC files -> Qrels / Run -> report, and the kernels alone.

Run:  python -m pytest bench/bench_ingestion.py --benchmark-only
      GPUKIT_BENCH_QUERIES=100000 python -m pytest bench/bench_ingestion.py --benchmark-json=out.json

Setup (not timed): a synthetic qrels + run pair from ``bench/gen_synthetic.py``
(Q queries x K docs, ~20 graded judgments per query) written to a temporary
directory. Suites:

* ``parse_qrels``   ``Qrels.from_trec``
* ``parse_run``     ``Run.from_trec`` (and, for comparison, pandas' C engine
                    ``read_csv(sep=r"\\s+")`` + ``factorize`` producing the same
                    codes and sorted vocabularies)
* ``end_to_end``    file -> report: both readers + ``evaluate`` (six measures)
* ``kernel_only``   from in-memory tensors: ``evaluate`` (ranking + kernels), and
                    ``compute_measures`` on a formed ranking

``extra_info`` records lines/s or queries/s at the median. Environment:
``GPUKIT_BENCH_QUERIES`` (default 10000), ``GPUKIT_BENCH_DEPTH`` (default 100),
``GPUKIT_BENCH_DEVICE`` (default cpu; kernel suites only).
"""
from __future__ import annotations

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_synthetic import write_synthetic  # noqa: E402

import gpukit  # noqa: E402
from gpukit.judgments.qrels import Qrels  # noqa: E402
from gpukit.data.run import Run  # noqa: E402
from gpukit.device import resolve_device  # noqa: E402
from gpukit.evaluation import compute_measures  # noqa: E402
from gpukit.measures import parse_measures  # noqa: E402
from gpukit.ranking import form_ranking  # noqa: E402

QUERIES = int(os.environ.get("GPUKIT_BENCH_QUERIES", "10000"))
DEPTH = int(os.environ.get("GPUKIT_BENCH_DEPTH", "100"))
DEVICE = resolve_device(os.environ.get("GPUKIT_BENCH_DEVICE", "cpu"))
MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]
ROUNDS = 5


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_synthetic(tmp_path_factory.mktemp("ingestion"), QUERIES, DEPTH, seed=0)


@pytest.fixture(scope="module")
def loaded(files):
    qrels_path, run_path = files
    return Qrels.from_trec(qrels_path), Run.from_trec(run_path).to(DEVICE)


def _sync():
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)


def _rate(benchmark, what: str, count: int) -> None:
    if benchmark.stats is None:  # --benchmark-disable: run once, nothing timed
        return
    benchmark.extra_info[what] = count / benchmark.stats.stats.median
    benchmark.extra_info["queries"] = QUERIES
    benchmark.extra_info["depth"] = DEPTH


def test_parse_qrels(benchmark, files):
    qrels = benchmark.pedantic(Qrels.from_trec, args=(files[0],), rounds=ROUNDS, iterations=1, warmup_rounds=1)
    _rate(benchmark, "lines_per_s", len(qrels))


def test_parse_run(benchmark, files):
    run = benchmark.pedantic(Run.from_trec, args=(files[1],), rounds=ROUNDS, iterations=1, warmup_rounds=1)
    _rate(benchmark, "lines_per_s", QUERIES * DEPTH)
    assert run.num_queries == QUERIES


def test_parse_run_pandas_c_engine(benchmark, files):
    """The alternative parser, for the record: same output (codes + sorted vocabularies)."""
    pd = pytest.importorskip("pandas")

    def parse():
        df = pd.read_csv(files[1], sep=r"\s+", header=None, usecols=[0, 2, 4], names=["q", "q0", "d", "r", "s", "t"],
                         dtype={"q": str, "d": str, "s": "float64"}, engine="c")
        return pd.factorize(df["q"], sort=True), pd.factorize(df["d"], sort=True), df["s"].to_numpy()

    benchmark.pedantic(parse, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    _rate(benchmark, "lines_per_s", QUERIES * DEPTH)


def test_end_to_end(benchmark, files):
    def file_to_report():
        return gpukit.evaluate(Qrels.from_trec(files[0]), Run.from_trec(files[1]), MEASURES)

    report = benchmark.pedantic(file_to_report, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    _rate(benchmark, "queries_per_s", QUERIES)
    assert report["nDCG@10"].evaluated > 0


def test_kernel_only_evaluate(benchmark, loaded):
    qrels, run = loaded
    parsed = parse_measures(MEASURES)

    def run_eval():
        report = gpukit.evaluate(qrels, run, parsed)
        _sync()
        return report

    benchmark.pedantic(run_eval, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    _rate(benchmark, "queries_per_s", QUERIES)
    benchmark.extra_info["device"] = str(DEVICE)


def test_kernel_only_measures(benchmark, loaded):
    qrels, run = loaded
    parsed = parse_measures(MEASURES)

    def setup():  # a fresh ranking each round, so no cached mask is reused across rounds
        return (form_ranking(qrels, run, complete=True), parsed), {}

    def kernels(ranking, measures):
        out = compute_measures(ranking, measures)
        _sync()
        return out

    benchmark.pedantic(kernels, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    _rate(benchmark, "queries_per_s", QUERIES)
    benchmark.extra_info["device"] = str(DEVICE)
