"""The TREC readers never give a silent wrong number, and every error names its line.

Each test states its expectation independently of gpukit: the same content
read from a regular file, a plain-Python parse, a line number counted by hand,
or pyarrow's own float parser for the accepted score spellings.
"""
from __future__ import annotations

import gc
import gzip
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import gpukit
import gpukit.io.line_errors as line_errors
import gpukit.io.text_table as tt
from gpukit.cli import main as cli_main
from gpukit.errors import InputFormatError

BOM = "\ufeff"


def run_text(n_queries: int = 100, depth: int = 20) -> str:
    """A run of ``n_queries`` topics (well over 8 KiB), one line per document."""
    return "".join(f"q{q} Q0 d{d} {d + 1} {depth - d}.25 tag\n" for q in range(n_queries) for d in range(depth))


def qrels_text(n_queries: int = 100, depth: int = 20) -> str:
    return "".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(n_queries) for d in range(0, depth, 2))


def python_run(text: str) -> dict[str, dict[str, float]]:
    """Plain-Python parse of a well-formed run (the reference)."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        q, _, d, _, s, *_ = line.split()
        out.setdefault(q, {})[d] = float(s)
    return out


def python_qrels(text: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        q, _, d, g = line.split()
        out.setdefault(q, {})[d] = int(g)
    return out


def error_of(fn, *args, **kwargs) -> InputFormatError:
    with pytest.raises(InputFormatError) as info:
        fn(*args, **kwargs)
    return info.value


def feed(path: str | int, data: bytes) -> threading.Thread:
    """Write ``data`` into a FIFO path or a pipe's write end from a thread."""

    def write() -> None:
        try:
            with os.fdopen(path, "wb") if isinstance(path, int) else open(path, "wb") as fh:
                fh.write(data)
        except BrokenPipeError:  # the reader gave up first (an error test)
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def with_deadline(fn, *args, fifo: Path | None = None, seconds: float = 60):
    """``fn(*args)`` on a thread; a reader blocked on a FIFO fails the test
    instead of hanging it (the FIFO is then opened for writing to release it)."""
    result: dict = {}

    def call() -> None:
        try:
            result["value"] = fn(*args)
        except BaseException as exc:  # re-raised in the test's thread
            result["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"reading {fifo} blocked for {seconds} s")
    if "error" in result:
        raise result["error"]
    return result["value"]


# ------------------------------------------------- 1. non-seekable inputs
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_fifo_is_read_whole_like_a_regular_file(tmp_path, kind, gz):
    text = run_text() if kind == "run" else qrels_text()
    data = gzip.compress(text.encode()) if gz else text.encode()
    reader = gpukit.Run.from_trec if kind == "run" else gpukit.Qrels.from_trec
    regular = tmp_path / "regular"
    regular.write_bytes(data)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = feed(str(fifo), data)
    got = with_deadline(reader, fifo, fifo=fifo).to_dict()
    writer.join(5)
    reference = python_run(text) if kind == "run" else python_qrels(text)
    assert got == reader(regular).to_dict() == reference
    assert len(got) == 100


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="needs /dev/fd (process substitution paths)")
def test_dev_fd_pipe_like_process_substitution(tmp_path):
    # `gpukit eval qrels <(cat run)` hands gpukit /dev/fd/N, the read end of a pipe.
    text = run_text()
    read_end, write_end = os.pipe()
    writer = feed(write_end, text.encode())
    try:
        got = gpukit.Run.from_trec(f"/dev/fd/{read_end}").to_dict()
    finally:
        os.close(read_end)
    writer.join(5)
    assert got == python_run(text)


def test_error_line_numbers_from_a_fifo(tmp_path, monkeypatch):
    monkeypatch.setattr(tt, "BLOCK_BYTES", 4096)
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    text = run_text() + "q9 Q0 dx 1 NaN tag\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = feed(str(fifo), text.encode())
    err = error_of(with_deadline, gpukit.Run.from_trec, fifo, fifo=fifo)
    writer.join(5)
    assert err.line == text.count("\n") and err.source == str(fifo)
    # The copy is removed once nothing needs its lines any more.
    del err
    gc.collect()
    assert os.listdir(spool) == []
    writer = feed(str(fifo), run_text(3).encode())
    assert with_deadline(gpukit.Run.from_trec, fifo, fifo=fifo).num_queries == 3
    gc.collect()
    assert os.listdir(spool) == []


def _stdin_pipe(monkeypatch, data: bytes) -> threading.Thread:
    """Make sys.stdin the read end of a real pipe fed with ``data``."""
    read_end, write_end = os.pipe()
    monkeypatch.setattr(sys, "stdin", open(read_end, "r", closefd=True))
    return feed(write_end, data)


