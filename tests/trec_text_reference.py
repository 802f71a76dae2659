"""A plain-Python reading of TREC run and qrels bytes (the fuzz suite's oracle).

Written from the format rules gpukit documents (README "Bad input" and the
docstring of gpukit/data/text_table.py), not from its code: one line at a
time, ``bytes.split`` and regular expressions, no Arrow, no NumPy.

* A file starting with the gzip magic ``1f 8b`` is decompressed; a file that
  does not decompress (truncated, corrupt, trailing garbage) is a whole-file
  error (no line), though a bad line in the part that did decompress may be
  reported first.
* Lines are split on ``\\n``; a line (bytes before its newline, a leading
  byte order mark included) longer than ``MAX_LINE_BYTES`` is an error. As
  lines are measured before they are parsed, an earlier bad line may be
  reported instead.
* A UTF-8 byte order mark is skipped as the file's first three bytes.
* Blank lines (only space, tab, CR, FF, VT) and comments (first non-blank
  byte ``#``) are skipped, whatever else they hold.
* A data line holding a control byte 0x00-0x08 or 0x0E-0x1F, or a byte order
  mark, is an error. Fields are runs of bytes other than space, tab, CR, FF
  and VT. A qrels line has exactly 4 fields (qid iter docno grade), a run
  line at least 6 (qid Q0 docno rank score tag; the rest of the line is
  ignored). Only id, score and grade fields must be UTF-8.
* Score: strtod's decimal forms, ``[+-]`` then digits with at most one
  point (at least one digit) and an optional exponent ``e[+-]digits``, or
  ``inf``/``infinity``/``nan``/``nan(chars)`` in any case; a magnitude beyond
  float64 reads as +-inf. Grade: ``-?[0-9]+`` within int64.
* These syntax errors are reported at the first bad line. Then: no data line
  is a whole-file error; a NaN score (run) or a grade beyond +-(2**31 - 2)
  (qrels) is an error at such a line; a (query, doc) pair given twice is an
  error at a line repeating an earlier pair, unless a run is read with
  ``dedup="max"`` (keep the higher score) or ``"first"`` (keep the first).
"""
from __future__ import annotations

import gzip
import io
import math
import re
import zlib
from dataclasses import dataclass

MAX_LINE_BYTES = 1 << 20
BOM = b"\xef\xbb\xbf"
MAX_ABS_GRADE = 2**31 - 2
BLANK = b" \t\r\f\v"
SEPARATORS = re.compile(rb"[ \t\r\f\v]+")
BAD_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1f]")
SCORE = re.compile(
    rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?)"
)
GRADE = re.compile(rb"-?[0-9]+")
# Field roles: "id" (UTF-8 text), "skip" (any bytes), "score", "grade".
LAYOUTS = {
    "qrels": ("id", "skip", "id", "grade"),
    "run": ("id", "skip", "id", "skip", "score", "skip"),
}


@dataclass(frozen=True)
class Verdict:
    """``ok``: ``data`` is ``{qid: {docno: grade or score}}``. Otherwise the
    reader must fail at one of ``lines`` (``None``: an error naming the file
    only); ``why`` says which rule fired."""

    ok: bool
    data: dict | None = None
    lines: frozenset = frozenset()
    why: str = ""


def gunzip(data: bytes) -> tuple[bytes, bool]:
    """(as much as decompresses, whether the stream is damaged).

    A ``read`` that meets the damage raises and loses what it decompressed
    before it, so after a failure the tail past the last whole chunk is
    read again a byte at a time."""
    out = []
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            while chunk := fh.read(1 << 16):
                out.append(chunk)
    except (OSError, EOFError, zlib.error):
        done = b"".join(out)
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            fh.read(len(done))
            tail = []
            try:
                while byte := fh.read(1):
                    tail.append(byte)
            except (OSError, EOFError, zlib.error):
                pass
        return done + b"".join(tail), True
    return b"".join(out), False


def _first_bad_line(lines: list[bytes], layout: tuple[str, ...], extra_ok: bool) -> tuple[int | None, list]:
    """(number of the first line breaking a syntax rule or None, the parsed records)."""
    records = []
    for number, raw in enumerate(lines, start=1):
        line = raw[len(BOM):] if number == 1 and raw.startswith(BOM) else raw
        stripped = line.strip(BLANK)
        if not stripped or stripped.startswith(b"#"):
            continue
        if BAD_CONTROL.search(line) or BOM in line:
            return number, records
        fields = SEPARATORS.split(stripped)
        if len(fields) < len(layout) or (len(fields) > len(layout) and not extra_ok):
            return number, records
        values = []
        for role, text in zip(layout, fields):
            if role == "skip":
                continue
            try:
                decoded = text.decode("utf-8")
            except UnicodeDecodeError:
                return number, records
            if role == "score":
                if not SCORE.fullmatch(text):
                    return number, records
                is_nan = text.lstrip(b"+-")[:3].lower() == b"nan"  # float() rejects "nan(chars)"
                values.append(math.nan if is_nan else float(decoded))
            elif role == "grade":
                if not GRADE.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
                    return number, records
                values.append(int(text))
            else:
                values.append(decoded)
        records.append((number, *values))
    return None, records


def read(data: bytes, kind: str, dedup: str = "error") -> Verdict:
    """The verdict on ``data`` read as a ``kind`` ("run" or "qrels") file."""
    layout = LAYOUTS[kind]
    damaged = False
    if data[:2] == b"\x1f\x8b":
        data, damaged = gunzip(data)
    lines = data.split(b"\n")
    if damaged:  # only the complete lines that decompressed can have been parsed
        lines = lines[:-1]
    too_long = next((i for i, line in enumerate(lines, start=1) if len(line) > MAX_LINE_BYTES), None)
    bad, records = _first_bad_line(lines, layout, extra_ok=kind == "run")
    if damaged:
        found = {n for n in (bad, too_long) if n is not None}
        return Verdict(False, lines=frozenset({None, *found}), why="damaged gzip")
    if too_long is not None:
        early = {bad} if bad is not None and bad < too_long else set()
        return Verdict(False, lines=frozenset({too_long, *early}), why="line too long")
    if bad is not None:
        return Verdict(False, lines=frozenset({bad}), why="syntax")
    if not records:
        return Verdict(False, lines=frozenset({None}), why="no data lines")
    if kind == "run":
        nan = {n for n, _, _, score in records if math.isnan(score)}
        if nan:
            return Verdict(False, lines=frozenset(nan), why="NaN score")
    else:
        wide = {n for n, _, _, grade in records if abs(grade) > MAX_ABS_GRADE}
        if wide:
            return Verdict(False, lines=frozenset(wide), why="grade out of range")
    out: dict[str, dict[str, object]] = {}
    repeats = set()
    for n, qid, docno, value in records:
        docs = out.setdefault(qid, {})
        if docno in docs:
            repeats.add(n)
            if dedup == "max":
                docs[docno] = max(docs[docno], value)
            continue
        docs[docno] = value
    if repeats and (kind == "qrels" or dedup == "error"):
        return Verdict(False, lines=frozenset(repeats), why="duplicate pair")
    return Verdict(True, data=out)
