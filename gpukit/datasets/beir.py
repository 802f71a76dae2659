"""Reading BEIR-format collections (Thakur et al. 2021).

A BEIR folder holds::

    corpus.jsonl[.gz]     {"_id": "...", "title": "...", "text": "..."} per line
    queries.jsonl[.gz]    {"_id": "...", "text": "..."} per line
    qrels/<split>.tsv     header "query-id<TAB>corpus-id<TAB>score", then one row per judgment

Conventions, as BEIR's ``GenericDataLoader``: only queries with at least one
judgment in the split are kept (whatever the grade), ids are strings (a
numeric ``_id`` is read as its decimal text), a missing title is the empty
string. Unlike BEIR, which silently keeps the last of repeated rows, a
repeated document id, query id or (query, document) judgment is an error
naming both lines, as everywhere else in gpukit.
"""
from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from gpukit.judgments.qrels import Qrels
from gpukit.errors import InputFormatError

PathLike = str | os.PathLike


@dataclass(frozen=True)
class BeirData:
    """One split of a BEIR collection.

    Attributes:
        corpus: ``{doc_id: {"title": str, "text": str}}`` in file order.
        queries: ``{query_id: text}``, only queries judged in the split, in file order.
        qrels: the split's judgments.
        name: the folder name (e.g. ``"scifact"``).
        split: the qrels split read (``"test"``).
    """

    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: Qrels
    name: str = "beir"
    split: str = "test"

    def __repr__(self) -> str:
        return (
            f"BeirData({self.name!r}, split={self.split!r}, docs={len(self.corpus)}, "
            f"queries={len(self.queries)}, judgments={len(self.qrels)})"
        )


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _find(folder: Path, stem: str) -> Path:
    """``stem`` or ``stem.gz`` inside ``folder``, whichever exists."""
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    raise InputFormatError(str(folder), None, f"no {stem} or {stem}.gz in this BEIR folder")


