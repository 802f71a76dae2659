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
