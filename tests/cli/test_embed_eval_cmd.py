"""gpukit embed-eval: report values from an independent plain-Python reference, stage lines, cache reuse, torchrun."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from fixture_paths import REPO

from gpukit.cli import main

WORDS = "cell gene protein virus cancer blood brain heart lung drug dose trial risk mouse human".split()
DIM = 16
ROOT = REPO


@pytest.fixture(scope="module")
def beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(3)
    folder = tmp_path_factory.mktemp("beir") / "toy"
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": " ".join(rng.choice(WORDS, 2)), "text": " ".join(rng.choice(WORDS, 5))} for i in range(30)]
    queries = [{"_id": f"q{i}", "text": " ".join(rng.choice(WORDS, 3))} for i in range(8)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    rows = [f"q{i}\td{int(d)}\t{int(rng.integers(1, 3))}" for i in range(8) for d in rng.choice(30, 3, replace=False)]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return folder


def _vector(text: str) -> list[int]:
    counts = [0] * DIM
    for token in re.findall(r"\w+", text.lower()):
        counts[zlib.crc32(token.encode()) % DIM] += 1
    return counts


def _reference(folder: Path) -> dict[str, float]:
    """Plain Python: integer inner products, the whole corpus ranked (score desc,
    then doc id desc, as trec_eval), nDCG@10 and AP as defined."""
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines()]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()]
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        qrels.setdefault(q, {})[d] = int(g)
    vectors = {d["_id"]: _vector(f"{d['title']} {d['text']}".strip()) for d in docs}
    ndcg, ap = [], []
    for q in queries:
        qv = _vector(q["text"])
        scored = [(sum(a * b for a, b in zip(qv, v)), d) for d, v in vectors.items()]
        ranked = [d for _, d in sorted(scored, key=lambda sd: (sd[0], sd[1]), reverse=True)]
        judged = qrels[q["_id"]]
        dcg = sum(judged.get(d, 0) / math.log2(r + 2) for r, d in enumerate(ranked[:10]))
        ideal = sorted(judged.values(), reverse=True)[:10]
        ndcg.append(dcg / sum(g / math.log2(r + 2) for r, g in enumerate(ideal)))
        hits = [r for r, d in enumerate(ranked) if judged.get(d, 0) > 0]
        ap.append(sum((i + 1) / (r + 1) for i, r in enumerate(hits)) / len(judged))
    return {"nDCG@10": sum(ndcg) / len(ndcg), "AP": sum(ap) / len(ap)}


def _args(beir: Path, *extra: str) -> list[str]:
    return ["embed-eval", "--model", f"hash:{DIM}", "--beir", str(beir), "-k", "30", "-m", "nDCG@10", "-m", "AP", "--quiet", "--device", "cpu", *extra]


def test_json_report_matches_a_plain_python_reference(beir: Path, capsys: pytest.CaptureFixture[str]):
    assert main(_args(beir, "--format", "json")) == 0
    out = json.loads(capsys.readouterr().out)
    expected = _reference(beir)
    for name, value in expected.items():
        assert out["report"]["measures"][name]["mean"] == pytest.approx(value, abs=1e-9), name
    assert out["metric"] == "ip" and out["documents"] == 30 and out["queries"] == 8 and out["world"] == 1


def test_table_prints_the_report_then_one_line_per_stage_and_reuses_the_cache(beir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(_args(beir, "--cache", str(tmp_path / "cache"))) == 0
    first = capsys.readouterr().out
    stages = re.findall(r"^(encode_corpus|encode_queries|index|search|evaluate|total) +\d+\.\d{3} s", first, re.M)
    assert stages == ["encode_corpus", "encode_queries", "index", "search", "evaluate", "total"]
    assert f"{_reference(beir)['nDCG@10']:.4f}" in first
    assert main(_args(beir, "--cache", str(tmp_path / "cache"))) == 0
    assert re.search(r"^encode_corpus .* s \(from cache\)$", capsys.readouterr().out, re.M)


@pytest.mark.slow
def test_under_torchrun_rank_zero_prints_the_same_report(beir: Path):
    torchrun = shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("torchrun not on PATH")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    command = [torchrun, "--standalone", "--nproc_per_node", "2", "-m", "gpukit.cli", *_args(beir, "--format", "json")]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)  # rank 1 prints nothing
    assert out["world"] == 2
    for name, value in _reference(beir).items():
        assert out["report"]["measures"][name]["mean"] == pytest.approx(value, abs=1e-9), name
