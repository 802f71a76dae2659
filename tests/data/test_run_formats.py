"""Run.from_msmarco, Run/Qrels.from_jsonl and Run/Qrels.from_parquet.

Each reader is checked against the data it was given, written here by the
standard tools (``json.dumps``, pandas' ``to_parquet``, plain string
formatting), and, for MS MARCO's score-less runs, by evaluating against
pytrec_eval on the original scored run: the same ranks must give the same
values. Bad lines are errors naming the file and the line.
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest
from fixture_paths import TESTS

import gpukit
from gpukit.errors import InputFormatError

DATA = TESTS / "data"
CACM_RUN = DATA / "cacm" / "run.cacm-bm25.anserini.txt"
CACM_QRELS = DATA / "cacm" / "qrels.cacm.txt"


def _trec_ranking(run: dict[str, dict[str, float]]) -> dict[str, list[str]]:
    """Each query's documents in trec_eval's order (score desc, docno desc)."""
    return {q: [d for d, _ in sorted(docs.items(), key=lambda kv: (kv[1], kv[0].encode()), reverse=True)] for q, docs in run.items()}


# ------------------------------------------------------------------ MS MARCO
def _msmarco_lines(ranking: dict[str, list[str]], shuffle: bool) -> str:
    lines = [f"{q}\t{d}\t{rank}" for q, docs in ranking.items() for rank, d in enumerate(docs, start=1)]
    if shuffle:
        random.Random(0).shuffle(lines)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("shuffle", [False, True])
def test_msmarco_run_scores_are_minus_rank_and_evaluate_as_the_scored_run(shuffle, tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scored = gpukit.Run.from_trec(CACM_RUN).to_dict()
    ranking = _trec_ranking(scored)
    path = tmp_path / "run.tsv"
    path.write_text(_msmarco_lines(ranking, shuffle))
    run = gpukit.Run.from_msmarco(path)
    assert run.to_dict() == {q: {d: -float(r) for r, d in enumerate(docs, start=1)} for q, docs in ranking.items()}
    qrels = gpukit.Qrels.from_trec(CACM_QRELS)
    names = {"map": "AP", "ndcg_cut_10": "nDCG@10", "P_5": "P@5", "recip_rank": "RR"}
    expected = pytrec_eval.RelevanceEvaluator(qrels.to_dict(), set(names)).evaluate(scored)
    report = gpukit.evaluate(qrels, run, list(names.values()), convention="trec_eval")
    for trec, ours in names.items():
        got = dict(zip(report.query_ids, report[ours].per_query.tolist()))
        for q, values in expected.items():
            assert got[q] == pytest.approx(values[trec], abs=1e-12)


def test_msmarco_gzip_and_gapped_ranks(tmp_path):
    path = tmp_path / "run.tsv.gz"
    path.write_bytes(gzip.compress(b"7\t100\t3\n7\t200\t10\n7\t300\t1\n8\t100\t2\n"))
    run = gpukit.Run.from_msmarco(path, name="marco")
    assert run.name == "marco"
    assert run.doc_ids_of_row(run.query_id_list().index("7")) == ["300", "100", "200"]


@pytest.mark.parametrize(
    ("text", "line"),
    [("1\t2\t1\n1\t3\n", 2), ("1\t2\t1\n1\t3\t1.5\n", 2), ("1\t2\t1\n1\t3\t2\textra\n", 2), ("1\t2\tx\n", 1),
     ("1\t2\t1\n1\t2\t2\n", 2)],
    ids=["two-columns", "float-rank", "four-columns", "text-rank", "duplicate-doc"],
)
def test_msmarco_bad_lines_name_file_and_line(text, line, tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises(InputFormatError) as info:
        gpukit.Run.from_msmarco(path)
    assert info.value.source == str(path) and info.value.line == line


# ------------------------------------------------------------------ JSON lines
def _write_jsonl(path: Path, records: list[dict], blank_every: int = 0) -> None:
    lines = []
    for i, r in enumerate(records):
        if blank_every and i % blank_every == 0:
            lines.append("")
        lines.append(json.dumps(r))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


def _records(run: dict[str, dict[str, float]], key: str = "score", int_ids: bool = False) -> list[dict]:
    out = []
    for q, docs in run.items():
        for d, v in docs.items():
            out.append({"query_id": int(q) if int_ids and q.isdigit() else q, "doc_id": d, key: v, "other": [1, {"x": None}]})
    return out


@pytest.mark.parametrize("variant", ["strings", "integer-query-ids", "mixed-ids-and-blank-lines", "gzip"])
def test_jsonl_run_equals_the_data_written(variant, tmp_path):
    data = gpukit.Run.from_trec(CACM_RUN).to_dict()
    records = _records(data, int_ids=variant != "strings")
    if variant == "mixed-ids-and-blank-lines":
        records[0]["query_id"] = str(records[0]["query_id"])  # strings and integers: the line scan reads them
    path = tmp_path / ("run.jsonl.gz" if variant == "gzip" else "run.jsonl")
    _write_jsonl(path, records, blank_every=7 if variant == "mixed-ids-and-blank-lines" else 0)
    run = gpukit.Run.from_jsonl(path)
    assert run.to_dict() == data
    assert run.name == path.name


def test_jsonl_qrels_equal_the_data_written(tmp_path):
    data = gpukit.Qrels.from_trec(CACM_QRELS).to_dict()
    records = _records(data, key="relevance", int_ids=True)
    records[1]["relevance"] = float(records[1]["relevance"])  # 1.0 is an integral grade
    _write_jsonl(tmp_path / "q.jsonl", records)
    assert gpukit.Qrels.from_jsonl(tmp_path / "q.jsonl").to_dict() == data


GOOD = '{"query_id": "q1", "doc_id": "d1", "score": 1.5}'
BAD_RUN_LINES = {
    "missing-field": '{"query_id": "q1", "score": 1.5}',
    "score-is-text": '{"query_id": "q1", "doc_id": "d2", "score": "1.5"}',
    "score-is-null": '{"query_id": "q1", "doc_id": "d2", "score": null}',
    "score-is-bool": '{"query_id": "q1", "doc_id": "d2", "score": true}',
    "score-is-nan": '{"query_id": "q1", "doc_id": "d2", "score": NaN}',
    "id-is-float": '{"query_id": 1.5, "doc_id": "d2", "score": 1}',
    "not-an-object": '["q1", "d2", 1.0]',
    "not-json": '{"query_id": "q1", "doc_id": "d2", "score": 1.0',
    "duplicate": GOOD,
}


@pytest.mark.parametrize("case", sorted(BAD_RUN_LINES))
def test_jsonl_bad_run_lines_name_file_and_line(case, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(f"{GOOD}\n\n{BAD_RUN_LINES[case]}\n")  # the bad line is line 3 (line 2 is blank)
    with pytest.raises(InputFormatError) as info:
        gpukit.Run.from_jsonl(path)
    assert info.value.source == str(path) and info.value.line == 3, str(info.value)


@pytest.mark.parametrize("grade", ["1.5", '"2"', "null", "99999999999999999999"])
def test_jsonl_bad_grades_name_the_line(grade, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query_id": "q", "doc_id": "a", "relevance": 1}\n' f'{{"query_id": "q", "doc_id": "b", "relevance": {grade}}}\n')
    with pytest.raises(InputFormatError) as info:
        gpukit.Qrels.from_jsonl(path)
    assert info.value.line == 2, str(info.value)


def test_jsonl_missing_file_and_empty_file(tmp_path):
    with pytest.raises(InputFormatError, match="no such file"):
        gpukit.Run.from_jsonl(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputFormatError, match="empty"):
        gpukit.Run.from_jsonl(tmp_path / "empty.jsonl")


# ------------------------------------------------------------------ Parquet
def _frame(run: dict[str, dict[str, float]], value: str):
    pd = pytest.importorskip("pandas")
    rows = [(q, d, v) for q, docs in run.items() for d, v in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", value])


@pytest.mark.parametrize("variant", ["strings", "categorical-and-int-ids", "float32-scores", "ranx-names"])
def test_parquet_run_equals_the_data_written(variant, tmp_path):
    data = gpukit.Run.from_trec(CACM_RUN).to_dict()
    df = _frame(data, "score")
    kwargs = {}
    expected = data
    if variant == "categorical-and-int-ids":
        df["query_id"] = df["query_id"].astype(int)
        df["doc_id"] = df["doc_id"].astype("category")
    elif variant == "float32-scores":
        df["score"] = df["score"].astype(np.float32)
        expected = {q: {d: float(np.float32(s)) for d, s in docs.items()} for q, docs in data.items()}
    elif variant == "ranx-names":
        df = df.rename(columns={"query_id": "q_id"})
        kwargs = {"query_col": "q_id"}
    df.to_parquet(tmp_path / "run.parquet")
    run = gpukit.Run.from_parquet(tmp_path / "run.parquet", **kwargs)
    assert run.to_dict() == expected


def test_parquet_qrels_equal_the_data_written(tmp_path):
    data = gpukit.Qrels.from_trec(CACM_QRELS).to_dict()
    df = _frame(data, "relevance")
    df.to_parquet(tmp_path / "q.parquet")
    assert gpukit.Qrels.from_parquet(tmp_path / "q.parquet").to_dict() == data
    df["relevance"] = df["relevance"].astype(float)
    df.to_parquet(tmp_path / "qf.parquet")
    assert gpukit.Qrels.from_parquet(tmp_path / "qf.parquet").to_dict() == data


def test_parquet_errors_name_the_file_column_and_row(tmp_path):
    pd = pytest.importorskip("pandas")
    base = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "score": [1.0, 2.0, 3.0]})
    base.drop(columns="score").to_parquet(tmp_path / "no_score.parquet")
    with pytest.raises(InputFormatError, match="no column 'score'"):
        gpukit.Run.from_parquet(tmp_path / "no_score.parquet")
    with_null = base.copy()
    with_null.loc[2, "doc_id"] = None
    with_null.to_parquet(tmp_path / "null.parquet")
    with pytest.raises(InputFormatError, match="row 2: column 'doc_id' is null"):
        gpukit.Run.from_parquet(tmp_path / "null.parquet")
    text_scores = base.assign(score=["1", "2", "3"])
    text_scores.to_parquet(tmp_path / "text.parquet")
    with pytest.raises(InputFormatError, match="'score' must hold numbers"):
        gpukit.Run.from_parquet(tmp_path / "text.parquet")
    pa, pq = pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")
    # Written by pyarrow: pandas would store the NaN as a null.
    pq.write_table(pa.table({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": pa.array([1.0, float("nan")])}), tmp_path / "nan.parquet")
    with pytest.raises(InputFormatError, match="row 1: score is NaN"):
        gpukit.Run.from_parquet(tmp_path / "nan.parquet")
    base.rename(columns={"score": "relevance"}).assign(relevance=[1.0, 0.5, 2.0]).to_parquet(tmp_path / "grade.parquet")
    with pytest.raises(InputFormatError, match="row 1: column 'relevance'"):
        gpukit.Qrels.from_parquet(tmp_path / "grade.parquet")
    (tmp_path / "not.parquet").write_text("hello")
    with pytest.raises(InputFormatError, match="Parquet"):
        gpukit.Run.from_parquet(tmp_path / "not.parquet")
