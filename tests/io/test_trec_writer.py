"""Run.save / Run.to_trec and Qrels.save / Qrels.to_trec (gpukit.io.trec_writer).

Every written file is checked against what it must say, computed here from
the definition: one line per retrieved document, queries in run row order,
each query's documents by score descending then docno descending (trec_eval's
order), ranks from 1, a score that ``float()`` reads back to the stored
value exactly; qrels lines ``qid 0 docno grade``. pytrec_eval's own parser
reads the files back as a second, independent reader.
"""
from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
import torch
from fixture_paths import TESTS

import gpukit
from gpukit.errors import InputFormatError, UsageError

DATA = TESTS / "data"
RUNS = [DATA / "trec_eval" / "results.test", DATA / "trec_eval" / "results.comment.test.gz",
        DATA / "cacm" / "run.cacm-bm25.anserini.txt"]
QRELS = [DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "qrels.rel_level", DATA / "cacm" / "qrels.cacm.txt"]


def _expected_lines(run_dict: dict[str, dict[str, float]], order: list[str], tag: str) -> list[tuple]:
    """(qid, 'Q0', docno, rank, score, tag) per line, from the definition."""
    out = []
    for q in order:
        ranked = sorted(run_dict[q].items(), key=lambda kv: (kv[1], kv[0].encode()), reverse=True)
        out += [(q, "Q0", d, rank, s, tag) for rank, (d, s) in enumerate(ranked, start=1)]
    return out


def _parsed_lines(text: str) -> list[tuple]:
    rows = []
    for line in text.splitlines():
        q, q0, d, rank, score, tag = line.split(" ")
        rows.append((q, q0, d, int(rank), float(score), tag))
    return rows


def _assert_same_run(a: gpukit.Run, b: gpukit.Run) -> None:
    """Same queries, same rankings (document order) and bit-identical float64 scores."""
    assert sorted(a.query_id_list()) == b.query_id_list()
    da, db = a.to_dict(), b.to_dict()
    assert da.keys() == db.keys()
    for q in da:
        assert da[q].keys() == db[q].keys()
        for d, s in da[q].items():
            assert np.float64(s).tobytes() == np.float64(db[q][d]).tobytes(), (q, d)
    for row, q in enumerate(b.query_id_list()):
        a_row = a.query_id_list().index(q)
        assert a.doc_ids_of_row(a_row) == b.doc_ids_of_row(row)


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.name)
def test_fixture_runs_are_written_as_defined_and_read_back(path, tmp_path):
    run = gpukit.Run.from_trec(path)
    text = run.to_trec(tag="written")
    assert _parsed_lines(text) == _expected_lines(run.to_dict(), run.query_id_list(), "written")
    for name in ("run.txt", "run.txt.gz"):
        out = tmp_path / name
        run.save(out, tag="written")
        raw = out.read_bytes()
        assert (raw[:2] == b"\x1f\x8b") == name.endswith(".gz")
        assert (gzip.decompress(raw) if name.endswith(".gz") else raw).decode() == text
        back = gpukit.Run.from_trec(out)
        _assert_same_run(run, back)
        assert torch.equal(back.scores, run.scores)


