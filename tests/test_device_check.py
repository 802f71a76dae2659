"""bench/device_check.sh and its stages, exercised on CPU (the dry run).

The figures of a dry run mean nothing; what is checked is the plumbing the
GPU run depends on: every stage runs, writes its JSON, compares what it
claims to compare, skips (with a reason) what cannot run, and the script
leaves exactly one archive plus summary.md.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def device_check():
    spec = importlib.util.spec_from_file_location("device_check", os.path.join(REPO, "bench", "device_check.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["device_check"] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    yield module
    del sys.modules["device_check"]


@pytest.mark.parametrize("stage", ["graph", "budgets", "stats", "streamed"])
def test_stage_runs_on_cpu_and_writes_its_report(device_check, stage, tmp_path):
    result = device_check.run_stage(stage, str(tmp_path), dry_run=True)
    assert result["status"] == "ok", result
    with open(tmp_path / f"{stage}.json", encoding="utf-8") as handle:
        assert json.load(handle) == result
    assert result["rows"] and result["device"] == "cpu" and result["dry_run"] is True
    values = {row["what"]: row["value"] for row in result["rows"]}
    if stage == "graph":
        assert values["graph state == eager state"] == "True"
    if stage == "stats":
        assert values["bootstrap CPU == device"] == "True"
    if stage == "streamed":
        assert values["streamed_overlap == ExactIndex (same blocks)"] == values["streamed_sync == ExactIndex (same blocks)"] == "True"


def test_missing_core_dependency_is_a_skip_with_a_reason(device_check, tmp_path, monkeypatch):
    monkeypatch.setattr(device_check, "missing_modules", lambda names: [n for n in names if n == "pyarrow"])
    result = device_check.run_stage("kernels", str(tmp_path), dry_run=True)
    assert result["status"] == "skipped" and "pyarrow" in result["note"] and "pip install pyarrow" in result["note"]


def test_without_cuda_a_real_stage_is_skipped(device_check, tmp_path, monkeypatch):
    monkeypatch.setattr(device_check.torch.cuda, "is_available", lambda: False)
    result = device_check.run_stage("update", str(tmp_path), dry_run=False)
    assert result["status"] == "skipped" and "no CUDA" in result["note"]


def test_a_crashing_stage_is_reported_failed(device_check, tmp_path, monkeypatch):
    def crash(report, device, sizes):
        raise RuntimeError("boom")

    monkeypatch.setitem(device_check.STAGES, "graph", (crash, ()))
    result = device_check.run_stage("graph", str(tmp_path), dry_run=True)
    assert result["status"] == "failed" and "boom" in result["note"]


def test_summary_shows_every_stage_and_log_tails(device_check, tmp_path):
    device_check.run_stage("stats", str(tmp_path), dry_run=True)
    (tmp_path / "streaming.log").write_text("line one\nratio 3.5\n")
    status = tmp_path / "status.tsv"
    status.write_text("stats\tok\t2\nstreaming\tFAILED (rc=1)\t4\nivf\tSKIPPED\t0\tfaiss with GPU support not installed\n")
    text = device_check.write_summary(str(tmp_path), str(status), str(tmp_path))
    assert "| stats | ok | 2 | ok |" in text
    assert "| streaming | FAILED (rc=1) | 4 | see log |" in text and "ratio 3.5" in text
    assert "| ivf | SKIPPED | 0 | - | faiss with GPU support not installed |" in text
    assert "CPU dry run" in text
    assert (tmp_path / "summary.md").read_text() == text


@pytest.mark.slow
def test_dry_run_script_leaves_one_archive_and_a_summary(tmp_path):
    dest = tmp_path / "out"
    done = subprocess.run(
        ["bash", os.path.join(REPO, "bench", "device_check.sh"), "--cpu-dry-run", str(dest)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(os.listdir(dest)) == ["device_check.tar.gz", "summary.md"]
    with tarfile.open(dest / "device_check.tar.gz") as archive:
        names = set(archive.getnames())
        status = archive.extractfile("device_check/status.tsv").read().decode().splitlines()
    stages = ["env", "cuda_tests", "kernels", "update", "search", "budgets", "graph", "stats", "streamed"]
    assert {f"device_check/{s}.json" for s in stages} <= names
    assert "device_check/summary.md" in names
    rows = {line.split("\t")[0]: line.split("\t")[1] for line in status}
    assert set(rows) == set(stages) | {"streaming", "stats_ranx", "ivf", "multi_gpu"}
    assert not [s for s, st in rows.items() if st.startswith("FAILED")], rows
    summary = (dest / "summary.md").read_text()
    assert all(f"| {s} |" in summary for s in rows) and "FAILED" not in summary
    # The multi-GPU section ran as two CPU processes and compared with one.
    with tarfile.open(dest / "device_check.tar.gz") as archive:
        multi = json.load(archive.extractfile("device_check/multi_gpu.json"))
    equalities = {row["what"]: row["value"] for row in multi["rows"] if "==" in row["what"]}
    assert multi["status"] == "ok" and len(equalities) == 2 and set(equalities.values()) == {"True"}, multi


# ------------------------------------------------ the multi-GPU section
@pytest.fixture
def multi_gpu(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts bench/ first
    spec = importlib.util.spec_from_file_location("multi_gpu_check", os.path.join(REPO, "bench", "multi_gpu_check.py"))
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "multi_gpu_check", module)
    shared = sys.modules.pop("device_check", None)  # the script imports its own copy
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("device_check", None)
    if shared is not None:
        sys.modules["device_check"] = shared


def test_multi_gpu_section_skips_with_fewer_than_two_gpus(multi_gpu, tmp_path, monkeypatch):
    monkeypatch.setattr(multi_gpu.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(multi_gpu.torch.cuda, "device_count", lambda: 1)
    assert multi_gpu.main(["--out", str(tmp_path), "--nproc", "1"]) == 0
    result = json.loads((tmp_path / "multi_gpu.json").read_text())
    assert result["status"] == "skipped" and "1 GPU(s) visible" in result["note"] and not result["rows"]


def _embed_eval_json(world: int, ndcg: float) -> str:
    timings = {s: 0.1 for s in ("encode_corpus", "encode_queries", "index", "search", "evaluate")}
    report = {"measures": {"nDCG@10": {"mean": ndcg, "evaluated": 3, "omitted": 0}}}
    return json.dumps({"report": report, "timings_s": timings, "world": world, "documents": 10, "queries": 3, "metric": "ip"})


@pytest.mark.parametrize("required", [True, False])
def test_multi_gpu_embed_eval_comparison_catches_a_differing_report(multi_gpu, monkeypatch, required):
    outputs = iter([_embed_eval_json(1, 0.5), _embed_eval_json(2, 0.5 + 2**-40)])  # one ulp-sized change
    monkeypatch.setattr(multi_gpu, "_run", lambda command, dry_run, timeout: (next(outputs), 1.0))
    report = multi_gpu.Report("multi_gpu", "cpu", True)
    multi_gpu.compare_embed_eval(report, "hash:256", "x", "dir", 2, True, required=required)
    assert report.rows[0]["value"] == "False"
    assert bool(report.failures) == required  # float scores (the real model) are recorded, not required
    outputs = iter([_embed_eval_json(1, 0.5), _embed_eval_json(2, 0.5)])
    same = multi_gpu.Report("multi_gpu", "cpu", True)
    multi_gpu.compare_embed_eval(same, "hash:256", "x", "dir", 2, True, required=True)
    assert same.rows[0]["value"] == "True" and not same.failures


def test_multi_gpu_sharded_search_comparison_catches_a_difference(multi_gpu, monkeypatch, tmp_path):
    part = {"positions_equal": True, "scores_equal": False, "fraction_positions_equal": 1.0, "sharded_s": 0.1, "one_device_s": 0.2}
    found = {"world": 2, "docs": 100, "dim": 8, "queries": 4, "k": 5, "integer": part, "gaussian": part}
    monkeypatch.setattr(multi_gpu, "_run", lambda command, dry_run, timeout: ((tmp_path / multi_gpu.SEARCH_FILE).write_text(json.dumps(found)), 1.0))
    report = multi_gpu.Report("multi_gpu", "cpu", True)
    multi_gpu.compare_sharded_search(report, str(tmp_path), 2, True)
    assert report.rows[0]["value"] == "False" and report.failures


@pytest.mark.slow
def test_script_skips_the_multi_gpu_section_with_a_line_without_gpus(tmp_path):
    """Not a dry run, no GPU here, no budget: every stage skips, and the
    multi-GPU section says why it did not run."""
    dest = tmp_path / "out"
    done = subprocess.run(
        ["bash", os.path.join(REPO, "bench", "device_check.sh"), str(dest)],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, GPUKIT_CHECK_BUDGET="0"),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "SKIPPED: multi_gpu (0 GPU(s) visible; the multi-GPU section runs only with more than one)" in done.stdout
    assert "| multi_gpu | SKIPPED | 0 | - | 0 GPU(s) visible" in (dest / "summary.md").read_text()
