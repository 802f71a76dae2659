"""What depends only on the qrels is built once per Qrels and reused by every run (Qrels.derived)."""
from __future__ import annotations

import random

import pytest
import pytrec_eval

import gpukit
from gpukit.data.run import Run
from gpukit.judgments.qrels import Qrels

MEASURES = ["nDCG@10", "P@10", "R@100", "AP", "Rprec", "RR"]
PYTREC_MEASURES = {"ndcg_cut.10", "P.10", "recall.100", "map", "Rprec", "recip_rank"}
PYTREC = {"ndcg_cut_10": "nDCG@10", "P_10": "P@10", "recall_100": "R@100", "map": "AP", "Rprec": "Rprec", "recip_rank": "RR"}


def _track(long_ids: bool, n_runs: int = 3, seed: int = 0):
    """Qrels and runs of a small track; doc ids over 8 bytes give vocabulary runs, short ones packed runs."""
    rng = random.Random(seed)
    doc = (lambda i: f"LA0101{i % 90 + 10}-{i:05d}") if long_ids else (lambda i: f"D{i}")
    topics = [str(301 + t) for t in range(12)]
    qrels = {t: {doc(rng.randrange(3000)): rng.choice([0, 0, 1, 2]) for _ in range(60)} for t in topics}
    runs = []
    for _ in range(n_runs):
        run = {}
        for t in topics[rng.randrange(2):]:  # some runs miss the first topic: another topic set
            docs = rng.sample(range(3000), 150) + [int(d.split("-")[-1]) if long_ids else int(d[1:]) for d in list(qrels[t])[:20]]
            run[t] = {doc(i): round(rng.random(), 2) for i in set(docs)}  # two decimals: ties
        runs.append(run)
    return qrels, runs


def _values(qrels: Qrels, run_dict: dict, complete: bool) -> dict:
    report = gpukit.evaluate(qrels, Run.from_dict(run_dict), MEASURES, convention="trec_eval", complete=complete)
    return {m: report[m].per_query.tolist() for m in MEASURES} | {"queries": report.query_ids}


@pytest.mark.parametrize("long_ids", [True, False])
def test_cached_results_equal_uncached_and_pytrec_eval(long_ids, monkeypatch):
    qrels_dict, runs = _track(long_ids)
    shared = Qrels.from_dict(qrels_dict)
    cached = [_values(shared, run, complete) for complete in (False, True) for run in runs]
    assert shared.cache_info()["hits"] > 0
    monkeypatch.setattr(Qrels, "derived", lambda self, key, make: make())  # no reuse at all
    fresh = Qrels.from_dict(qrels_dict)
    uncached = [_values(fresh, run, complete) for complete in (False, True) for run in runs]
    assert fresh.cache_info() == {"hits": 0, "misses": 0, "entries": 0}
    assert cached == uncached
    # And both agree with an independent evaluator (complete=False: pytrec_eval's topic set).
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_dict, set(PYTREC_MEASURES))
    for run, values in zip(runs, cached[: len(runs)]):
        per_query = evaluator.evaluate(run)
        for name, ours in PYTREC.items():
            theirs = [per_query[q][name] for q in values["queries"]]
            assert values[ours] == pytest.approx(theirs, abs=1e-12), name


@pytest.mark.parametrize("long_ids", [True, False])
def test_later_runs_only_hit_the_cache(long_ids):
    qrels_dict, runs = _track(long_ids, n_runs=4, seed=1)
    same_topics = [run for run in runs if len(run) == len(runs[0])]
    assert len(same_topics) >= 2  # the seed gives at least two runs over one topic set
    qrels = Qrels.from_dict(qrels_dict)
    _values(qrels, same_topics[0], complete=False)
    first = qrels.cache_info()
    assert first["hits"] == 0 and first["misses"] > 0
    for run in same_topics[1:]:
        _values(qrels, run, complete=False)
    later = qrels.cache_info()
    assert later["misses"] == first["misses"]  # nothing rebuilt for a run over the same topics
    assert later["hits"] == first["misses"] * (len(same_topics) - 1)


def test_cli_many_runs_reuse_the_qrels_derived_data(tmp_path, capsys, monkeypatch):
    """`gpukit eval QRELS RUN RUN RUN`: the second and third runs find everything built."""
    qrels_dict, runs = _track(True, n_runs=1, seed=2)
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels_dict.items() for d, g in docs.items()))
    run_path.write_text("".join(f"{q} Q0 {d} 0 {s} tag\n" for q, docs in runs[0].items() for d, s in docs.items()))
    made = []
    original = Qrels.from_trec.__func__

    def keep(cls, path):
        made.append(original(cls, path))
        return made[-1]

    monkeypatch.setattr(Qrels, "from_trec", classmethod(keep))
    from gpukit.cli import main

    assert main(["eval", str(qrels_path), str(run_path), str(run_path), str(run_path), "-m", "AP", "--format", "json"]) == 0
    info = made[0].cache_info()
    assert info["hits"] == 2 * info["misses"]