def test_pytrec_eval_parser_reads_the_written_run_and_qrels(tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = gpukit.Run.from_trec(RUNS[0])
    qrels = gpukit.Qrels.from_trec(QRELS[0])
    run.save(tmp_path / "r.txt")
    qrels.save(tmp_path / "q.txt")
    with open(tmp_path / "r.txt") as fh:
        assert pytrec_eval.parse_run(fh) == run.to_dict()
    with open(tmp_path / "q.txt") as fh:
        assert pytrec_eval.parse_qrel(fh) == qrels.to_dict()


def test_default_tag_is_the_run_name():
    run = gpukit.Run.from_trec(RUNS[0])
    assert {line.split(" ")[5] for line in run.to_trec().splitlines()} == {"results.test"}


@pytest.mark.parametrize("seed", range(4))
def test_any_float64_bit_pattern_reads_back_bit_for_bit(seed, tmp_path):
    rng = np.random.default_rng(seed)
    n = 3000
    bits = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) | (rng.integers(0, 2, n).astype(np.uint64) << np.uint64(63))
    scores = bits.view(np.float64).copy()
    scores[np.isnan(scores)] = np.inf
    scores[:6] = [0.0, -0.0, 5e-324, -1.7976931348623157e308, 1e22, 1e-5]  # edges of the shortest spelling
    qids = [f"q{i % 37}" for i in range(n)]
    dids = [f"d{i}" for i in range(n)]
    run = gpukit.Run.from_arrays(qids, dids, scores)
    run.save(tmp_path / "r.txt")
    back = gpukit.Run.from_trec(tmp_path / "r.txt")
    expected = {}
    for q, d, s in zip(qids, dids, scores.tolist()):
        expected.setdefault(q, {})[d] = s
    got = back.to_dict()
    assert got.keys() == expected.keys()
    for q in expected:
        assert {d: np.float64(s).tobytes() for d, s in got[q].items()} == {d: np.float64(s).tobytes() for d, s in expected[q].items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_from_topk_run_reads_back_with_its_exact_scores(dtype, tmp_path):
    g = torch.Generator().manual_seed(7)
    n_q, k, n_docs = 40, 25, 300
    scores = torch.randn(n_q, k, generator=g).to(dtype)
    scores[:, 10:14] = scores[:, 10:11]  # ties, broken by docno in both runs
    idx = torch.stack([torch.randperm(n_docs, generator=g)[:k] for _ in range(n_q)])
    idx[3, 20:] = -1  # missing results are not written
    idx[5] = -1  # nor a query without any
    qids = [f"query-{i}" for i in range(n_q)]
    docs = [f"doc{i:05d}" for i in range(n_docs)]
    run = gpukit.Run.from_topk(scores, idx, qids, docs)
    assert run.score_dtype == dtype
    run.save(tmp_path / "t.run.gz")
    back = gpukit.Run.from_trec(tmp_path / "t.run.gz")
    assert back.query_id_list() == sorted(q for i, q in enumerate(qids) if i != 5)
    expected: dict[str, dict[str, float]] = {}
    for i in range(n_q):
        for j in range(k):
            if idx[i, j] >= 0:
                expected.setdefault(qids[i], {})[docs[int(idx[i, j])]] = float(scores[i, j].double())
    assert back.to_dict() == expected
    _assert_same_run(run, back)
    assert _parsed_lines(run.to_trec()) == _expected_lines(expected, [q for q in run.query_id_list()], "run")


def test_run_in_blocks_is_written_in_row_order(tmp_path):
    run_dict = {f"q{i:04d}": {"a": 1.0, "b": 0.5} for i in range(1500)}
    # Two far deeper queries: padding every row to them would cost more than
    # twice the lines plus LAYOUT_SLACK_ELEMENTS, so rows are laid out in blocks.
    run_dict["q0700"] = {f"x{i}": float(i % 97) for i in range(2000)}
    run_dict["q0701"] = {f"d{i}": float(-i) for i in range(900)}
    run = gpukit.Run.from_dict(run_dict)
    assert run.blocks is not None
    text = run.to_trec(tag="t")
    queries = [line.split(" ", 1)[0] for line in text.splitlines()]
    assert list(dict.fromkeys(queries)) == run.query_id_list()
    run.save(tmp_path / "b.txt")
    _assert_same_run(run, gpukit.Run.from_trec(tmp_path / "b.txt"))


@pytest.mark.parametrize("path", QRELS, ids=lambda p: p.name)
def test_qrels_are_written_as_defined_and_read_back(path, tmp_path):
    qrels = gpukit.Qrels.from_trec(path)
    expected = [f"{q} 0 {d} {g}" for q in sorted(qrels.to_dict(), key=str.encode)
                for d, g in sorted(qrels.to_dict()[q].items(), key=lambda kv: kv[0].encode())]
    assert qrels.to_trec().splitlines() == expected
    for name in ("q.txt", "q.txt.gz"):
        qrels.save(tmp_path / name)
        assert gpukit.Qrels.from_trec(tmp_path / name).to_dict() == qrels.to_dict()


def test_qrels_with_negative_grades_and_long_non_ascii_ids_round_trip(tmp_path):
    judgments = {"t\u00e9l\u00e9": {"a-very-long-document-identifier-" + str(i): (i % 5) - 2 for i in range(50)},
                 "10": {"\u6587\u66f8": 3, "short": 0}, "9": {"x": 2**31 - 2}}
    qrels = gpukit.Qrels.from_dict(judgments)
    qrels.save(tmp_path / "q.txt")
    assert gpukit.Qrels.from_trec(tmp_path / "q.txt").to_dict() == judgments


@pytest.mark.parametrize(
    ("run_dict", "what"),
    [({"a b": {"d": 1.0}}, "query id"), ({"q": {"d\t1": 1.0}}, "document id"), ({"#q": {"d": 1.0}}, "query id"),
     ({"q": {"": 1.0}}, "document id"), ({"q": {"d\ufeff": 1.0}}, "document id"), ({"q": {"d\n": 1.0}}, "document id")],
)
def test_ids_a_trec_reader_would_split_are_refused_and_no_file_is_left(run_dict, what, tmp_path):
    run = gpukit.Run.from_dict(run_dict)
    with pytest.raises(InputFormatError, match=what):
        run.save(tmp_path / "out.txt", tag="t")
    assert os.listdir(tmp_path) == []
    with pytest.raises(InputFormatError, match=what):
        run.to_trec(tag="t")


def test_bad_tag_format_and_paths_are_usage_errors(tmp_path):
    run = gpukit.Run.from_dict({"q": {"d": 1.0}}, name="my run")
    with pytest.raises(UsageError, match="tag"):
        run.to_trec()  # the name is two words
    with pytest.raises(UsageError, match="tag"):
        run.to_trec(tag="a b")
    with pytest.raises(UsageError, match="format"):
        run.save(tmp_path / "x", format="csv", tag="t")
    with pytest.raises(UsageError, match="directory"):
        run.save(tmp_path, tag="t")
    with pytest.raises(UsageError, match="does not exist"):
        run.save(tmp_path / "missing" / "x.txt", tag="t")


def test_written_file_gets_the_mode_open_would_give(tmp_path):
    reference = tmp_path / "reference"
    reference.write_text("")
    run = gpukit.Run.from_dict({"q": {"d": 1.0}})
    run.save(tmp_path / "r.txt")
    assert os.stat(tmp_path / "r.txt").st_mode == os.stat(reference).st_mode


def test_dash_writes_standard_output(capfd):
    run = gpukit.Run.from_dict({"q1": {"d1": 0.25, "d2": 2.0}})
    run.save("-", tag="t")
    assert _parsed_lines(capfd.readouterr().out) == _expected_lines(run.to_dict(), ["q1"], "t")
