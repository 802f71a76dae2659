"""Fuzzing the TREC readers: mutated run and qrels files never give a wrong
number, a stray exception, a hang or a memory blow-up.

Valid run and qrels files are generated, then mutated (bytes, columns,
numbers, ids, line endings, encodings, truncation, gzip damage, byte order
marks, control characters, huge numbers and lines, blank and comment lines).
For every mutation the bytes are read by :mod:`trec_text_reference`, a
plain-Python parser written from the documented format rules, and:

* where it accepts, gpukit's ``to_dict()`` equals the parsed dicts and its
  per-query values equal pytrec_eval's on them (Python API and ``gpukit
  eval`` in-process; scores compared in float32, as trec_eval does; the
  plain-Python tests/reference.py where pytrec_eval cannot run, see
  :func:`expected_values`);
* where it rejects, gpukit raises an ``InputFormatError`` naming the file and
  a line the reference marks bad (no line for whole-file problems), or the CLI
  exits 2 with one ``gpukit: error:`` line naming them.


Each case runs under a wall-clock alarm and an address-space limit. CI runs a
fixed, derandomized set of examples; ``GPUKIT_FUZZ_EXAMPLES=5000`` runs more
(add ``GPUKIT_FUZZ_NO_SHRINK=1`` to report a failure as found, unshrunk).
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import resource
import signal
import tempfile

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from reference import reference_evaluate
from trec_text_reference import MAX_LINE_BYTES, gunzip, read

import gpukit
from gpukit.cli import main as cli_main
from gpukit.errors import GpukitError, InputFormatError

pytrec_eval = pytest.importorskip("pytrec_eval")

EXAMPLES = int(os.environ.get("GPUKIT_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 250,
    deadline=10_000 if not EXAMPLES else None,  # ms; hangs are caught by the alarm below
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target] if os.environ.get("GPUKIT_FUZZ_NO_SHRINK") else list(Phase),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
CASE_SECONDS = 30
CASE_EXTRA_BYTES = 1 << 30  # address space a case may add (inputs are at most ~2 MiB)
TOL = 1e-9
PYTREC_MAX_GRADE = 1000
PYTREC = {"map", "ndcg", "P.5", "recall.10", "recip_rank", "Rprec", "bpref", "num_ret", "num_rel_ret"}
NAMES = {
    "map": "AP", "ndcg": "nDCG", "P_5": "P@5", "recall_10": "R@10", "recip_rank": "RR",
    "Rprec": "Rprec", "bpref": "Bpref", "num_ret": "NumRet", "num_rel_ret": "NumRelRet",
}

# ------------------------------------------------------------------ inputs
QIDS = ["q1", "q2", "301", "Q0", "é", "日本", "a#b", "q" * 70]
DOCS = ["d1", "d2", "d3", "D-7", "0", "-1", "ü", "x" * 80, "d\x7f", "#d", "D10"]
SCORES = st.one_of(
    st.sampled_from(["1", "1.0", "2", "0.5", "-3", "0"]),  # ties are common
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(["1.", ".5", "+.5", "+2e-3", "-1.5E+2", "INF", "-Infinity", "1e400", "-1e400", "1e-400",
                     "5e-324", "0" * 30 + "1", "1" + "0" * 300, "0." + "0" * 200 + "1"]),
)
GRADES = st.one_of(st.integers(-2, 4).map(str), st.sampled_from(["-0", "007", "2147483646", "-2147483646"]))
SEPS = st.sampled_from([" ", " ", " ", "\t", "  ", " \t ", "\x0b", "\x0c", "\r"])
FILLERS = [b"", b"   ", b"# comment", b"  #c 1 2", b"#", b"\t", b"# \x00\xff\xef\xbb\xbf"]
# Tokens that break (or nearly break) a field: numbers, ids, bytes.
NASTY = [
    b"", b"nan", b"NaN", b"-nan", b"nan(1)", b"inf", b"-Infinity", b"+inf", b"infinit", b"infx", b"1e400", b"-1e400",
    b"1e-400", b"9" * 400, b"0x1p3", b"0x10", b"1_000", b"\xd9\xa1", b"\xef\xbc\x91", b"1.", b".5", b"+.5", b".",
    b"-", b"+", b"e5", b"1e", b"1e+", b"1.5.2", b"1,5", b"+1", b"-0", b"007", b"2147483646", b"2147483647",
    b"-2147483646", b"-2147483647", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808",
    b"-9223372036854775809", b"99999999999999999999999", b"1.0", b"1e3", b"#", b"#x", b"\xef\xbb\xbf",
    b"\xef\xbb\xbfq1", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\x00", b"\x1c",
    b"\x1f", b"\x7f", b"\xc2\x85", b"\xe2\x80\xa8", b"\xc2\xa0", b"\x0b", b"\x0c", b"\r", b"\t", b"\n", b'"', b"'",
    b"\\", b"NULL", b"NA", b"d" * 100, b"q1", b"d1", b"1", b"\x1f\x8b",
]
POS = st.integers(0, 1 << 20)
MUTATION = st.one_of(
    st.tuples(st.just("insert"), POS, st.one_of(st.sampled_from(NASTY), st.binary(min_size=1, max_size=3))),
    st.tuples(st.just("delete"), POS, st.integers(1, 8)),
    st.tuples(st.just("set_byte"), POS, st.integers(0, 255)),
    st.tuples(st.just("truncate"), POS),
    st.tuples(st.just("set_field"), POS, POS, st.sampled_from(NASTY)),
    st.tuples(st.just("drop_field"), POS, POS),
    st.tuples(st.just("dup_field"), POS, POS),
    st.tuples(st.just("add_field"), POS, st.sampled_from(NASTY)),
    st.tuples(st.just("copy_field"), POS, POS, POS),  # a field from another line: repeated pairs
    st.tuples(st.just("dup_line"), POS, POS),
    st.tuples(st.just("drop_line"), POS),
    st.tuples(st.just("add_line"), POS, st.sampled_from(FILLERS)),
    st.tuples(st.just("whole"), st.sampled_from(
        ["crlf", "cr", "no_final_newline", "bom", "bom_twice", "utf16", "utf16le", "latin1", "empty", "blank_lines"])),
    st.tuples(st.just("huge_line"), POS, POS, st.integers(-2, 2)),
)
# Scores and grades put where the reader reads them (run column 5, qrels column 4).
NUMBERS = [t for t in NASTY if t and len(t) < 30 and t[0] in b"+-.0123456789nNiI"] + [b"NAN", b"-nan(x)", b"0.0", b"-inf"]
VALUE_COLUMN = {"run": 4, "qrels": 3}
GZIP = st.one_of(
    st.none(), st.none(), st.none(),
    st.tuples(st.sampled_from(["plain", "truncate", "flip", "garbage", "zeros", "members"]), POS),
)


@st.composite
def trec_lines(draw, kind: str) -> bytes:
    """A valid run or qrels file: varied separators, line ends, blank and comment lines."""
    lines = []
    for qid in draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=4, unique=True)):
        for rank, doc in enumerate(draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True)), 1):
            if kind == "run":
                fields = [qid, "Q0", doc, str(rank), draw(SCORES), draw(st.sampled_from(["tag", "r-1", "é"]))]
                fields += draw(st.lists(st.sampled_from(["extra", "#", "1"]), max_size=1))
            else:
                fields = [qid, draw(st.sampled_from(["0", "Q0", "x"])), doc, draw(GRADES)]
            seps = [draw(SEPS) for _ in fields[1:]]
            text = fields[0] + "".join(s + f for s, f in zip(seps, fields[1:]))
            edge = draw(st.sampled_from(["", "", "", " ", "\t"]))
            lines.append((edge + text + draw(st.sampled_from(["", "", " "]))).encode())
            if draw(st.integers(0, 9)) == 0:
                lines.append(draw(st.sampled_from(FILLERS)))
    end = draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))
    return end.join(lines) + end


_FIELD_SPLIT = re.compile(rb"([ \t\r\f\v]+)")


def _with_fields(line: bytes, edit) -> bytes:
    """Apply ``edit(fields) -> fields`` to a line, keeping its separators."""
    parts = _FIELD_SPLIT.split(line)
    fields, seps = parts[0::2], parts[1::2]
    fields = edit(fields)
    seps = (seps + [b" "] * len(fields))[: max(len(fields) - 1, 0)]
    return fields[0] + b"".join(s + f for s, f in zip(seps, fields[1:])) if fields else b""


def mutate(data: bytes, mutation: tuple) -> bytes:
    op, *args = mutation
    n = max(len(data), 1)
    lines = data.split(b"\n")
    at = args[0] % len(lines) if op not in ("insert", "delete", "set_byte", "truncate", "whole") else 0
    if op == "insert":
        pos = args[0] % (len(data) + 1)
        return data[:pos] + args[1] + data[pos:]
    if op == "delete":
        pos = args[0] % n
        return data[:pos] + data[pos + args[1]:]
    if op == "set_byte":
        pos = args[0] % n
        return data[:pos] + bytes([args[1]]) + data[pos + 1:] if data else data
    if op == "truncate":
        return data[: args[0] % n]
    if op == "set_field":
        lines[at] = _with_fields(lines[at], lambda f: f[: args[1] % len(f)] + [args[2]] + f[args[1] % len(f) + 1:])
    elif op == "drop_field":
        lines[at] = _with_fields(lines[at], lambda f: f[: args[1] % len(f)] + f[args[1] % len(f) + 1:])
    elif op == "dup_field":
        lines[at] = _with_fields(lines[at], lambda f: f[: args[1] % len(f) + 1] + f[args[1] % len(f):])
    elif op == "add_field":
        lines[at] = _with_fields(lines[at], lambda f: f + [args[1]])
    elif op == "copy_field":
        donor = _FIELD_SPLIT.split(lines[args[1] % len(lines)])[0::2]
        i = args[2] % len(donor)
        lines[at] = _with_fields(lines[at], lambda f: f[:i] + [donor[i]] + f[i + 1:] if i < len(f) else f)
    elif op == "dup_line":
        lines.insert(args[1] % (len(lines) + 1), lines[at])
    elif op == "drop_line":
        del lines[at]
    elif op == "add_line":
        lines.insert(at, args[1])
    elif op == "huge_line":  # a line of MAX_LINE_BYTES + delta bytes, grown in one field
        grow = MAX_LINE_BYTES + args[2] - len(lines[at])
        j = args[1]
        lines[at] = _with_fields(lines[at], lambda f: f[: j % len(f)] + [f[j % len(f)] + b"x" * max(grow, 0)] + f[j % len(f) + 1:])
    elif op == "whole":
        return _whole(data, args[0])
    return b"\n".join(lines)


def _whole(data: bytes, how: str) -> bytes:
    text = data.decode("utf-8", "replace")
    return {
        "crlf": lambda: data.replace(b"\n", b"\r\n"),
        "cr": lambda: data.replace(b"\n", b"\r"),
        "no_final_newline": lambda: data.rstrip(b"\n"),
        "bom": lambda: b"\xef\xbb\xbf" + data,
        "bom_twice": lambda: b"\xef\xbb\xbf" + data + b"\xef\xbb\xbf" + data,  # two files concatenated
        "utf16": lambda: text.encode("utf-16"),
        "utf16le": lambda: text.encode("utf-16-le"),
        "latin1": lambda: text.encode("latin-1", "replace"),
        "empty": lambda: b"",
        "blank_lines": lambda: b"\n \n# only comments\n\t\n",
    }[how]()


def compress(data: bytes, how: tuple | None) -> bytes:
    if how is None:
        return data
    kind, pos = how
    packed = gzip.compress(data, mtime=0)
    if kind == "truncate":
        return packed[: pos % len(packed)]
    if kind == "flip":
        i = pos % len(packed)
        return packed[:i] + bytes([packed[i] ^ (1 << pos % 8)]) + packed[i + 1:]
    if kind == "garbage":
        return packed + b"junk\n"
    if kind == "zeros":
        return packed + b"\x00" * (1 + pos % 16)
    if kind == "members":
        cut = pos % (len(data) + 1)
        return gzip.compress(data[:cut], mtime=0) + gzip.compress(data[cut:], mtime=0)
    return packed


@st.composite
def mutated(draw, kind: str) -> tuple[bytes, bool]:
    """(file bytes, gzipped) of a valid file put through a few mutations."""
    data = draw(trec_lines(kind))
    value = st.tuples(st.just("set_field"), POS, st.just(VALUE_COLUMN[kind]), st.sampled_from(NUMBERS))
    any_mutation = st.integers(0, 3).flatmap(lambda i: value if i == 0 else MUTATION)  # 1 in 4 on a value
    for mutation in draw(st.lists(any_mutation, max_size=4)):
        data = mutate(data, mutation)
    how = draw(GZIP)
    return compress(data, how), how is not None


# ------------------------------------------------------------ case bounds
class CaseTimeout(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception`` hides it."""


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * resource.getpagesize()


