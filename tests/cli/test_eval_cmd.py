"""`gpukit eval` end to end on the bundled fixtures."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fixture_paths import TESTS

import gpukit
from gpukit.cli import main

DATA = TESTS / "data"
QRELS = DATA / "trec_eval" / "qrels.test"
RUN = DATA / "trec_eval" / "results.test"
TRUNC = DATA / "trec_eval" / "results.trunc"


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _json_array(text: str) -> list[dict]:
    """`--format json`: one JSON document, an array of one object per run."""
    doc = json.loads(text)
    assert isinstance(doc, list)
    return doc


def test_json_has_one_object_per_run_with_conventions(capsys):
    assert main(["eval", str(QRELS), str(RUN), str(TRUNC), "-m", "nDCG@10", "-m", "AP", "--format", "json"]) == 0
    objects = _json_array(capsys.readouterr().out)
    assert [o["run"] for o in objects] == ["results.test", "results.trunc"]
    qrels = gpukit.Qrels.from_trec(QRELS)
    for obj, path in zip(objects, (RUN, TRUNC)):
        report = gpukit.evaluate(qrels, gpukit.Run.from_trec(path), ["nDCG@10", "AP"])
        for name in ("nDCG@10", "AP"):
            entry = obj["measures"][name]
            assert entry["mean"] == pytest.approx(report[name].mean, abs=1e-12)
            assert entry["evaluated"] == report[name].evaluated
            assert entry["omitted"] == report[name].omitted
            assert entry["conventions"]["convention"] == "gpukit"
            assert "tie_break" in entry["conventions"] and "zero_rule" in entry["conventions"]
        assert "per_query" not in obj


def test_many_runs_parse_the_qrels_once(capsys, monkeypatch):
    """`gpukit eval QRELS RUN1 RUN2 RUN3` reads QRELS once and reuses it for every run."""
    calls = []
    original = gpukit.Qrels.from_trec.__func__

    def counting(cls, path, *args, **kwargs):
        calls.append(str(path))
        return original(cls, path, *args, **kwargs)

    monkeypatch.setattr(gpukit.Qrels, "from_trec", classmethod(counting))
    assert main(["eval", str(QRELS), str(RUN), str(TRUNC), str(RUN), "-m", "AP", "--format", "json"]) == 0
    assert calls == [str(QRELS)]
    objects = _json_array(capsys.readouterr().out)
    assert len(objects) == 3
    assert objects[0]["measures"]["AP"]["mean"] == objects[2]["measures"]["AP"]["mean"]


def test_jsonl_is_one_object_per_line_equal_to_the_json_array(capsys):
    args = ["eval", str(QRELS), str(RUN), str(TRUNC), "-m", "AP", "-m", "P@5"]
    assert main(args + ["--format", "json"]) == 0
    array = _json_array(capsys.readouterr().out)
    assert main(args + ["--format", "jsonl"]) == 0
    assert _json_lines(capsys.readouterr().out) == array
    qrels = gpukit.Qrels.from_trec(QRELS)
    for obj, path in zip(array, (RUN, TRUNC)):
        want = gpukit.evaluate(qrels, gpukit.Run.from_trec(path), ["AP", "P@5"])
        assert obj["measures"]["AP"]["mean"] == pytest.approx(want["AP"].mean, abs=1e-12)


def test_json_per_query_matches_evaluate(capsys):
    assert main(["eval", str(QRELS), str(RUN), "-m", "P@5", "--per-query", "--format", "json", "--convention", "trec_eval"]) == 0
    obj = _json_array(capsys.readouterr().out)[0]
    report = gpukit.evaluate(gpukit.Qrels.from_trec(QRELS), gpukit.Run.from_trec(RUN), ["P@5"], convention="trec_eval")
    assert obj["per_query"] == {q: {"P@5": v} for q, v in zip(report.query_ids, report["P@5"].per_query.tolist())}


def test_trec_format_and_options_reproduce_trec_eval(capsys):
    expected = {}
    for line in (DATA / "trec_eval" / "out.test.aqcM").read_text().splitlines():
        name, qid, value = (p.strip() for p in line.split("\t"))
        expected[(name, qid)] = value
    args = ["eval", str(QRELS), str(TRUNC), "-m", "map", "-m", "P.5,100", "--convention", "trec_eval", "-c", "-M", "100", "-q", "--format", "trec"]
    assert main(args) == 0
    for line in capsys.readouterr().out.splitlines():
        name, qid, value = (p.strip() for p in line.split("\t"))
        if name in ("map", "P_5", "P_100"):
            assert value == expected[(name, qid)], (name, qid)


def test_table_states_conventions_and_omitted_counts(capsys, tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 0\n")  # q2 has no relevant document
    run = tmp_path / "run"
    run.write_text("q1 Q0 a 1 2.0 x\nq1 Q0 b 2 1.0 x\nq2 Q0 c 1 1.0 x\n")
    assert main(["eval", str(qrels), str(run), "-m", "AP", "-m", "P@1"]) == 0
    out = capsys.readouterr().out
    ap_line = next(line for line in out.splitlines() if line.startswith("AP "))
    assert ap_line.split()[1:4] == ["1.0000", "1", "1"]  # mean over q1 only; q2 omitted and counted
    p_line = next(line for line in out.splitlines() if line.startswith("P@1 "))
    assert p_line.split()[1:4] == ["0.5000", "2", "0"]
    assert "omitted from the mean" in out and "doc id descending" in out


def test_bundled_cacm_run_under_both_conventions(capsys):
    qrels, run = DATA / "cacm" / "qrels.cacm.txt", DATA / "cacm" / "run.cacm-bm25.anserini.txt"
    assert main(["eval", str(qrels), str(run), "-m", "AP", "-m", "nDCG@10", "--format", "json", "--convention", "trec_eval"]) == 0
    trec = _json_array(capsys.readouterr().out)[0]
    report = gpukit.evaluate(gpukit.Qrels.from_trec(qrels), gpukit.Run.from_trec(run), ["AP", "nDCG@10"], convention="trec_eval")
    assert trec["measures"]["AP"]["mean"] == pytest.approx(report["AP"].mean, abs=1e-12)
    assert trec["measures"]["AP"]["omitted"] == 0


def test_errors_exit_2_with_file_and_line(tmp_path):
    bad = tmp_path / "run"
    bad.write_text("q1 Q0 a 1 2.0 x\nq1 Q0 b 2\n")
    proc = subprocess.run([sys.executable, "-m", "gpukit.cli", "eval", str(QRELS), str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"{bad}:2:" in proc.stderr and "columns" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "gpukit.cli", "eval", str(QRELS), str(RUN), "-m", "nope@3"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown measure" in proc.stderr
