"""``gpukit bench`` end to end on tiny data: JSON axes, files in and out, errors."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gpukit.cli import main

pytest.importorskip("faiss")

FAST = ["--repeats", "1", "--warmup", "1", "--latency-budget", "0", "--batch-sizes", "1,8", "--no-roofline"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["bench", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_synthetic_json_has_the_five_axes(capsys, tmp_path):
    out_file = tmp_path / "report.json"
    code, out, _ = run(capsys, "--synthetic", "800,20,8", "--format", "json", "--output", str(out_file), *FAST)
    assert code == 0
    d = json.loads(out)
    assert set(d) == {"setup", "quality", "latency", "throughput", "build", "memory", "infrastructure"}
    assert d["quality"]["recall@10"] == 1.0 and d["quality"]["nDCG@10"] is not None
    assert [b["batch_size"] for b in d["latency"]["batches"]] == [1, 8]
    assert d["throughput"]["roofline"] is None and d["throughput"]["roofline_reason"]
    assert json.loads(out_file.read_text()) == d
    assert d["setup"]["data"].startswith("synthetic")


def test_npy_files_faiss_index_and_pareto_outputs(capsys, tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "corpus.npy", rng.standard_normal((600, 8)).astype(np.float32))
    np.save(tmp_path / "queries.npy", rng.standard_normal((12, 8)).astype(np.float32))
    (tmp_path / "qrels.txt").write_text("0 0 5 1\n1 0 7 2\n")
    png, front = tmp_path / "front.png", tmp_path / "front.json"
    code, out, _ = run(
        capsys, "--corpus", str(tmp_path / "corpus.npy"), "--queries", str(tmp_path / "queries.npy"),
        "--qrels", str(tmp_path / "qrels.txt"), "--index", "IVF8,Flat", "--nprobe", "2", "--nprobe-grid", "1,8",
        "--pareto-png", str(png), "--pareto-json", str(front), "--hardware-price-per-hour", "2", *FAST,
    )
    assert code == 0
    for section in ("[latency]", "[throughput]", "[build]", "[memory]", "[infrastructure]", "never added"):
        assert section in out
    assert "hardware per million queries" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
    saved = json.loads(front.read_text())
    assert [p["params"] for p in saved["points"]] == [{"nprobe": 1}, {"nprobe": 8}]
    assert saved["points"][1]["recall"] == 1.0  # all 8 lists probed


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--synthetic", "10,2"], "N,Q,D"),
        ([], "--synthetic"),
        (["--synthetic", "50,4,4", "--index", "exact", "--nprobe", "2"], "nprobe"),
        (["--synthetic", "50,4,4", "--index", "IVF4,Flat", "--dtype", "fp16"], "dtype"),
        (["--synthetic", "50,4,4", "-k", "100"], "k=100"),
        pytest.param(
            ["--synthetic", "50,4,4", "--device", "cuda"], "CUDA",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error"),
        ),
    ],
)
def test_user_errors_exit_2_with_a_message(capsys, argv, message):
    code, _, err = run(capsys, *argv, *FAST)
    assert code == 2
    assert message in err


def test_bad_batch_sizes_are_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--synthetic", "50,4,4", "--batch-sizes", "0,3"])
    assert "positive" in capsys.readouterr().err