@contextlib.contextmanager
def bounded(seconds: float = CASE_SECONDS, extra_bytes: int = CASE_EXTRA_BYTES):
    """At most ``seconds`` of wall clock and ``extra_bytes`` of new address space
    (a bigger allocation fails with MemoryError, which no reader turns into a GpukitError)."""
    def alarm(signum, frame):
        raise CaseTimeout(f"case ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space() + extra_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="gpukit-fuzz-") as path:
        # Warm up (kernels, thread pools, lazy imports) before address-space limits apply.
        gpukit.evaluate(gpukit.Qrels.from_dict({"q": {"d": 1}}), gpukit.Run.from_dict({"q": {"d": 1.0}}), list(NAMES.values()))
        yield path


def write(workdir: str, name: str, data: bytes, gzipped: bool) -> str:
    path = os.path.join(workdir, name + (".gz" if gzipped else ""))
    with open(path, "wb") as fh:
        fh.write(data)
    return path


# ------------------------------------------------------------ assertions
def as_float32(score: float) -> float:
    """A score as trec_eval keeps it (a C float; beyond its range, +-inf)."""
    with np.errstate(over="ignore"):
        return float(np.float32(score))


def expected_values(qrels: dict, run: dict) -> dict:
    """pytrec_eval's per-query values (it compares scores in float32, as trec_eval
    does: gpukit is run with float32 scores to match), or the plain-Python reference's (tests/reference.py)
    where pytrec_eval cannot serve: grades beyond PYTREC_MAX_GRADE (it allocates per
    grade value: 2**31 - 2 exhausts memory) or a query judged only with negative
    grades (pytrec_eval 0.5 then crashes or hangs)."""
    grades = [list(judged.values()) for judged in qrels.values()]
    if all(max(g) >= 0 and max(map(abs, g)) <= PYTREC_MAX_GRADE for g in grades):
        return pytrec_eval.RelevanceEvaluator(qrels, PYTREC).evaluate(run)
    ref = reference_evaluate(qrels, run, list(NAMES.values()), convention="trec_eval", score_key=as_float32)
    per_query = ref["measures"]
    return {q: {key: per_query[name]["per_query"][q] for key, name in NAMES.items()} for q in ref["query_ids"]}


def assert_values(per_query: dict[str, dict[str, float]], expected: dict) -> None:
    """``per_query[qid][gpukit name]`` equals pytrec_eval's ``expected[qid][key]``."""
    assert sorted(per_query) == sorted(expected)
    for qid, values in expected.items():
        for key, name in NAMES.items():
            got = per_query[qid][name]
            assert abs(got - values[key]) <= TOL, f"{name} of {qid!r}: gpukit {got}, pytrec_eval {values[key]}"


def api_values(qrels: "gpukit.Qrels", run: "gpukit.Run") -> dict[str, dict[str, float]]:
    report = gpukit.evaluate(qrels, run, list(NAMES.values()), convention="trec_eval", score_dtype=torch.float32)
    columns = {name: report[name].per_query.tolist() for name in NAMES.values()}
    return {qid: {name: columns[name][i] for name in columns} for i, qid in enumerate(report.query_ids)}


def assert_rejected(exc: BaseException, path: str, verdict) -> None:
    """An InputFormatError naming ``path`` and a line the reference marks bad."""
    if not isinstance(exc, InputFormatError):
        raise AssertionError(f"{type(exc).__name__} instead of InputFormatError ({verdict.why}): {exc}") from exc
    assert exc.source == path, str(exc)
    assert exc.line in verdict.lines, f"line {exc.line}, expected one of {sorted(verdict.lines, key=str)} ({verdict.why}): {exc}"
    assert str(exc).startswith(f"{path}:{exc.line}: " if exc.line else f"{path}: ")
    assert len(str(exc)) < len(path) + 1000, "errors echo at most ~200 characters of input"


def read_api(reader, path: str, verdict, **kwargs):
    """``reader(path)``: its result where the reference accepts, None after a checked rejection."""
    try:
        value = reader(path, **kwargs)
    except (GpukitError, Exception) as exc:
        if verdict.ok:
            raise AssertionError(f"rejected a file the reference accepts: {type(exc).__name__}: {exc}") from exc
        assert_rejected(exc, path, verdict)
        return None
    assert verdict.ok, f"accepted a file the reference rejects ({verdict.why}, lines {sorted(verdict.lines, key=str)})"
    return value


# ------------------------------------------------------------------ tests
@FUZZ
@given(qrels=mutated("qrels"), run=trec_lines("run"))
def test_mutated_qrels(workdir, qrels, run):
    q_path, r_path = write(workdir, "qrels", *qrels), write(workdir, "run", run, False)
    q_verdict, r_verdict = read(qrels[0], "qrels"), read(run, "run")
    assert r_verdict.ok
    event(f"qrels {q_verdict.why or 'accepted'}")
    expected = expected_values(q_verdict.data, r_verdict.data) if q_verdict.ok else None
    with bounded():
        judged = read_api(gpukit.Qrels.from_trec, q_path, q_verdict)
        if judged is not None:
            assert judged.to_dict() == q_verdict.data
            assert_values(api_values(judged, gpukit.Run.from_trec(r_path)), expected)


@FUZZ
@given(qrels=trec_lines("qrels"), run=mutated("run"), dedup=st.sampled_from(["error", "error", "max", "first"]))
def test_mutated_run(workdir, qrels, run, dedup):
    q_path, r_path = write(workdir, "qrels", qrels, False), write(workdir, "run", *run)
    q_verdict, r_verdict = read(qrels, "qrels"), read(run[0], "run", dedup)
    assert q_verdict.ok
    event(f"run {r_verdict.why or 'accepted'}")
    expected = expected_values(q_verdict.data, r_verdict.data) if r_verdict.ok else None
    with bounded():
        ranked = read_api(gpukit.Run.from_trec, r_path, r_verdict, dedup=dedup)
        if ranked is not None:
            assert ranked.to_dict() == r_verdict.data
            assert_values(api_values(gpukit.Qrels.from_trec(q_path), ranked), expected)


@FUZZ
@given(
    qrels=mutated("qrels"), run=mutated("run"),
    dedup=st.sampled_from(["error", "max", "first"]), fmt=st.sampled_from(["json", "json", "trec"]),
)
def test_mutated_files_cli(workdir, qrels, run, dedup, fmt):
    q_path, r_path = write(workdir, "qrels", *qrels), write(workdir, "run", *run)
    q_verdict, r_verdict = read(qrels[0], "qrels"), read(run[0], "run", dedup)
    argv = ["eval", q_path, r_path, "--convention", "trec_eval", "--dedup", dedup, "--format", fmt, "-q", "--score-precision", "float32"]
    argv += [a for name in NAMES.values() for a in ("-m", name)]
    both_ok = q_verdict.ok and r_verdict.ok
    event(f"qrels {q_verdict.why or 'accepted'}, run {r_verdict.why or 'accepted'}")
    expected = expected_values(q_verdict.data, r_verdict.data) if both_ok and fmt == "json" else None
    out, err = io.StringIO(), io.StringIO()
    with bounded(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(argv)
    if both_ok:
        assert code == 0, err.getvalue()
        if expected is not None:
            (report,) = json.loads(out.getvalue())  # --format json: one array, one object per run
            assert_values(report["per_query"], expected)
        return
    path, verdict = (q_path, q_verdict) if not q_verdict.ok else (r_path, r_verdict)
    lines = err.getvalue().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("gpukit: error: "), err.getvalue()
    where = re.match(rf"gpukit: error: {re.escape(path)}(?::(\d+))?: ", lines[0])
    assert where, f"error does not name {path}: {lines[0]}"
    line = int(where.group(1)) if where.group(1) else None
    assert line in verdict.lines, f"line {line}, expected one of {sorted(verdict.lines, key=str)} ({verdict.why}): {lines[0]}"


def test_case_bounds_hold():
    """The bounds are real: a case allocating past them, or running past them, fails."""
    with pytest.raises(MemoryError), bounded(extra_bytes=256 << 20):
        np.ones(1 << 30, dtype=np.uint8)
    with pytest.raises(CaseTimeout), bounded(seconds=0.2):
        while True:
            pass


# ------------------------------------------------- regressions it found
def _corrupt_deflate(data: bytes) -> bytes:
    """gzip whose first deflate byte is flipped: zlib itself fails, not the CRC check."""
    packed = gzip.compress(data, mtime=0)
    return packed[:10] + bytes([packed[10] ^ 0xFF]) + packed[11:]


@pytest.mark.parametrize("reader", [gpukit.Qrels.from_trec, gpukit.Run.from_trec])
def test_corrupt_deflate_stream_is_an_input_error(tmp_path, reader):
    """zlib.error (not an OSError) from a damaged deflate stream was let through."""
    path = tmp_path / "damaged.gz"
    path.write_bytes(_corrupt_deflate(b"".join(b"q%d 0 d%d %d\n" % (q, d, d % 3) for q in range(5) for d in range(20))))
    with pytest.raises(InputFormatError) as info:
        reader(str(path))
    assert info.value.source == str(path) and info.value.line is None
    assert "gzip" in str(info.value)


@pytest.mark.parametrize("text", [b"q1 0 d1 1 ", b"q1 0 d0 0\nq1 0 d1 1 "])
def test_trailing_space_at_end_of_file_without_newline(tmp_path, text):
    """A last line ending in one space and no newline was 'could not parse' (no line named)."""
    path = tmp_path / "qrels.txt"
    path.write_bytes(text)
    expected = read(text, "qrels")
    assert expected.ok
    assert gpukit.Qrels.from_trec(str(path)).to_dict() == expected.data


def test_reference_gunzip_keeps_all_that_decompresses():
    """The oracle lost the last partial chunk of a damaged gzip (the read that
    met trailing garbage raised), so a bad line gpukit rightly reported there
    was called wrong (found with a 1 MiB line before ``junk``)."""
    text = b"q1 Q0 d1 1 1 tag\n" + b"x" * 70_000 + b"\n"
    assert gunzip(gzip.compress(text, mtime=0) + b"junk\n") == (text, True)
    packed = gzip.compress(text, mtime=0)
    assert gunzip(packed) == (text, False)
    got, damaged = gunzip(packed[: len(packed) // 2])
    assert damaged and text.startswith(got) and len(got) > 0
