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


@pytest.mark.parametrize("stage", ["graph", "budgets", "stats"])
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
    stages = ["env", "cuda_tests", "kernels", "update", "search", "budgets", "graph", "stats"]
    assert {f"device_check/{s}.json" for s in stages} <= names
    assert "device_check/summary.md" in names
    rows = {line.split("\t")[0]: line.split("\t")[1] for line in status}
    assert set(rows) == set(stages) | {"streaming", "stats_ranx", "ivf"}
    assert not [s for s, st in rows.items() if st.startswith("FAILED")], rows
    summary = (dest / "summary.md").read_text()
    assert all(f"| {s} |" in summary for s in rows) and "FAILED" not in summary
