"""Tukey HSD and the studentized range: against scipy.stats.studentized_range and
statsmodels' pairwise_tukeyhsd (the anchors), on random matrices and on TREC runs."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from fixture_paths import TESTS

import gpukit
from gpukit.stats import (
    StatsError,
    all_pairs_per_query,
    compare_all_pairs,
    studentized_range_cdf,
    studentized_range_ppf,
    studentized_range_sf,
    tukey_hsd,
)

KS = (2, 3, 5, 10, 25)
DFS = (1, 2, 3.5, 7, 30, 240, 5000, 99_999, 100_000, 3e6)
QS = np.array([0.0, 0.02, 0.4, 1.0, 2.0, 3.0, 3.7, 4.5, 6.0, 9.0, 25.0])


@pytest.mark.parametrize("k", KS)
def test_cdf_matches_scipy(k):
    stats = pytest.importorskip("scipy.stats")
    for df in DFS:
        expected = stats.studentized_range.cdf(QS, k, df)
        got = studentized_range_cdf(torch.from_numpy(QS), k, df).numpy()
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9, err_msg=f"k={k} df={df}")
        sf = studentized_range_sf(torch.from_numpy(QS), k, df).numpy()
        np.testing.assert_allclose(sf, stats.studentized_range.sf(QS, k, df), rtol=0, atol=1e-9)


@pytest.mark.parametrize(("p", "k", "df"), [(0.95, 2, 1), (0.95, 3, 27), (0.99, 10, 490), (0.5, 5, 10),
                                            (0.95, 20, 2e5), (0.999, 4, 3.5)])
def test_ppf_matches_scipy_and_inverts_the_cdf(p, k, df):
    stats = pytest.importorskip("scipy.stats")
    q = studentized_range_ppf(p, k, df)
    assert math.isclose(q, float(stats.studentized_range.ppf(p, k, df)), rel_tol=1e-9)
    assert abs(float(studentized_range_cdf(torch.tensor([q], dtype=torch.float64), k, df)[0]) - p) < 1e-13


def test_cdf_is_monotone_and_keeps_shape():
    q = torch.linspace(0, 8, 81, dtype=torch.float64).reshape(9, 9)
    cdf = studentized_range_cdf(q, 4, 12)
    assert cdf.shape == (9, 9) and cdf.dtype == torch.float64
    flat = cdf.reshape(-1)
    assert float(flat[0]) == 0.0 and bool((flat[1:] >= flat[:-1]).all()) and float(flat[-1]) > 0.999


@pytest.mark.parametrize("bad", [{"k": 1, "df": 5}, {"k": 3, "df": 0}, {"k": 3, "df": float("nan")}])
def test_distribution_rejects_bad_parameters(bad):
    with pytest.raises(StatsError, match="k > 1 and df > 0"):
        studentized_range_cdf(torch.tensor([1.0]), **bad)
    with pytest.raises(StatsError, match="0 < p < 1"):
        studentized_range_ppf(1.0, 3, 10)


def _statsmodels(values: np.ndarray, names: list[str], alpha: float):
    """pairwise_tukeyhsd on the flattened groups; its results keyed by (group1, group2)."""
    multicomp = pytest.importorskip("statsmodels.stats.multicomp")
    q = values.shape[1]
    res = multicomp.pairwise_tukeyhsd(values.reshape(-1), np.repeat(np.array(names, dtype=object), q), alpha=alpha)
    groups = res.groupsunique
    pairs = [(str(groups[i]), str(groups[j])) for i, j in zip(*np.triu_indices(len(groups), 1))]
    return {pair: (res.meandiffs[n], res.pvalues[n], res.confint[n, 0], res.confint[n, 1], bool(res.reject[n]))
            for n, pair in enumerate(pairs)}, res


def _assert_same(names, result_pairs, expected):
    """Our pair (a, b) with difference mean_b - mean_a against statsmodels' (g1, g2) in sorted order."""
    for a, b, diff, p, low, high, reject in result_pairs:
        key, sign = ((a, b), 1.0) if (a, b) in expected else ((b, a), -1.0)
        e_diff, e_p, e_low, e_high, e_reject = expected[key]
        assert abs(diff - sign * e_diff) <= 1e-9
        assert abs(p - e_p) <= 1e-6
        e_ci = (e_low, e_high) if sign > 0 else (-e_high, -e_low)
        assert abs(low - e_ci[0]) <= 1e-9 and abs(high - e_ci[1]) <= 1e-9
        assert reject == e_reject


@pytest.mark.parametrize(("k", "q", "alpha", "seed"), [(2, 4, 0.05, 0), (3, 50, 0.05, 1), (5, 120, 0.1, 2),
                                                      (8, 25, 0.01, 3), (12, 400, 0.05, 4)])
def test_tukey_hsd_matches_statsmodels(k, q, alpha, seed):
    rng = np.random.default_rng(seed)
    # Systems differ in mean by up to ~0.15: some pairs are rejected, some not.
    values = rng.random((k, q)) * 0.6 + rng.random((k, 1)) * 0.15 * math.sqrt(50 / q)
    names = [f"s{i:02d}" for i in range(k)]
    expected, res = _statsmodels(values, names, alpha)
    got = tukey_hsd(torch.from_numpy(values), alpha=alpha)
    assert got.df == res.df_total and math.isclose(got.q_crit, res.q_crit, rel_tol=1e-9)
    assert math.isclose(got.mse, res.variance, rel_tol=1e-12)
    rows = [(names[i], names[j], float(got.mean_difference[n]), float(got.p_value[n]), float(got.ci_low[n]),
             float(got.ci_high[n]), bool(got.reject[n])) for n, (i, j) in enumerate(got.pairs)]
    _assert_same(names, rows, expected)
    if q >= 100:
        assert 0 < int(got.reject.sum()) < len(got.pairs)  # the case exercises both outcomes


