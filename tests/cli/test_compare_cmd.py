"""``gpukit compare`` end to end on small TREC files."""
from __future__ import annotations

import json
import shutil

import pytest
import torch
from fixture_paths import TESTS

from gpukit.cli import main

DATA = TESTS / "data" / "stats"


@pytest.fixture()
def files(tmp_path):
    """qrels.test, results.test and two derived runs (reversed and scrambled scores)."""
    qrels = shutil.copy(DATA / "qrels.test", tmp_path / "qrels.test")
    base = shutil.copy(DATA / "results.test", tmp_path / "base.run")
    lines = (DATA / "results.test").read_text().splitlines()
    derived = {}
    for name, change in (("reversed.run", lambda s: -s), ("scrambled.run", lambda s: (s * 7.0) % 1.0)):
        rows = []
        for line in lines:
            qid, q0, doc, rank, score, tag = line.split()
            rows.append(f"{qid} {q0} {doc} {rank} {change(float(score))!r} {name}")
        path = tmp_path / name
        path.write_text("\n".join(rows) + "\n")
        derived[name] = str(path)
    return str(qrels), [str(base), derived["reversed.run"], derived["scrambled.run"]]


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_table_output(files, capsys):
    qrels, runs = files
    argv = ["compare", qrels, *runs, "-m", "AP", "-m", "nDCG@10", "--n-resamples", "500", "--device", "cpu"]
    code, out, _ = _run(capsys, argv)
    assert code == 0
    assert "baseline: base.run" in out and "randomization (500 resamples, seed 0)" in out
    assert "reversed.run" in out and "scrambled.run" in out and "(baseline)" in out


def test_json_output_with_options(files, capsys):
    qrels, runs = files
    code, out, _ = _run(capsys, [
        "compare", qrels, *runs, "-m", "P@10", "--test", "t-test", "--correction", "none",
        "--baseline", "reversed.run", "--format", "json", "--seed", "4", "--relevance-level", "1",
    ])
    assert code == 0
    data = json.loads(out)
    assert data["baseline"] == "reversed.run" and data["test"] == "t-test" and data["correction"] == "none"
    row = data["measures"]["P@10"]["systems"]["base.run"]
    assert row["p_value"] == row["p_value_raw"] and row["difference"] > 0


def test_latex_output_and_plot(files, capsys, tmp_path):
    qrels, runs = files
    png = tmp_path / "diffs.png"
    code, out, _ = _run(capsys, [
        "compare", qrels, *runs, "-m", "AP", "--test", "bootstrap", "--n-resamples", "300",
        "--format", "latex", "--plot", str(png),
    ])
    assert code == 0
    assert out.startswith("%") and "\\begin{tabular}{lr}" in out and "base.run (baseline)" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("extra", [
    ["--baseline", "missing.run"],
    pytest.param(["--device", "cuda"], marks=pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")),
])
def test_user_errors_exit_2(files, capsys, extra):
    qrels, runs = files
    code, _, err = _run(capsys, ["compare", qrels, *runs, "-m", "AP", *extra])
    assert code == 2 and "gpukit: error:" in err


def test_single_run_is_an_error(files, capsys):
    qrels, runs = files
    code, _, err = _run(capsys, ["compare", qrels, runs[0], "-m", "AP"])
    assert code == 2 and "at least two runs" in err


def _evaluated(qrels, runs, measure):
    """Per-query values of ``measure`` for each run file, on the evaluated queries."""
    import gpukit

    q = gpukit.Qrels.from_trec(qrels)
    results = [gpukit.evaluate(q, gpukit.Run.from_trec(p), [measure])[measure] for p in runs]
    mask = results[0].mask
    return [r.per_query[mask].tolist() for r in results]


def test_all_pairs_tukey_json_matches_statsmodels(files, capsys):
    multicomp = pytest.importorskip("statsmodels.stats.multicomp")
    qrels, runs = files
    code, out, _ = _run(capsys, ["compare", qrels, *runs, "-m", "AP", "--all-pairs", "tukey", "--alpha", "0.1",
                                 "--format", "json"])
    assert code == 0
    data = json.loads(out)
    assert data["method"] == "tukey" and data["alpha"] == 0.1
    values = _evaluated(qrels, runs, "AP")
    names = ["base.run", "reversed.run", "scrambled.run"]  # already sorted, as statsmodels orders groups
    labels = [n for n, v in zip(names, values) for _ in v]
    expected = multicomp.pairwise_tukeyhsd([x for v in values for x in v], labels, alpha=0.1)
    pairs = data["measures"]["AP"]["pairs"]
    assert [(p["system_a"], p["system_b"]) for p in pairs] == [(names[0], names[1]), (names[0], names[2]),
                                                                (names[1], names[2])]
    for n, p in enumerate(pairs):
        assert abs(p["difference"] - expected.meandiffs[n]) <= 1e-9
        assert abs(p["p_value"] - expected.pvalues[n]) <= 1e-6
        assert abs(p["ci_low"] - expected.confint[n, 0]) <= 1e-9 and abs(p["ci_high"] - expected.confint[n, 1]) <= 1e-9
        assert p["significant"] == bool(expected.reject[n])


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex"])
def test_all_pairs_tukey_text_formats(files, capsys, fmt):
    qrels, runs = files
    code, out, _ = _run(capsys, ["compare", qrels, *runs, "-m", "AP", "-m", "nDCG@10", "--all-pairs", "tukey",
                                 "--format", fmt])
    assert code == 0 and "Tukey HSD" in out and "query pairing ignored" in out
    pair_lines = [line for line in out.splitlines() if "reversed" in line and "scrambled" in line]
    assert len(pair_lines) == 2  # one pair line per measure
    if fmt == "latex":
        assert "\\begin{tabular}{lllrrrl}" in out and "nDCG@10 & reversed.run & scrambled.run" in out


@pytest.mark.parametrize("extra", [["--test", "t-test"], ["--baseline", "base.run"], ["--winners", "3"],
                                   ["--n-resamples", "100", "--seed", "2"], ["--plot", "x.png"]])
def test_all_pairs_refuses_baseline_options(files, capsys, extra):
    qrels, runs = files
    code, _, err = _run(capsys, ["compare", qrels, *runs, "-m", "AP", "--all-pairs", "tukey", *extra])
    assert code == 2 and "only apply to comparisons with a baseline" in err and extra[0] in err


def test_winners_table_and_markdown(files, capsys):
    qrels, runs = files
    for fmt in ("table", "markdown"):
        code, out, _ = _run(capsys, ["compare", qrels, *runs, "-m", "AP", "--winners", "2", "--n-resamples", "200",
                                     "--format", fmt])
        assert code == 0 and "largest gains" in out and "per-query gains and losses against the baseline base.run" in out
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", qrels, *runs, "-m", "AP", "--winners", "0"])
    assert exit_info.value.code == 2 and "argument --winners: must be between 1" in capsys.readouterr().err