def _json_records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line; malformed lines raise."""
    source = str(path)
    try:
        with _open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputFormatError(source, number, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
                if not isinstance(record, dict):
                    raise InputFormatError(source, number, f"expected a JSON object, got {type(record).__name__}")
                yield number, record
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputFormatError(source, None, f"cannot read: {exc}") from None


def _record_id(record: dict, source: str, line: int) -> str:
    if "_id" not in record:
        raise InputFormatError(source, line, 'missing "_id"')
    value = record["_id"]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputFormatError(source, line, f'"_id" must be a string, got {value!r}')
    text = str(value)
    if not text:
        raise InputFormatError(source, line, 'empty "_id"')
    return text


def _text_field(record: dict, key: str, source: str, line: int, required: bool) -> str:
    value = record.get(key)
    if value is None:
        if required:
            raise InputFormatError(source, line, f'missing "{key}"')
        return ""
    if not isinstance(value, str):
        raise InputFormatError(source, line, f'"{key}" must be a string, got {type(value).__name__}')
    return value


def read_beir_corpus(path: PathLike) -> dict[str, dict[str, str]]:
    """``corpus.jsonl[.gz]`` as ``{doc_id: {"title": ..., "text": ...}}``."""
    path = Path(path)
    source = str(path)
    corpus: dict[str, dict[str, str]] = {}
    first_line: dict[str, int] = {}
    for line, record in _json_records(path):
        doc_id = _record_id(record, source, line)
        if doc_id in corpus:
            raise InputFormatError(source, line, f"document {doc_id!r} repeated (first on line {first_line[doc_id]})")
        first_line[doc_id] = line
        corpus[doc_id] = {
            "title": _text_field(record, "title", source, line, required=False),
            "text": _text_field(record, "text", source, line, required=True),
        }
    if not corpus:
        raise InputFormatError(source, None, "empty corpus: no documents")
    return corpus


def read_beir_queries(path: PathLike) -> dict[str, str]:
    """``queries.jsonl[.gz]`` as ``{query_id: text}``."""
    path = Path(path)
    source = str(path)
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for line, record in _json_records(path):
        query_id = _record_id(record, source, line)
        if query_id in queries:
            raise InputFormatError(source, line, f"query {query_id!r} repeated (first on line {first_line[query_id]})")
        first_line[query_id] = line
        queries[query_id] = _text_field(record, "text", source, line, required=True)
    return queries


def _parse_grade(text: str, source: str, line: int) -> int:
    try:
        value = float(text)
    except ValueError:
        raise InputFormatError(source, line, f"score {text!r} is not a number") from None
    if not value.is_integer():
        raise InputFormatError(source, line, f"score {text!r} is not an integer grade")
    return int(value)


def read_beir_qrels(path: PathLike) -> Qrels:
    """A BEIR ``qrels/<split>.tsv`` file as :class:`~gpukit.Qrels`.

    Rows are ``query-id<TAB>corpus-id<TAB>score``; the first line is taken as
    the header when its score field is not a number. Blank lines are skipped.
    A file without tabs is split on whitespace. Grades must be integers
    (``1`` or ``1.0``); a repeated (query, document) pair is an error naming
    both lines.
    """
    path = Path(path)
    source = str(path)
    queries: list[str] = []
    docs: list[str] = []
    grades: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    try:
        with _open_text(path) as handle:
            for number, raw in enumerate(handle, start=1):
                line = raw.rstrip("\r\n")
                if not line.strip():
                    continue
                fields = line.split("\t") if "\t" in line else line.split()
                fields = [f.strip() for f in fields]
                if number == 1 and len(fields) == 3 and not _is_number(fields[2]):
                    continue  # header: query-id corpus-id score
                if len(fields) != 3:
                    raise InputFormatError(source, number, f"expected 3 fields (query-id, corpus-id, score), got {len(fields)}")
                query_id, doc_id, score = fields
                if not query_id or not doc_id:
                    raise InputFormatError(source, number, "empty query-id or corpus-id")
                grade = _parse_grade(score, source, number)
                key = (query_id, doc_id)
                if key in seen:
                    raise InputFormatError(
                        source, number, f"duplicate judgment for query {query_id!r} doc {doc_id!r} (lines {seen[key]} and {number})"
                    )
                seen[key] = number
                queries.append(query_id)
                docs.append(doc_id)
                grades.append(grade)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputFormatError(source, None, f"cannot read: {exc}") from None
    if not grades:
        raise InputFormatError(source, None, "empty qrels: no judgments")
    return Qrels.from_arrays(queries, docs, grades, source=source)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_beir(path: PathLike, split: str = "test") -> BeirData:
    """Read a BEIR folder: corpus, the split's qrels, and the queries judged in it.

    Raises :class:`~gpukit.errors.InputFormatError` naming the file and line
    for malformed JSON lines or TSV rows, and naming the qrels file when a
    judged query is missing from ``queries.jsonl``.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise InputFormatError(str(folder), None, "not a directory (expected a BEIR folder)")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []
        raise InputFormatError(str(qrels_path), None, f"no qrels for split {split!r} (available: {', '.join(available) or 'none'})")
    qrels = read_beir_qrels(qrels_path)
    all_queries = read_beir_queries(_find(folder, "queries.jsonl"))
    judged = set(qrels.query_id_list())
    missing = sorted(judged.difference(all_queries))
    if missing:
        raise InputFormatError(
            str(qrels_path), None, f"{len(missing)} judged queries are not in queries.jsonl, e.g. {missing[0]!r}"
        )
    # BEIR keeps only the queries judged in the split, in queries.jsonl order.
    queries = {qid: text for qid, text in all_queries.items() if qid in judged}
    corpus = read_beir_corpus(_find(folder, "corpus.jsonl"))
    return BeirData(corpus=corpus, queries=queries, qrels=qrels, name=folder.name, split=split)


def document_text(doc: str | dict[str, str]) -> str:
    """The text a dense model encodes for a document.

    BEIR and MTEB concatenate ``title + " " + text`` and strip the result
    (so a missing title adds no leading space); a plain string is used as is.
    """
    if isinstance(doc, str):
        return doc
    return (str(doc.get("title") or "") + " " + str(doc.get("text") or "")).strip()
