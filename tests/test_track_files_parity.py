"""TREC-shaped files, read as ``gpukit eval`` reads them, against pytrec_eval.

The everyday path end to end: qrels and run *files* through
``read_trec_files`` (the read-ahead worker, two runs against one Qrels, so
the second evaluation reuses the qrels' derived tables), then
``gpukit.evaluate`` with trec_eval's convention. Each seed draws:

* doc ids of one or two TREC styles, so that the run's and the qrels' ids
  take every key space: packed (at most 8 bytes), radix (``LA010189-0001``,
  ``FBIS3-01234``, ClueWeb-like; two alphabets to translate between) and a
  sorted vocabulary (random bytes of up to 20);
* 1 to 120 topics, rankings 1 to 1,500 deep, some topics only in the run or
  only in the qrels, graded and negative grades, relevance level 1 or 2;
* scores with many ties and some extremes (+-inf, +-1e300, 5e-324, -0.0,
  3.4e38, 1e-45), files shuffled (interleaved topics) or not, runs gzipped or
  not.

pytrec_eval reads scores as float, so gpukit runs with ``score_dtype=float32``;
per-query values must agree to 1e-9.
"""
from __future__ import annotations

import gzip
import random

import pytest
import torch

import gpukit
from gpukit.data.trec_files import read_trec_files
from test_pytrec_eval_parity import NAMES, PYTREC_MEASURES  # pytrec_eval's names -> gpukit's

pytrec_eval = pytest.importorskip("pytrec_eval")

EXTREME_SCORES = [float("inf"), float("-inf"), 1e300, -1e300, 5e-324, -0.0, 3.4e38, 1e-45]


def _doc_id(rng: random.Random, style: int) -> str:
    if style == 0:
        return f"D{rng.randrange(10 ** rng.randint(1, 7))}"  # packed: at most 8 bytes
    if style == 1:
        return f"LA{rng.randint(10000, 129999):06d}-{rng.randint(0, 9999):04d}"
    if style == 2:
        return "".join(rng.choice("abcXYZ-_019") for _ in range(rng.randint(1, 20)))
    if style == 3:
        return f"FBIS{rng.randint(3, 4)}-{rng.randint(0, 99999):05d}"
    return f"clueweb12-{rng.randint(0, 1999):04d}wb-{rng.randint(0, 99):02d}-{rng.randint(0, 99999):05d}"


def _track(seed: int) -> tuple[dict, dict, random.Random]:
    rng = random.Random(seed)
    first = rng.randrange(5)
    styles = (first, first if rng.random() < 0.6 else rng.randrange(5))  # mostly one collection's style
    pool = sorted({_doc_id(rng, rng.choice(styles)) for _ in range(rng.randint(5, 2500))})
    topics = {str(rng.randint(1, 5000)) if rng.random() < 0.8 else _doc_id(rng, 2) for _ in range(rng.choice([1, 3, 40, 120]))}
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for topic in sorted(topics):
        if not run or rng.random() < 0.9:  # the first topic has both sides
            retrieved = rng.sample(pool, min(len(pool), rng.randint(1, rng.choice([1, 5, 50, 1500]))))
            decimals = rng.choice([0, 1, 2, 6])  # few decimals: many ties
            run[topic] = {d: round(rng.random() * rng.choice([1, 30]), decimals) if rng.random() < 0.95
                          else rng.choice(EXTREME_SCORES) for d in retrieved}
        if not qrels or rng.random() < 0.85:
            judged = rng.sample(list(run.get(topic, {})), len(run.get(topic, {})) // 2)
            judged += rng.sample(pool, min(len(pool), rng.randint(1, 100)))
            qrels[topic] = {d: rng.choices([0, 1, 2, 3, -1, 4], [8, 3, 2, 1, 1, 1])[0] for d in judged}
    return qrels, run, rng


@pytest.mark.parametrize("seed", range(16))
def test_track_files_match_pytrec_eval(tmp_path, seed):
    qrels, run, rng = _track(seed)
    judged = [f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()]
    retrieved = [f"{q} Q0 {d} {rank} {s!r} tag\n" for q, docs in run.items() for rank, (d, s) in enumerate(docs.items(), 1)]
    if rng.random() < 0.3:
        rng.shuffle(judged)
    if rng.random() < 0.3:
        rng.shuffle(retrieved)
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("".join(judged))
    run_path = tmp_path / ("run.txt.gz" if rng.random() < 0.3 else "run.txt")
    with (gzip.open if run_path.suffix == ".gz" else open)(run_path, "wt") as fh:
        fh.write("".join(retrieved))
    level = rng.choice([1, 2])
    expected = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=level).evaluate(run)
    measures = gpukit.parse_measures(list(NAMES.values()), rel=level)
    parsed, runs = read_trec_files(qrels_path, [run_path, run_path])
    for each in runs:
        report = gpukit.evaluate(parsed, each, measures, convention="trec_eval", relevance_level=level, score_dtype=torch.float32)
        assert report.query_ids == sorted(expected)
        for key, measure in zip(NAMES, measures):
            got = dict(zip(report.query_ids, report[measure].per_query.tolist()))
            for topic in report.query_ids:
                assert got[topic] == pytest.approx(expected[topic][key], abs=1e-9), (key, topic)
