"""BEIR reader and the bundled SciFact collection."""
from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

import gpukit
from gpukit.datasets import (
    document_text,
    load_beir,
    load_scifact,
    read_beir_qrels,
    scifact_path,
    scifact_run_path,
)
from gpukit.errors import InputFormatError


def _write_beir(folder: Path, corpus: list, queries: list, qrels_rows: list[str], gz: bool = False, split: str = "test") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    corpus_text = "".join(json.dumps(r) + "\n" for r in corpus)
    if gz:
        with gzip.open(folder / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write(corpus_text)
    else:
        (folder / "corpus.jsonl").write_text(corpus_text, encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8")
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / f"{split}.tsv").write_text("\n".join(qrels_rows) + "\n", encoding="utf-8")
    return folder


CORPUS = [
    {"_id": "d1", "title": "Cats", "text": "Cats purr."},
    {"_id": "d2", "text": "Dogs bark."},  # no title
    {"_id": 3, "title": "", "text": "Numeric id."},
]
QUERIES = [
    {"_id": "q1", "text": "purring animals"},
    {"_id": "q2", "text": "unjudged query", "metadata": {}},
    {"_id": "q3", "text": "barking"},
]
QRELS = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q3\td2\t2", "q3\t3\t0"]


@pytest.mark.parametrize("gz", [False, True])
def test_load_beir_keeps_only_judged_queries(tmp_path, gz):
    data = load_beir(_write_beir(tmp_path / "mini", CORPUS, QUERIES, QRELS, gz=gz))
    assert list(data.queries) == ["q1", "q3"]  # file order, q2 has no judgments
    assert data.queries["q3"] == "barking"
    assert list(data.corpus) == ["d1", "d2", "3"]
    assert data.corpus["d2"] == {"title": "", "text": "Dogs bark."}
    assert data.qrels.to_dict() == {"q1": {"d1": 1}, "q3": {"d2": 2, "3": 0}}
    assert data.name == "mini" and data.split == "test"


def test_document_text_is_beir_concatenation():
    assert document_text({"title": "Cats", "text": "Cats purr."}) == "Cats Cats purr."
    assert document_text({"title": "", "text": "Dogs bark."}) == "Dogs bark."
    assert document_text({"text": "x"}) == "x"
    assert document_text("plain") == "plain"


def test_read_beir_qrels_alone_and_without_header(tmp_path):
    path = tmp_path / "q.tsv"
    path.write_text("q1\td1\t1\nq1\td2\t0\n\nq2\td1\t2.0\n")
    qrels = read_beir_qrels(path)
    assert isinstance(qrels, gpukit.Qrels)
    assert qrels.to_dict() == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}


@pytest.mark.parametrize(
    "rows, line, fragment",
    [
        (["query-id\tcorpus-id\tscore", "q1\td1"], 2, "expected 3 fields"),
        (["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\td2\tx"], 3, "not a number"),
        (["query-id\tcorpus-id\tscore", "q1\td1\t1.5"], 2, "not an integer"),
        (["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td1\t1", "q1\td1\t0"], 4, "duplicate judgment"),
    ],
)
def test_malformed_qrels_rows_name_file_and_line(tmp_path, rows, line, fragment):
    path = tmp_path / "bad.tsv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(InputFormatError) as info:
        read_beir_qrels(path)
    assert info.value.line == line
    assert str(path) in str(info.value) and fragment in str(info.value)


@pytest.mark.parametrize("gz", [False, True])
def test_malformed_corpus_json_names_file_and_line(tmp_path, gz):
    folder = _write_beir(tmp_path / "b", CORPUS, QUERIES, QRELS, gz=gz)
    name = "corpus.jsonl.gz" if gz else "corpus.jsonl"
    good = "".join(json.dumps(r) + "\n" for r in CORPUS)
    bad = good + '{"_id": "d9", "text": "unterminated\n'
    if gz:
        with gzip.open(folder / name, "wt", encoding="utf-8") as fh:
            fh.write(bad)
    else:
        (folder / name).write_text(bad)
    with pytest.raises(InputFormatError) as info:
        load_beir(folder)
    assert info.value.line == 4 and name in str(info.value) and "invalid JSON" in str(info.value)


@pytest.mark.parametrize(
    "record, fragment",
    [({"title": "t", "text": "x"}, 'missing "_id"'), ({"_id": "d9"}, 'missing "text"'), ({"_id": "d9", "text": 5}, "must be a string"), ({"_id": "d1", "text": "again"}, "repeated (first on line 1)")],
)
def test_invalid_corpus_records(tmp_path, record, fragment):
    folder = _write_beir(tmp_path / "b", CORPUS + [record], QUERIES, QRELS)
    with pytest.raises(InputFormatError) as info:
        load_beir(folder)
    assert info.value.line == 4 and fragment in str(info.value)


def test_missing_split_and_missing_query_are_clear(tmp_path):
    folder = _write_beir(tmp_path / "b", CORPUS, QUERIES, QRELS)
    with pytest.raises(InputFormatError, match=r"no qrels for split 'dev' \(available: test\)"):
        load_beir(folder, split="dev")
    folder = _write_beir(tmp_path / "c", CORPUS, QUERIES, QRELS + ["q7\td1\t1"])
    with pytest.raises(InputFormatError, match=r"judged queries are not in queries.jsonl, e.g. 'q7'"):
        load_beir(folder)
    with pytest.raises(InputFormatError, match="not a directory"):
        load_beir(tmp_path / "nowhere")


# ------------------------------------------------------------------ SciFact
def _raw_scifact():
    folder = scifact_path()
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        corpus = [json.loads(line) for line in fh if line.strip()]
    queries = [json.loads(line) for line in open(folder / "queries.jsonl", encoding="utf-8") if line.strip()]
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))[1:]
    return corpus, queries, rows


def test_bundled_scifact_matches_the_raw_files():
    corpus, queries, rows = _raw_scifact()
    data = load_scifact()
    judged = {r[0] for r in rows}
    assert list(data.corpus) == [c["_id"] for c in corpus]
    assert all(data.corpus[c["_id"]] == {"title": c["title"], "text": c["text"]} for c in corpus)
    assert list(data.queries) == [q["_id"] for q in queries if q["_id"] in judged]
    assert len(data.qrels) == len(rows)
    expected: dict[str, dict[str, int]] = {}
    for q, d, g in rows:
        expected.setdefault(q, {})[d] = int(g)
    assert data.qrels.to_dict() == expected


def test_bundled_files_and_licence_are_present():
    folder = scifact_path()
    for name in ("corpus.jsonl.gz", "queries.jsonl", "qrels/test.tsv", "LICENSE.md", "NOTICE"):
        assert (folder / name).is_file(), name
    licence = (folder / "LICENSE.md").read_text(encoding="utf-8")
    assert "CC BY-NC 2.0" in licence and "Wadden" in licence and "BEIR" in licence
    assert scifact_run_path().is_file()
