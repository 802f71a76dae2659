"""gpukit.stats.compare: values against scipy / plain Python, determinism, formats."""
from __future__ import annotations

import json
import statistics

import numpy as np
import pytest
import torch
from fixture_paths import TESTS

import gpukit
from gpukit.stats import (
    ComparisonSettings,
    ComparisonTable,
    StatsError,
    compare,
    compare_per_query,
    paired_bootstrap,
    paired_randomization_test,
    plot_differences,
)

DATA = TESTS / "data" / "stats"
MEASURES = ["nDCG@10", "AP", "P@5"]


def _collection(n_queries: int = 25, seed: int = 0):
    """Graded qrels (one query without relevant documents, so AP omits it) and
    three runs: a random baseline, a run that ranks by grade plus noise, and a
    reversed one. Scores are multiples of 1/64 (exact in float64)."""
    rng = np.random.default_rng(seed)
    qrels, runs = {}, {"base": {}, "better": {}, "worse": {}}
    for q in range(n_queries):
        qid = f"q{q:02d}"
        grades = rng.integers(0, 3, size=20) if q else np.zeros(20, dtype=int)
        qrels[qid] = {f"d{i}": int(g) for i, g in enumerate(grades)}
        noise = rng.integers(0, 64, size=20) / 64
        for name, score in (("base", noise), ("better", grades + 1.5 * noise), ("worse", -(grades + noise))):
            runs[name][qid] = {f"d{i}": float(s) for i, s in enumerate(score)}
    return gpukit.Qrels.from_dict(qrels), {n: gpukit.Run.from_dict(r, name=n) for n, r in runs.items()}


@pytest.fixture(scope="module")
def collection():
    return _collection()


@pytest.fixture(scope="module")
def per_query(collection):
    """Per-query values from gpukit.evaluate (independent of gpukit.stats), evaluated queries only."""
    qrels, runs = collection
    out = {}
    for name, run in runs.items():
        report = gpukit.evaluate(qrels, run, MEASURES, device="cpu")
        out[name] = {m: report[m].per_query[report[m].mask].numpy() for m in MEASURES}
    return out


def test_t_test_rows_match_scipy_and_plain_python(collection, per_query):
    scipy_stats = pytest.importorskip("scipy.stats")
    qrels, runs = collection
    table = compare(qrels, runs, MEASURES, test="t-test", correction="bonferroni", n_resamples=500, device="cpu")
    assert table.baseline == "base" and table.systems == ["base", "better", "worse"]
    for m in MEASURES:
        base = per_query["base"][m]
        assert table.row("base", m).mean == pytest.approx(base.mean(), abs=1e-12)
        assert table.row("base", m).n_queries == len(base) == len(table.query_ids[m])
        for s in ("better", "worse"):
            row, values = table.row(s, m), per_query[s][m]
            d = (values - base).tolist()
            raw = scipy_stats.ttest_rel(values, base).pvalue
            assert row.difference == pytest.approx(statistics.fmean(d), abs=1e-12)
            assert row.p_value_raw == pytest.approx(raw, abs=1e-10)
            assert row.p_value == pytest.approx(min(1.0, 2 * raw), abs=1e-10)
            assert row.significant == (row.p_value <= table.settings.alpha)
            assert row.effect_size == pytest.approx(statistics.fmean(d) / statistics.stdev(d), rel=1e-10)
            assert (row.wins, row.ties, row.losses) == (
                sum(x > 1e-12 for x in d), sum(abs(x) <= 1e-12 for x in d), sum(x < -1e-12 for x in d))
            assert row.ci_low <= row.difference <= row.ci_high
    # One query has no relevant document: AP omits it, P@5 keeps it.
    assert len(table.query_ids["AP"]) == 24 and len(table.query_ids["P@5"]) == 25


def test_wilcoxon_rows_match_scipy_with_holm(collection, per_query):
    scipy_stats = pytest.importorskip("scipy.stats")
    qrels, runs = collection
    table = compare(qrels, runs, ["AP"], test="wilcoxon", correction="holm", n_resamples=200, device="cpu")
    base = per_query["base"]["AP"]
    raw = [scipy_stats.wilcoxon(per_query[s]["AP"], base).pvalue for s in ("better", "worse")]
    low, high = sorted(raw)
    holm = {low: min(1.0, 2 * low), high: max(min(1.0, 2 * low), high)}  # m = 2
    for s, p in zip(("better", "worse"), raw):
        assert table.row(s, "AP").p_value_raw == pytest.approx(p, abs=1e-10)
        assert table.row(s, "AP").p_value == pytest.approx(holm[p], abs=1e-10)


def test_resampling_rows_equal_the_kernels(collection, per_query):
    qrels, runs = collection
    for test in ("randomization", "bootstrap"):
        table = compare(qrels, runs, MEASURES, test=test, correction=None, n_resamples=800, seed=3, device="cpu")
        for m in MEASURES:
            base = torch.from_numpy(per_query["base"][m])
            others = torch.from_numpy(np.stack([per_query[s][m] for s in ("better", "worse")]))
            boot = paired_bootstrap(others, base, 800, 3)
            perm = paired_randomization_test(others, base, 800, 3)
            expected = perm.p_value if test == "randomization" else boot.p_value
            for i, s in enumerate(("better", "worse")):
                row = table.row(s, m)
                assert (row.ci_low, row.ci_high) == (float(boot.ci_low[i]), float(boot.ci_high[i]))
                assert row.p_value == row.p_value_raw == float(expected[i])


