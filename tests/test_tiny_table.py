"""The tiny-input parser (gpukit/data/tiny_table.py) against the Arrow reader.

Random run and qrels files, clean and dirty (tabs, runs of spaces, CRLF,
leading and trailing whitespace, blank lines, scientific notation and
inf scores, ids longer than 8 bytes, repeated pairs, extra fields, no final
newline, byte order marks, gzip; then bad fields, comments, non-ASCII and
control bytes), are read once with the tiny parser tried first and once by
the Arrow reader alone: the parsed columns, the row-to-line map and the
``Run``/``Qrels`` built from them are identical, and so is every error
(type, file, line and message). Clean files must take the tiny path, so
that the comparison is not between the Arrow reader and itself.
"""
from __future__ import annotations

import gzip
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpukit
import gpukit.data.text_table as tt
import gpukit.data.tiny_table as tiny
from reader_strategies import READER_STRATEGIES
from gpukit.data.qrels import _TREC_QRELS_COLUMNS
from gpukit.data.run import _TREC_RUN_COLUMNS
from gpukit.errors import GpukitError

SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
LAYOUT = {"run": (_TREC_RUN_COLUMNS, True), "qrels": (_TREC_QRELS_COLUMNS, False)}
IDS = st.sampled_from(["1", "q1", "301", "0", "-1", "Q0", "CACM-1410", "FT931-3945", "LA010189-0001",
                       "clueweb09-en0000-00-00000", "d" * 40, "a.b_c", "x\x7fy", '"q"', "\\"])
SCORES = st.one_of(
    st.floats(allow_nan=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.6e}"),
    st.sampled_from(["1", "0", "-0", "1.", ".5", "+.5", "-1.5E+02", "2e-3", "INF", "-Infinity", "+inf",
                     "1e400", "-1e400", "1e-400", "5e-324", "0" * 30 + "1", "1" + "0" * 300, "12.033000"]),
)
GRADES = st.one_of(st.integers(-3, 4).map(str), st.sampled_from(["-0", "007", "2147483646", "-2147483646",
                                                                  "123456789012345678"]))
SEPS = st.sampled_from([" ", " ", " ", "\t", "  ", " \t ", "\x0b", "\x0c", "\r"])
# Fields that are wrong somewhere, or that the tiny path hands to the Arrow reader.
DIRTY = st.sampled_from(["nan", "NaN", "nan(1)", "1_0", "1e", "0x1p3", "+1", "1.0", "1e3", "", "é", "#", "#c",
                         "\x00", "\x1f", "\xef\xbb\xbf", "9223372036854775807", "9223372036854775808",
                         "-9223372036854775809", "1234567890123456789"])


