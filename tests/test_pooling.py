"""gpukit.pool, gpukit.coverage and ``gpukit pool`` against trectools and the definition.

trectools (``TrecPoolMaker.make_pool(strategy="topX")``, ``TrecPool.check_coverage``,
``TrecRun.check_qrel_coverage``, ``TrecEval.get_unjudged``) reads its run files
sorted by score descending and docno *ascending*; gpukit ranks as trec_eval
(docno descending on ties). The pool comparisons use runs whose tied scores
are first made distinct (derived files, written at test time), where both
orders agree; tied runs are checked against a plain-Python pool in
trec_eval's order, and ``get_unjudged`` (which sorts as trec_eval) on the
tied runs as they are.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gpukit
from gpukit.cli import main
from gpukit.errors import UsageError

DATA = Path(__file__).parent / "data"
TRECTOOLS_RUNS = [DATA / "stats" / f"r{i}.run" for i in range(1, 5)]
TRECTOOLS_QRELS = DATA / "stats" / "qrel1.txt"
UIC = DATA / "trectools" / "input.uic0301_top30"
TREC_EVAL_RUNS = [DATA / "trec_eval" / "results.test", DATA / "trec_eval" / "results.trunc"]
TREC_EVAL_QRELS = DATA / "trec_eval" / "qrels.test"
DEPTHS = [1, 2, 3, 5, 10, 25, 100]

trectools = pytest.importorskip("trectools")
# trectools' own use of pandas (sort_values(inplace=True)) warns under recent pandas.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword")


def _lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


def _untied(path: Path, out: Path, reverse: bool = False, untie: bool = True) -> Path:
    """``path`` in six columns (trectools reads no more) with every score made
    distinct (ties spread by 1e-9 steps in file order, far below the files'
    6-decimal spacing), scores negated when ``reverse`` (another system over
    the same documents)."""
    seen: dict[tuple[str, float], int] = {}
    rows = []
    for q, q0, d, rank, score, tag, *_ in _lines(path):
        s = float(score)
        n = seen.get((q, s), 0)
        seen[(q, s)] = n + 1
        s -= n * 1e-9 if untie else 0
        rows.append(f"{q} {q0} {d} {rank} {(-s if reverse else s)!r} {tag}")
    out.write_text("\n".join(rows) + "\n")
    return out


def _reference_pool(paths: list[Path], depth: int) -> tuple[dict[str, set[str]], list[set[tuple[str, str]]]]:
    """The pool from the definition: each run's top ``depth`` per query in
    trec_eval's order (score desc, docno desc), and each run's pairs."""
    per_run = []
    for path in paths:
        by_q: dict[str, list[tuple[float, str]]] = {}
        for q, _, d, _, score, *_ in _lines(path):
            by_q.setdefault(q, []).append((float(score), d))
        pairs = set()
        for q, docs in by_q.items():
            ranked = sorted(docs, key=lambda sd: (sd[0], sd[1].encode()), reverse=True)[:depth]
            pairs |= {(q, d) for _, d in ranked}
        per_run.append(pairs)
    pool: dict[str, set[str]] = {}
    for pairs in per_run:
        for q, d in pairs:
            pool.setdefault(q, set()).add(d)
    return pool, per_run


def _run_sets(tmp_path: Path) -> dict[str, list[Path]]:
    return {
        "trectools": TRECTOOLS_RUNS,
        "uic": [UIC, _untied(UIC, tmp_path / "uic.reversed", reverse=True)],
        "trec_eval": [_untied(p, tmp_path / (p.name + ".untied")) for p in TREC_EVAL_RUNS],
    }


@pytest.mark.parametrize("depth", DEPTHS)
def test_pool_equals_trectools_topx_pool(depth, tmp_path):
    maker = trectools.TrecPoolMaker()
    for name, paths in _run_sets(tmp_path).items():
        expected = maker.make_pool([trectools.TrecRun(str(p)) for p in paths], strategy="topX", topX=depth).pool
        got = gpukit.pool([gpukit.Run.from_trec(p) for p in paths], depth=depth)
        assert got.to_dict() == {str(q): set(docs) for q, docs in expected.items()}, name
        assert len(got) == sum(len(v) for v in expected.values())


@pytest.mark.parametrize("depth", DEPTHS)
def test_tied_runs_pool_contributions_and_unique_documents_follow_the_definition(depth):
    paths = TREC_EVAL_RUNS + [DATA / "stats" / "results.test", DATA / "cacm" / "run.cacm-bm25.anserini.txt"]
    pool = gpukit.pool([gpukit.Run.from_trec(p) for p in paths], depth=depth)
    expected, per_run = _reference_pool(paths, depth)
    assert pool.to_dict() == expected
    assert list(pool.contributed) == [len(pairs) for pairs in per_run]
    for i, pairs in enumerate(per_run):
        others = set().union(*(p for j, p in enumerate(per_run) if j != i))
        alone = pairs - others
        assert pool.unique[i] == len(alone)
        got = {(q, d) for q, docs in pool.unique_to(i).items() for d in docs}
        assert got == alone
    assert pool.sizes() == {q: len(d) for q, d in expected.items()}
    assert set(pool.qrels.grades.tolist()) == {-1}


def test_pool_is_a_qrels_file_of_grade_minus_one(tmp_path):
    pool = gpukit.pool([gpukit.Run.from_trec(p) for p in TRECTOOLS_RUNS], depth=2)
    pool.save(tmp_path / "pool.txt")
    lines = _lines(tmp_path / "pool.txt")
    assert {(q, d) for q, _, d, _ in lines} == {(q, d) for q, docs in pool.to_dict().items() for d in docs}
    assert {(it, g) for _, it, _, g in lines} == {("0", "-1")}


@pytest.mark.parametrize("depth", DEPTHS)
def test_coverage_equals_trectools(depth, tmp_path):
    sets = _run_sets(tmp_path)
    cases = [(sets["trectools"], TRECTOOLS_QRELS), (sets["trec_eval"], TREC_EVAL_QRELS)]
    for paths, qrels_path in cases:
        qrels = gpukit.Qrels.from_trec(qrels_path)
        t_qrels = trectools.TrecQrel(str(qrels_path))
        runs = [gpukit.Run.from_trec(p) for p in paths]
        t_runs = [trectools.TrecRun(str(p)) for p in paths]
        pool = gpukit.pool(runs, depth=depth)
        t_pool = trectools.TrecPoolMaker().make_pool(t_runs, strategy="topX", topX=depth)
        for run, t_run in zip(runs, t_runs):
            cov = gpukit.coverage(run, qrels, depth=depth)
            assert cov.query_ids == sorted(t_run.topics())
            assert cov.judged.tolist() == t_run.check_qrel_coverage(t_qrels, topX=depth)
            # TrecPool.check_coverage: mean over the pool's topics of the run's top-k documents in the pool.
            in_pool = gpukit.coverage(run, pool, depth=depth)
            per_topic = dict(zip(in_pool.query_ids, in_pool.judged.tolist()))
            mean = sum(per_topic.get(q, 0) for q in pool.sizes()) / len(pool.sizes())
            assert mean == pytest.approx(t_pool.check_coverage(t_run, topX=depth), abs=1e-12)


@pytest.mark.parametrize("depth", DEPTHS)
def test_unjudged_at_k_equals_trectools_get_unjudged_on_tied_runs(depth, tmp_path):
    qrels = gpukit.Qrels.from_trec(TREC_EVAL_QRELS)
    t_qrels = trectools.TrecQrel(str(TREC_EVAL_QRELS))
    for path in [_untied(p, tmp_path / p.name, untie=False) for p in TREC_EVAL_RUNS]:
        run = gpukit.Run.from_trec(path)
        cov = gpukit.coverage(run, qrels, depth=depth)
        expected = trectools.TrecEval(trectools.TrecRun(str(path)), t_qrels).get_unjudged(depth=depth, per_query=True)
        expected = {str(q): float(v) for q, v in expected[f"UNJ@{depth}"].items()}
        assert dict(zip(cov.query_ids, cov.unjudged_at_k().tolist())) == pytest.approx(expected, abs=1e-12)
        # The documents left to judge are the top-k ones without a judgment, in rank order.
        judged = qrels.to_dict()
        for row, q in enumerate(run.query_id_list()):
            top = run.doc_ids_of_row(row)[:depth]
            assert cov.unjudged_docs()[q] == [d for d in top if judged.get(q, {}).get(d, -1) < 0]


def test_judged_at_k_is_gpukit_judged_measure():
    qrels = gpukit.Qrels.from_trec(TREC_EVAL_QRELS)
    run = gpukit.Run.from_trec(TREC_EVAL_RUNS[0])
    for depth in (5, 50):
        report = gpukit.evaluate(qrels, run, [f"Judged@{depth}"])
        cov = gpukit.coverage(run, qrels, depth=depth)
        assert cov.judged_at_k().tolist() == pytest.approx(report[f"Judged@{depth}"].per_query.tolist(), abs=1e-15)


def test_pool_cli_writes_the_pool_and_reports_contributions(tmp_path, capsys):
    out = tmp_path / "pool.txt.gz"
    assert main(["pool", *map(str, TRECTOOLS_RUNS), "--depth", "2", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    pool = gpukit.pool([gpukit.Run.from_trec(p) for p in TRECTOOLS_RUNS], depth=2)
    assert gpukit.Qrels.from_trec(out).to_dict() == pool.qrels.to_dict()
    assert err.strip() == pool.summary()
    for name, c, u in zip(pool.run_names, pool.contributed, pool.unique):
        assert any(line.split() == [name, "contributed", str(c), "unique", str(u)] for line in err.splitlines())


def test_bad_depth_and_no_runs():
    run = gpukit.Run.from_trec(TRECTOOLS_RUNS[0])
    for depth in (0, -1, 1.5, True):
        with pytest.raises(UsageError):
            gpukit.pool([run], depth=depth)
        with pytest.raises(UsageError):
            gpukit.coverage(run, gpukit.Qrels.from_trec(TRECTOOLS_QRELS), depth=depth)
    with pytest.raises(UsageError):
        gpukit.pool([], depth=3)