def test_same_seed_same_table_and_chunking_does_not_matter(collection):
    qrels, runs = collection
    first = compare(qrels, runs, MEASURES, n_resamples=300, seed=7, device="cpu")
    again = compare(qrels, runs, MEASURES, n_resamples=300, seed=7, device="cpu", chunk_size=45)
    assert first.to_dict() == again.to_dict()


def test_baseline_choice_and_mapping_order(collection):
    qrels, runs = collection
    table = compare(qrels, runs, ["P@5"], baseline="worse", n_resamples=200, device="cpu")
    assert table.systems == ["worse", "base", "better"]
    assert table.row("worse", "P@5").is_baseline and table.row("worse", "P@5").difference is None
    assert table.row("better", "P@5").difference > 0
    from_sequence = compare(qrels, list(runs.values()), ["P@5"], n_resamples=200, device="cpu")
    assert from_sequence.baseline == "base"


def test_user_errors_are_stats_errors(collection):
    qrels, runs = collection
    with pytest.raises(StatsError):
        compare(qrels, {"base": runs["base"]}, ["AP"], device="cpu")
    with pytest.raises(StatsError):
        compare(qrels, runs, ["AP"], baseline="nope", device="cpu")
    with pytest.raises(StatsError):
        compare(qrels, runs, ["AP"], test="anova", device="cpu")
    with pytest.raises(StatsError):
        compare(qrels, runs, ["AP"], correction="hochberg", n_resamples=10, device="cpu")
    with pytest.raises(StatsError):
        compare(qrels, [runs["base"], runs["base"]], ["AP"], device="cpu")


def test_different_evaluated_queries_are_refused():
    nan = float("nan")
    scores = {"a": {"AP": [0.1, 0.2, nan, 0.4]}, "b": {"AP": [0.2, nan, 0.3, 0.1]}}
    with pytest.raises(StatsError, match="different"):
        compare_per_query(scores, device="cpu")


def test_different_topic_sets_are_refused():
    qrels = gpukit.Qrels.from_dict({"1": {"a": 1}, "2": {"b": 1}, "3": {"c": 1}})
    full = gpukit.Run.from_dict({"1": {"a": 1.0}, "2": {"b": 1.0}, "3": {"x": 1.0}}, name="full")
    partial = gpukit.Run.from_dict({"1": {"a": 1.0}, "2": {"x": 1.0}}, name="partial")
    with pytest.raises(StatsError, match="topic sets"):
        compare(qrels, [full, partial], ["P@1"], convention="trec_eval", device="cpu")


def test_per_query_entry_point_keeps_query_ids():
    scores = {"a": {"m": [0.5, 0.25, float("nan"), 1.0]}, "b": {"m": [0.25, 0.25, float("nan"), 0.5]}}
    table = compare_per_query(scores, ["x", "y", "z", "w"], ComparisonSettings(n_resamples=100), device="cpu")
    assert table.query_ids["m"] == ["x", "y", "w"]
    assert table.differences[("b", "m")].tolist() == [-0.25, 0.0, -0.5]


def test_formats(collection, tmp_path):
    qrels, runs = collection
    renamed = {"my_base": runs["base"], "better": runs["better"], "worse": runs["worse"]}
    table = compare(qrels, renamed, MEASURES, n_resamples=300, device="cpu")
    data = json.loads(json.dumps(table.to_dict(), allow_nan=False))
    assert set(data["measures"]) == set(MEASURES)
    assert set(data["measures"]["AP"]["systems"]) == {"my_base", "better", "worse"}
    assert "p_value" not in data["measures"]["AP"]["systems"]["my_base"]
    text = table.to_text()
    assert all(name in text for name in renamed) and "(baseline)" in text
    latex = table.to_latex()
    assert "\\begin{tabular}{lrrr}" in latex and "my\\_base (baseline)" in latex
    assert str(table) == text


def test_plot_writes_png(collection, tmp_path):
    qrels, runs = collection
    table = compare(qrels, runs, MEASURES, n_resamples=100, device="cpu")
    for target, source in ((tmp_path / "table.png", table), (tmp_path / "diffs.png", {"x": [0.1, -0.2, 0.0]})):
        assert plot_differences(source, target) == str(target)
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(StatsError):
        plot_differences(table, tmp_path / "none.png", measure="Rprec")


def test_fixture_files_compare(tmp_path):
    """The trec_eval sample run against a reversed copy of itself (3 topics)."""
    qrels = gpukit.Qrels.from_trec(DATA / "qrels.test")
    run = gpukit.Run.from_trec(DATA / "results.test")
    negated = {q: {d: -s for d, s in docs.items()} for q, docs in run.to_dict().items()}
    reversed_run = gpukit.Run.from_dict(negated, name="reversed")
    table = compare(qrels, [run, reversed_run], ["AP"], n_resamples=1000, device="cpu")
    assert isinstance(table, ComparisonTable)
    row = table.row("reversed", "AP")
    assert row.losses == 3 and row.difference < 0 and row.urisk < row.difference