@st.composite
def table_text(draw, kind: str) -> bytes:
    lines = []
    for qid in draw(st.lists(IDS, min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(IDS, min_size=1, max_size=8))  # repeats: duplicate pairs
        for rank, doc in enumerate(docs, 1):
            if kind == "run":
                fields = [qid, "Q0", doc, str(rank), draw(SCORES), draw(st.sampled_from(["tag", "Anserini", "r-1"]))]
                fields += draw(st.lists(st.sampled_from(["extra", "1"]), max_size=2))
            else:
                fields = [qid, draw(st.sampled_from(["0", "Q0"])), doc, draw(GRADES)]
            if draw(st.integers(0, 19)) == 0:  # a dirty field, or one missing
                at = draw(st.integers(0, len(fields) - 1))
                fields[at:at + 1] = [] if draw(st.booleans()) else [draw(DIRTY)]
            seps = [draw(SEPS) for _ in fields[1:]]
            text = fields[0] + "".join(s + f for s, f in zip(seps, fields[1:])) if fields else ""
            lead, trail = draw(st.sampled_from(["", "", " ", "\t"])), draw(st.sampled_from(["", "", " ", "\t", "\r"]))
            lines.append(lead + text + trail)
            if draw(st.integers(0, 14)) == 0:
                lines.append(draw(st.sampled_from(["", "  ", "\t", "# a comment"])))
    end = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    text = end.join(lines) + draw(st.sampled_from([end, end, ""]))
    if draw(st.integers(0, 9)) == 0:
        text = "\ufeff" + text
    return text.encode("utf-8")


def _outcome(call):
    try:
        return "ok", call()
    except GpukitError as exc:
        return "error", (type(exc).__name__, str(exc), getattr(exc, "source", None), getattr(exc, "line", None))


def _read_both(monkeypatch, path, kind, dedup="error"):
    """What each strategy makes of the file: parsed columns, line map, the Run or Qrels."""
    columns, extra = LAYOUT[kind]
    results, took_tiny = {}, {}
    for strategy, limit in READER_STRATEGIES.items():
        monkeypatch.setattr(tt, "TINY_INPUT_BYTES", limit)
        calls = []
        real = tiny.parse_tiny
        monkeypatch.setattr(tt, "parse_tiny", lambda *a, **k: calls.append(real(*a, **k)) or calls[-1])

        def read():
            table = tt.read_table(path, columns, kind, rest_of_line_ignored=extra)
            cols = {name: col for name, col in table.columns.items()}
            lines = [table.line_of(row) for row in range(table.num_rows)]
            return table.num_rows, cols, lines

        built = (lambda: gpukit.Run.from_trec(path, dedup=dedup).to_dict()) if kind == "run" else (
            lambda: gpukit.Qrels.from_trec(path).to_dict())
        results[strategy] = (_outcome(read), _outcome(built))
        took_tiny[strategy] = any(c is not None for c in calls)
        monkeypatch.setattr(tt, "parse_tiny", real)
    assert not took_tiny["arrow"]
    return results, took_tiny["tiny"]


def _assert_same(results):
    (a_table, a_built), (b_table, b_built) = results["tiny"], results["arrow"]
    assert a_table[0] == b_table[0], (a_table, b_table)
    if a_table[0] == "ok":
        rows_a, cols_a, lines_a = a_table[1]
        rows_b, cols_b, lines_b = b_table[1]
        assert rows_a == rows_b and lines_a == lines_b
        assert sorted(cols_a) == sorted(cols_b)
        for name in cols_a:
            x, y = cols_a[name].combine_chunks(), cols_b[name].combine_chunks()
            assert x.type == y.type, name
            if pa.types.is_floating(x.type):  # NaN (rejected later, by the run) equal; -0.0 and 0.0 not
                u, v = x.to_numpy(), y.to_numpy()
                assert np.array_equal(u, v, equal_nan=True) and np.array_equal(np.signbit(u), np.signbit(v)), name
            else:
                assert x.equals(y), name
    else:
        assert a_table == b_table
    assert a_built == b_built


def _clean(text: bytes) -> bool:
    """What the tiny path must accept: ASCII, no '#', no control bytes but the separators."""
    body = text[3:] if text.startswith(b"\xef\xbb\xbf") else text
    return body.isascii() and b"#" not in body and not any(b < 0x20 and b not in b"\t\n\v\f\r" for b in body)


@SETTINGS
@given(kind=st.sampled_from(["run", "qrels"]), data=st.data(), gz=st.booleans(),
       dedup=st.sampled_from(["error", "max", "first"]))
def test_tiny_and_arrow_readers_agree(tmp_path, monkeypatch, kind, data, gz, dedup):
    text = data.draw(table_text(kind))
    path = tmp_path / f"{kind}{'.gz' if gz else ''}"
    path.write_bytes(gzip.compress(text, mtime=0) if gz else text)
    results, took_tiny = _read_both(monkeypatch, str(path), kind, dedup)
    _assert_same(results)
    if results["arrow"][0][0] == "ok" and _clean(text):
        assert took_tiny, text[:200]  # a clean file the Arrow reader accepts is the tiny path's


@pytest.mark.parametrize("name", ["qrels.cacm.txt", "run.cacm-bm25.anserini.txt"])
def test_cacm_fixture_takes_the_tiny_path(monkeypatch, name):
    kind = "qrels" if name.startswith("qrels") else "run"
    results, took_tiny = _read_both(monkeypatch, f"tests/data/cacm/{name}", kind)
    assert took_tiny
    _assert_same(results)
    assert results["tiny"][0][1][0] == (796 if kind == "qrels" else 1920)


def test_large_or_many_block_files_skip_the_tiny_path(tmp_path, monkeypatch):
    """Above TINY_INPUT_BYTES, or beyond one block, the Arrow reader reads (its block logic stays tested)."""
    path = tmp_path / "qrels"
    path.write_bytes(b"".join(b"q%d 0 d%d 1\n" % (i % 7, i) for i in range(2000)))
    calls = []
    monkeypatch.setattr(tt, "parse_tiny", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(tt, "TINY_INPUT_BYTES", 1024)
    assert tt.read_table(str(path), _TREC_QRELS_COLUMNS, "qrels").num_rows == 2000 and not calls
    monkeypatch.setattr(tt, "TINY_INPUT_BYTES", 1 << 62)
    monkeypatch.setattr(tt, "BLOCK_BYTES", 4096)
    assert tt.read_table(str(path), _TREC_QRELS_COLUMNS, "qrels").num_rows == 2000 and not calls


def _arrow_float(texts: list[str]) -> list:
    """Each text parsed alone by Arrow's CSV float parser (None: rejected)."""
    out = []
    for text in texts:
        try:
            table = pacsv.read_csv(
                pa.py_buffer(f"x\n{text}\n".encode()),
                convert_options=pacsv.ConvertOptions(column_types={"x": pa.float64()}, null_values=[], strings_can_be_null=False),
            )
            out.append(table.column(0)[0].as_py())
        except pa.ArrowInvalid:
            out.append(None)
    return out


def test_arrow_cast_reads_scores_as_the_csv_reader_does():
    """The tiny path's claim about scores: on fields without whitespace, Arrow's
    cast from strings accepts exactly the spellings its CSV reader accepts
    (FLOAT_TEXT) and gives the same bits."""
    rng = random.Random(5)
    texts = ["1.", ".5", "+.5", "-0", "0", "inf", "-INF", "Infinity", "iNfInItY", "nan", "-NaN", "nan(1)", "nan()",
             "infinit", "infx", "1e400", "-1e400", "1e-400", "4.9e-324", "2.4703282292062328e-324", "1e", "e5", ".",
             "-", "+", "1.5.2", "1,5", "0x1p3", "0x10", "1e+", ".e5", "1.e5", "++1", "1e99999999999999999999",
             "9" * 800 + "e-800", "1" + "0" * 400, "0." + "0" * 400 + "1", "2.2250738585072011e-308", "1d5", "1f",
             "1_0", "\u0661", "0e0", "-.0", "+0.", "00", "nan(abc_1)", "inf(1)", "infinity1", "1e5.5", "--1", "1-"]
    for _ in range(3000):
        texts.append(f"%.{rng.randint(0, 25)}e" % (rng.uniform(-1, 1) * 10.0 ** rng.randint(-320, 308)))
        texts.append(repr(rng.random() * 10 ** rng.randint(-5, 20)))
        texts.append(f"{rng.randint(0, 10**30)}.{rng.randint(0, 10**30)}")
        texts.append("".join(rng.choice("0123456789.eE+-nifa_") for _ in range(rng.randint(1, 6))))
    for text, csv in zip(texts, _arrow_float(texts)):
        try:
            cast = pc.cast(pa.array([text], pa.string()), pa.float64())[0].as_py()
        except pa.ArrowInvalid:
            cast = None
        assert (csv is not None) == bool(tt.FLOAT_TEXT.fullmatch(text)), text
        assert (cast is None) == (csv is None), text
        if cast is not None:
            same = np.float64(cast).view(np.int64) == np.float64(csv).view(np.int64)
            assert same or (cast != cast and csv != csv), text


@pytest.mark.parametrize("bom", [False, True])
def test_line_length_limit_counts_a_leading_byte_order_mark(tmp_path, monkeypatch, bom):
    """The Arrow reader counts a leading BOM in the first line's length; the tiny
    path must not accept a first line that is too long only with it."""
    doc = b"d" * (tt.MAX_LINE_BYTES - len(b"q1 0  1") - 1)  # the line is MAX_LINE_BYTES - 1 bytes
    text = (b"\xef\xbb\xbf" if bom else b"") + b"q1 0 " + doc + b" 1\nq1 0 d2 0\n"
    path = tmp_path / "qrels"
    path.write_bytes(text)
    results, _ = _read_both(monkeypatch, str(path), "qrels")
    _assert_same(results)
    assert results["arrow"][0][0] == ("error" if bom else "ok")  # with the BOM: MAX_LINE_BYTES + 2 bytes