def _trec_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if not line.startswith("runid")]


@pytest.mark.parametrize("which", ["run", "qrels"])
def test_dash_reads_stdin_for_run_or_qrels(tmp_path, monkeypatch, capsys, which):
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text(run_text())
    qrels.write_text(qrels_text())
    measures = ["-m", "P@5", "-m", "AP", "-m", "NumRet", "--format", "trec", "-q"]
    assert cli_main(["eval", str(qrels), str(run), *measures]) == 0
    expected = _trec_lines(capsys.readouterr().out)
    writer = _stdin_pipe(monkeypatch, (run if which == "run" else qrels).read_bytes())
    argv = ["eval", "-", str(run)] if which == "qrels" else ["eval", str(qrels), "-"]
    assert cli_main([*argv, *measures]) == 0
    writer.join(5)
    got = _trec_lines(capsys.readouterr().out)
    assert got == expected and sum(line.startswith("P_5 ") for line in got) == 101  # 100 topics + "all"


@pytest.mark.parametrize("argv", [["eval", "-", "-"], ["eval", "QRELS", "-", "-"]], ids=["qrels-and-run", "two-runs"])
def test_stdin_twice_is_an_error(tmp_path, monkeypatch, capsys, argv):
    qrels = tmp_path / "qrels"
    qrels.write_text(qrels_text())
    _stdin_pipe(monkeypatch, run_text().encode())
    assert cli_main([str(qrels) if a == "QRELS" else a for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpukit: error:") and "standard input" in err and "Traceback" not in err


def test_dash_in_the_python_api_reads_stdin(monkeypatch):
    text = qrels_text(5)
    writer = _stdin_pipe(monkeypatch, text.encode())
    qrels = gpukit.Qrels.from_trec("-")
    writer.join(5)
    assert qrels.to_dict() == python_qrels(text) and qrels.source == "<stdin>"


# ---------------------------------------------------------- 2. qrels grades
@pytest.mark.parametrize(
    "grade",
    ["+1", "0x1", "0X1F", "1_000", "\uff11\uff12", "\u0661\u0662", "1e3", "1.0", "9223372036854775808", "-99999999999999999999"],
)
def test_qrels_grade_must_be_plain_decimal(tmp_path, grade):
    path = tmp_path / "qrels"
    path.write_text(f"q1 0 d1 1\nq1 0 d2 {grade}\nq1 0 d3 0\n")
    err = error_of(gpukit.Qrels.from_trec, path)
    assert err.line == 2 and err.source == str(path)
    assert "grade" in err.problem and ("not an integer" in err.problem or "out of range" in err.problem)


@pytest.mark.parametrize("grade", ["2147483647", "-2147483647", "-2147483648", "4294967296"])
def test_qrels_grade_beyond_the_ranking_range_names_its_line(tmp_path, grade):
    # ranking.py keeps grades as int32 with -2**31 reserved, and needs |grade| < 2**31 - 1.
    path = tmp_path / "qrels"
    path.write_text(f"q1 0 d1 1\n# comment\nq1 0 d2 {grade}\n")
    err = error_of(gpukit.Qrels.from_trec, path)
    assert err.line == 3 and "out of range" in err.problem


def test_qrels_largest_grade_evaluates(tmp_path):
    top = 2**31 - 2
    qrels = tmp_path / "qrels"
    qrels.write_text(f"q1 0 d1 {top}\nq1 0 d2 {-top}\nq1 0 d3 0\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d3 3 1 t\n")
    parsed = gpukit.Qrels.from_trec(qrels)
    assert parsed.to_dict() == {"q1": {"d1": top, "d2": -top, "d3": 0}}
    report = gpukit.evaluate(parsed, gpukit.Run.from_trec(run), ["P@1", "NumRel"])
    measures = report.to_dict()["measures"]
    assert measures["P@1"]["mean"] == 1.0 and measures["NumRel"]["mean"] == 1.0  # d1 (relevant) at rank 1


# ----------------------------------------------------------------- 3. scores
@pytest.mark.parametrize("score", ["1_000", "\uff11\uff12", "\u0661\u0662", "0x1p3", "1e", "--1", "1.5f", "1,5", "infinit"])
def test_score_spellings_outside_the_grammar_name_the_line(tmp_path, score):
    path = tmp_path / "run"
    path.write_text(f"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 {score} t\nq1 Q0 d3 3 1.0 t\n")
    err = error_of(gpukit.Run.from_trec, path)
    assert err.line == 2 and "is not a number" in err.problem


@pytest.mark.parametrize("sep", ["\x1c", "\x1d", "\x1e", "\x1f", "\x00", "\x08"])
@pytest.mark.parametrize("where", ["between-fields", "inside-id"])
def test_control_characters_are_errors_naming_the_line(tmp_path, monkeypatch, sep, where):
    # str.split treats \x1c-\x1f as whitespace, the reader's separators are
    # space, tab, CR, FF and VT only: such a line is rejected, never read two ways.
    bad = f"q1 Q0 d2 2 2.0{sep}t" if where == "between-fields" else f"q1 Q0 d{sep}2 2 2.0 t"
    for block in (None, 40):
        if block:
            monkeypatch.setattr(tt, "BLOCK_BYTES", block)
        path = tmp_path / "run"
        path.write_text(f"q1 Q0 d1 1 3.0 t\n{bad}\nq1 Q0 d3 3 1.0 t\n")
        err = error_of(gpukit.Run.from_trec, path)
        assert err.line == 2 and "control character" in err.problem and f"U+{ord(sep):04X}" in err.problem


ACCEPTED_SCORES = ["+1", "-1.5", ".5", "5.", "1e3", "1E-3", "+.5e+2", "007", "-0", "1e400", "inf", "-Infinity", "INF"]


@pytest.mark.parametrize("score", ACCEPTED_SCORES)
def test_accepted_score_spellings_read_as_strtod_does(tmp_path, score):
    path = tmp_path / "run"
    path.write_text(f"q1 Q0 d1 1 {score} t\n")
    assert gpukit.Run.from_trec(path).to_dict() == {"q1": {"d1": float(score)}}


def _arrow_parses_float(text: str) -> bool:
    options = dict(
        read_options=pacsv.ReadOptions(column_names=["x"]),
        parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False),
        convert_options=pacsv.ConvertOptions(column_types={"x": pa.float64()}, null_values=[], strings_can_be_null=False),
    )
    try:
        pacsv.read_csv(pa.py_buffer(text.encode() + b"\n"), **options)
    except pa.ArrowInvalid:
        return False
    return True


def test_documented_score_grammar_is_what_the_parser_accepts():
    # The error scan locates a bad score with the documented grammar; it must
    # agree with the fast parser exactly, or a bad block has "no bad line".
    candidates = ACCEPTED_SCORES + [
        "1_000", "0x1p3", "0x10", "1e", "e3", ".", "+", "-", ".e1", "1..2", "1.2.3", "1e5.5", "1ee5", "1.5e+-3",
        "nan", "NaN", "-nan", "+nan", "nan(1)", "nan()", "nan(x_Y9)", "infinity", "INFINITY", "infinit", "infx",
        "0.", "-0.", "+.", "1.e5", "1e+", "1e-5", "0000.0000", "1e0001", "9" * 400, "\uff11", "\u0661", "١e1",
    ]
    for text in candidates:
        assert bool(line_errors.FLOAT_TEXT.fullmatch(text)) == _arrow_parses_float(text), text


# -------------------------------------------------------------------- 4. BOM
def _bom_run(tmp_path: Path, gz: bool) -> tuple[Path, int]:
    first = "q1 Q0 d1 1 3.0 t\n"
    text = first + BOM + "q1 Q0 d2 2 2.0 t\nq2 Q0 d1 1 1.0 t\n"
    path = tmp_path / ("run.gz" if gz else "run")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path, len(first.encode())


@pytest.mark.parametrize("gz", [False, True], ids=["mapped", "gzip"])
def test_bom_inside_the_file_is_an_error_wherever_it_sits(tmp_path, monkeypatch, gz):
    path, boundary = _bom_run(tmp_path, gz)
    # Default blocks (the BOM mid-block), then a block that starts exactly at the BOM's line.
    for block in (None, boundary + 1):
        if block:
            monkeypatch.setattr(tt, "BLOCK_BYTES", block)
        err = error_of(gpukit.Run.from_trec, path)
        assert err.line == 2 and "byte order mark" in err.problem


@pytest.mark.parametrize("gz", [False, True], ids=["mapped", "gzip"])
@pytest.mark.parametrize("block", [None, 20])
def test_bom_at_the_start_of_the_file_is_skipped(tmp_path, monkeypatch, gz, block):
    if block:
        monkeypatch.setattr(tt, "BLOCK_BYTES", block)
    text = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\n"
    for prefix in ("", "# comment\n", "  q1 Q0 d0 0 9.5 t\n"):
        path = tmp_path / ("run.gz" if gz else "run")
        data = (BOM + prefix + text).encode()
        path.write_bytes(gzip.compress(data) if gz else data)
        assert gpukit.Run.from_trec(path).to_dict() == python_run(prefix + text)
        # Line numbers still count the first line.
        path.write_bytes((BOM + prefix + text + "q1 Q0 d9 3 nan t\n").encode())
        assert error_of(gpukit.Run.from_trec, path).line == (prefix + text).count("\n") + 1


# ------------------------------------------------------- 5. bounded echoes
def test_error_messages_echo_at_most_a_bounded_prefix(tmp_path):
    huge = "x" * 100_000
    cases = {
        "run-columns": (gpukit.Run.from_trec, f"q1 Q0 d1 1 3.0 t\nq1 Q0 {huge} 2\n"),
        "run-score": (gpukit.Run.from_trec, f"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 {huge} t\n"),
        "run-duplicate": (gpukit.Run.from_trec, f"q1 Q0 {huge} 1 3.0 t\nq1 Q0 {huge} 2 2.0 t\n"),
        "qrels-grade": (gpukit.Qrels.from_trec, f"q1 0 d1 1\nq1 0 d2 {huge}\n"),
        "qrels-duplicate": (gpukit.Qrels.from_trec, f"{huge} 0 d1 1\n{huge} 0 d1 2\n"),
    }
    for name, (reader, text) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        err = error_of(reader, path)
        assert err.line == 2, name
        assert len(str(err)) < 1000 and "xxxxxxxxxx" in str(err) and "..." in str(err), name


@pytest.mark.parametrize("gz", [False, True], ids=["mapped", "gzip"])
@pytest.mark.parametrize("block", [None, 4096])
def test_line_longer_than_the_limit_is_an_error_wherever_it_sits(tmp_path, monkeypatch, gz, block):
    if block:
        monkeypatch.setattr(tt, "BLOCK_BYTES", block)
    monkeypatch.setattr(tt, "MAX_LINE_BYTES", 1000)
    good = "q1 Q0 d1 1 3.0 t\nq1 Q0 d3 1 3.0 t\nq1 Q0 d4 1 3.0 t\n"
    at_limit = "q1 Q0 d2 2 2.0 t" + " " * (1000 - 16) + "\n"  # exactly 1000 bytes before the newline
    for text, line in [(good + at_limit, None), (good + at_limit.replace("\n", " \n"), 4), (good + "q9" * 3000, 4)]:
        path = tmp_path / ("run.gz" if gz else "run")
        path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
        if line is None:
            assert gpukit.Run.from_trec(path).to_dict() == {"q1": {"d1": 3.0, "d3": 3.0, "d4": 3.0, "d2": 2.0}}
        else:
            err = error_of(gpukit.Run.from_trec, path)
            assert err.line == line and "longer than 1000 bytes" in err.problem and len(str(err)) < 1000


def test_default_line_limit_is_one_mib(tmp_path):
    path = tmp_path / "run"
    path.write_bytes(b"q1 Q0 d1 1 3.0 t\n" + b"d" * (2 << 20))
    err = error_of(gpukit.Run.from_trec, path)
    assert err.line == 2 and f"longer than {1 << 20} bytes" in err.problem and len(str(err)) < 1000


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_as_a_run_fails_fast_with_a_bounded_message():
    # In a child with a 3 GiB address-space cap: an unbounded reader would
    # fail there (or time out), not fill this machine's memory.
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
        "from gpukit.cli import main\n"
        "sys.exit(main(['eval', '/dev/zero', '/dev/zero']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith("gpukit: error: /dev/zero:1: ") and len(proc.stderr) < 1000


# ------------------------------------------------------- 6. paths themselves
@pytest.mark.parametrize("reader", [gpukit.Run.from_trec, gpukit.Qrels.from_trec], ids=["run", "qrels"])
def test_directory_missing_and_non_utf8_paths_are_named(tmp_path, reader):
    missing = tmp_path / "nope"
    assert error_of(reader, missing).source == str(missing)
    err = error_of(reader, tmp_path)
    assert err.source == str(tmp_path) and "directory" in err.problem
    utf16 = tmp_path / "utf16"
    utf16.write_bytes("q1 Q0 d1 1 3.0 t\n".encode("utf-16"))
    err = error_of(reader, utf16)
    assert err.source == str(utf16) and err.line == 1 and "UTF-16" in err.problem
    latin1 = tmp_path / "latin1"
    good = "q1 Q0 d1 1 3.0 t\n" if reader == gpukit.Run.from_trec else "q1 0 d1 1\n"
    latin1.write_bytes((good + good.replace("d1", "caf\xe9")).encode("latin-1"))
    err = error_of(reader, latin1)
    assert err.source == str(latin1) and err.line == 2 and "UTF-8" in err.problem


def test_cli_directory_is_an_error_not_a_traceback(tmp_path, capsys):
    qrels = tmp_path / "qrels"
    qrels.write_text(qrels_text(2))
    assert cli_main(["eval", str(qrels), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpukit: error: {tmp_path}: ") and "directory" in err
