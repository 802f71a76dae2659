"""``gpukit search`` end to end on small .npy files."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import gpukit.cli
from gpukit.cli import main
from gpukit.index import ExactIndex

# Captured at import, before any fixture narrows it.
REGISTERED_COMMANDS = gpukit.cli.COMMAND_MODULES


@pytest.fixture(autouse=True)
def search_command_only(monkeypatch):
    """Register only the search command, so these tests do not depend on the
    other sub-commands importing cleanly."""
    monkeypatch.setattr(gpukit.cli, "COMMAND_MODULES", ("search_cmd",))


@pytest.fixture
def embeddings(tmp_path):
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((150, 16)).astype(np.float32)
    queries = rng.standard_normal((12, 16)).astype(np.float32)
    np.save(tmp_path / "corpus.npy", corpus)
    np.save(tmp_path / "queries.npy", queries)
    return tmp_path, corpus, queries


def read_trec_run(path) -> list[tuple[str, str, int, float, str]]:
    rows = []
    for line in path.read_text().splitlines():
        qid, q0, docid, rank, score, name = line.split()
        assert q0 == "Q0"
        rows.append((qid, docid, int(rank), float(score), name))
    return rows


def expected_rows(corpus, queries, k, metric, query_ids, doc_ids, name):
    index = ExactIndex(corpus.shape[1], metric=metric, device="cpu")
    index.add(torch.from_numpy(corpus))
    scores, positions = index.search(torch.from_numpy(queries), k)
    return [
        (query_ids[q], doc_ids[positions[q, r]], r + 1, float(scores[q, r]), name)
        for q in range(queries.shape[0])
        for r in range(k)
    ]


def test_search_is_a_registered_command():
    assert "search_cmd" in REGISTERED_COMMANDS


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_exact_run_matches_exact_index_with_id_files(embeddings, metric):
    tmp_path, corpus, queries = embeddings
    doc_ids = [f"doc-{i * 7}" for i in range(corpus.shape[0])]
    query_ids = [f"q{i}" for i in range(queries.shape[0])]
    (tmp_path / "docs.txt").write_text("\n".join(doc_ids) + "\n")
    (tmp_path / "queries.txt").write_text("\n".join(query_ids) + "\n")
    out = tmp_path / "run.trec"
    code = main([
        "search", "--corpus", str(tmp_path / "corpus.npy"), "--queries", str(tmp_path / "queries.npy"),
        "--doc-ids", str(tmp_path / "docs.txt"), "--query-ids", str(tmp_path / "queries.txt"),
        "--index", "exact", "-k", "7", "--out", str(out), "--metric", metric, "--device", "cpu",
        "--run-name", "exact-run",
    ])  # fmt: skip
    assert code == 0
    got = read_trec_run(out)
    want = expected_rows(corpus, queries, 7, metric, query_ids, doc_ids, "exact-run")
    assert [row[:3] + row[4:] for row in got] == [row[:3] + row[4:] for row in want]
    # %.9g round-trips float32 scores exactly.
    assert [np.float32(row[3]) for row in got] == [np.float32(row[3]) for row in want]


def test_faiss_flat_run_with_default_ids(embeddings):
    tmp_path, corpus, queries = embeddings
    out = tmp_path / "flat.trec"
    code = main([
        "search", "--corpus", str(tmp_path / "corpus.npy"), "--queries", str(tmp_path / "queries.npy"),
        "--index", "Flat", "-k", "5", "--out", str(out), "--metric", "l2", "--device", "cpu",
    ])  # fmt: skip
    assert code == 0
    got = read_trec_run(out)
    row_ids = [str(i) for i in range(corpus.shape[0])]
    want = expected_rows(corpus, queries, 5, "l2", [str(i) for i in range(12)], row_ids, "gpukit")
    assert [row[:3] for row in got] == [row[:3] for row in want]
    np.testing.assert_allclose([row[3] for row in got], [row[3] for row in want], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["-k", "151"], "k must be"),
        (["-k", "3", "--nprobe", "4"], "--nprobe"),
        (["-k", "3", "--index", "Flat", "--dtype", "bf16"], "--dtype"),
        (["-k", "3", "--doc-ids", "{short_ids}"], "ids for 150"),
        (["-k", "3", "--corpus", "{missing}"], "cannot read"),
    ],
)
def test_errors_are_reported_cleanly(embeddings, capsys, extra, message):
    tmp_path, _, _ = embeddings
    (tmp_path / "short.txt").write_text("a\nb\n")
    paths = {"short_ids": str(tmp_path / "short.txt"), "missing": str(tmp_path / "missing.npy")}
    extra = [part.format(**paths) for part in extra]
    corpus = [] if "--corpus" in extra else ["--corpus", str(tmp_path / "corpus.npy")]  # a file option takes one value
    args = [
        "search", *corpus, "--queries", str(tmp_path / "queries.npy"),
        "--out", str(tmp_path / "x.trec"), "--device", "cpu",
    ]  # fmt: skip
    assert main(args + extra) == 2
    assert message in capsys.readouterr().err