def test_all_pairs_per_query_drops_omitted_queries_and_keeps_the_given_order():
    rng = np.random.default_rng(7)
    names = ["zeta", "alpha", "mid_sys"]  # not sorted: statsmodels sorts, our pairs follow this order
    q = 40
    scores = {s: {"AP": torch.from_numpy(rng.random(q) + 0.1 * i), "P@10": torch.from_numpy(rng.random(q))}
              for i, s in enumerate(names)}
    omitted = [3, 17, 30]
    for s in names:
        scores[s]["AP"][omitted] = float("nan")
    ids = [f"q{i}" for i in range(q)]
    table = all_pairs_per_query(scores, ids, alpha=0.05)
    assert table.query_ids["AP"] == [x for i, x in enumerate(ids) if i not in omitted]
    assert [(r.system_a, r.system_b) for r in table.rows if r.measure == "AP"] == [
        ("zeta", "alpha"), ("zeta", "mid_sys"), ("alpha", "mid_sys")]
    for m in ("AP", "P@10"):
        kept = [i for i in range(q) if m == "P@10" or i not in omitted]
        values = np.stack([scores[s][m].numpy()[kept] for s in names])
        expected, _ = _statsmodels(values, names, 0.05)
        rows = [(r.system_a, r.system_b, r.difference, r.p_value, r.ci_low, r.ci_high, r.significant)
                for r in table.rows if r.measure == m]
        _assert_same(names, rows, expected)
    assert table.row("zeta", "alpha", "AP").difference == pytest.approx(
        float(np.nanmean(scores["alpha"]["AP"].numpy()) - np.nanmean(scores["zeta"]["AP"].numpy())), abs=1e-12)


def _trec_runs(tmp_path):
    """The stats test data: results.test and two rescored copies (distinct rankings)."""
    from pathlib import Path

    data = TESTS / "data" / "stats"
    lines = (data / "results.test").read_text().splitlines()
    runs = {"base": gpukit.Run.from_trec(data / "results.test", name="base")}
    for name, change in (("reversed", lambda s: -s), ("scrambled", lambda s: (s * 7.0) % 1.0)):
        rows = []
        for line in lines:
            qid, q0, doc, rank, score, _ = line.split()
            rows.append(f"{qid} {q0} {doc} {rank} {change(float(score))!r} {name}")
        path = tmp_path / f"{name}.run"
        path.write_text("\n".join(rows) + "\n")
        runs[name] = gpukit.Run.from_trec(path, name=name)
    return gpukit.Qrels.from_trec(data / "qrels.test"), runs


def test_compare_all_pairs_on_runs_matches_statsmodels_on_evaluated_values(tmp_path):
    qrels, runs = _trec_runs(tmp_path)
    table = compare_all_pairs(qrels, runs, ["AP", "nDCG@10"], alpha=0.05, device="cpu")
    assert table.systems == ["base", "reversed", "scrambled"]
    for m in ("AP", "nDCG@10"):
        reports = {n: gpukit.evaluate(qrels, r, [m])[m] for n, r in runs.items()}
        mask = reports["base"].mask
        values = np.stack([rep.per_query[mask].numpy() for rep in reports.values()])
        expected, _ = _statsmodels(values, list(runs), 0.05)
        rows = [(r.system_a, r.system_b, r.difference, r.p_value, r.ci_low, r.ci_high, r.significant)
                for r in table.rows if r.measure == m]
        _assert_same(list(runs), rows, expected)
    data = json.loads(json.dumps(table.to_dict()))
    assert data["method"] == "tukey" and len(data["measures"]["AP"]["pairs"]) == 3


def test_zero_variance_and_equal_means():
    values = torch.tensor([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0]], dtype=torch.float64)
    r = tukey_hsd(values)
    assert r.mse == 0.0
    # (0, 1): equal means -> q = 0, p = 1; the others differ exactly -> q = inf, p = 0, rejected.
    assert r.statistic.tolist() == [0.0, math.inf, math.inf]
    assert r.p_value.tolist() == [1.0, 0.0, 0.0] and r.reject.tolist() == [False, True, True]


@pytest.mark.parametrize(("values", "message"), [
    (torch.zeros(1, 5), "k >= 2 systems"),
    (torch.zeros(3, 1), "Q >= 2 queries"),
    (torch.tensor([[0.1, float("nan")], [0.2, 0.3]]), "NaN"),
])
def test_tukey_rejects_bad_input(values, message):
    with pytest.raises(StatsError, match=message):
        tukey_hsd(values)
    with pytest.raises(StatsError, match="alpha"):
        tukey_hsd(torch.rand(2, 3), alpha=1.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_gives_the_cpu_numbers():
    values = torch.rand(6, 300, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    cpu, cuda = tukey_hsd(values), tukey_hsd(values.cuda())
    assert torch.allclose(cpu.p_value, cuda.p_value, rtol=0, atol=1e-12)
    assert abs(cpu.q_crit - cuda.q_crit) < 1e-12 and torch.equal(cpu.reject, cuda.reject)
