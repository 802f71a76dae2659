"""Per-query parity with a trec_eval binary, when one is available.

The binary is not shipped (CI has none, so these tests skip there); point
``TREC_EVAL`` at one, or put ``trec_eval`` on PATH, to run them. trec_eval
prints four decimals, so agreement means a difference of at most half a unit
in the last printed place.
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fixture_paths import TESTS
from trec_eval_names import to_gpukit

import gpukit

DATA = TESTS / "data"
BINARY = os.environ.get("TREC_EVAL") or shutil.which("trec_eval")
PRINTED = 5e-5 + 1e-9

pytestmark = pytest.mark.skipif(BINARY is None, reason="no trec_eval binary (set TREC_EVAL or put trec_eval on PATH)")

# What is asked of the binary, and the gpukit names its printed lines must map to.
GPUKIT_NAMES = {
    "AP", "P@5", "P@10", "P@100", "R@100", "R@1000", "Rprec", "RR", "nDCG", "nDCG@10", "nDCG@100",
    "Bpref", "Success@10", "NumRelRet", "NumRet", "NumRel",
}
REQUEST = ["map", "P.5,10,100", "recall.100,1000", "Rprec", "recip_rank", "ndcg", "ndcg_cut.10,100", "bpref", "success.10", "num_rel_ret", "num_ret", "num_rel"]

CASES = {
    "cacm": (DATA / "cacm/qrels.cacm.txt", DATA / "cacm/run.cacm-bm25.anserini.txt", [], {}),
    "trec_eval_test": (DATA / "trec_eval/qrels.test", DATA / "trec_eval/results.test", [], {}),
    # results.trunc lacks a judged query (so -c changes the means) and carries trailing junk columns.
    "complete": (DATA / "trec_eval/qrels.test", DATA / "trec_eval/results.trunc", ["-c"], {"complete": True}),
    "complete_max_depth": (DATA / "trec_eval/qrels.test", DATA / "trec_eval/results.trunc", ["-c", "-M", "100"], {"complete": True, "max_depth": 100}),
    "max_depth": (DATA / "trec_eval/qrels.test", DATA / "trec_eval/results.test", ["-M", "10"], {"max_depth": 10}),
    "relevance_level": (DATA / "trec_eval/qrels.rel_level", DATA / "trec_eval/results.test", ["-l", "2"], {"relevance_level": 2}),
    "stats_r1": (DATA / "stats/qrel1.txt", DATA / "stats/r1.run", [], {}),
    "stats_r3": (DATA / "stats/qrel1.txt", DATA / "stats/r3.run", [], {}),
}


def _trec_eval_per_query(qrels: Path, run: Path, flags: list[str]) -> dict[str, dict[str, float]]:
    cmd = [BINARY, "-q", *flags]
    for m in REQUEST:
        cmd += ["-m", m]
    out = subprocess.run(cmd + [str(qrels), str(run)], capture_output=True, text=True, check=True).stdout
    values: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for line in out.splitlines():
        measure, query, value = line.split()
        name = to_gpukit(measure)
        if name is not None:
            values[name][query] = float(value)
    return values


@pytest.mark.parametrize("case", sorted(CASES))
def test_per_query_and_means_match_the_binary(case: str) -> None:
    qrels_path, run_path, flags, options = CASES[case]
    expected = _trec_eval_per_query(qrels_path, run_path, flags)
    assert set(expected) == GPUKIT_NAMES
    names = list(expected)
    report = gpukit.evaluate(gpukit.Qrels.from_trec(qrels_path), gpukit.Run.from_trec(run_path), names, convention="trec_eval", **options)
    results = list(report.results.values())
    for name, result in zip(names, results):
        for query, want in expected[name].items():
            if query == "all":
                if name.startswith("Num"):
                    continue  # trec_eval sums the counts over queries; gpukit reports their mean
                got = result.mean
            else:
                i = report.query_ids.index(query)
                assert bool(result.mask[i]), (case, name, query)
                got = result.per_query[i].item()
            assert abs(got - want) <= PRINTED, (case, name, query, got, want)
