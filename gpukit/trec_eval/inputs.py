"""trec_eval's inputs: the qrels and results files (stdin for ``-``), the run
tag it prints as ``runid``, and the ``-Z`` z-score file."""
from __future__ import annotations

import os
import sys
import tempfile

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.io.text_table import is_gzip, open_gzip
from gpukit.errors import GpukitError, TrecEvalError
from gpukit.trec_eval.options import Options, c_atof

#: Value printed for a z-score whose mean/stddev is not in the -Z file.
MISSING_ZSCORE = -1000000.0
#: trec_eval's main returns UNDEF (-1) when the -Z file fails: exit status 255.
_UNDEF_EXIT = 255


#: Bytes read at a time when looking for a run file's last result line.
TAG_CHUNK_BYTES = 1 << 16


def run_tag(path: str) -> str:
    """The tag (6th field) of the last result line of a run file, as trec_eval's runid.

    trec_eval stores one tag pointer for the whole file, overwritten by every
    line, so the tag it prints is the last line's. Comment (``#``) and blank
    lines are skipped; lines end at LF, CR or CRLF, and are decoded as UTF-8
    with bad bytes replaced. Plain files are read backwards from the end;
    gzip files (told by their magic bytes, as the readers tell them) are
    inflated through in chunks, by the readers' library
    (:func:`gpukit.io.text_table.open_gzip`).
    """
    if is_gzip(path):
        return _tag_of(_last_result_line_of_stream(path) or "")
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        tail = b""
        while True:
            start = max(0, end - TAG_CHUNK_BYTES)
            f.seek(start)
            tail = f.read(end - start) + tail
            end = start
            # The first line of the block may be partial unless we reached the file's start.
            found = _last_result_line(tail, 0 if start == 0 else _after_first_break(tail), len(tail))
            if found is not None:
                return _tag_of(found)
            if start == 0:
                return ""


def _after_first_break(data: bytes) -> int:
    """Where the line after ``data``'s first CR or LF starts (``len(data)`` if it has none)."""
    breaks = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
    return min(breaks) + 1 if breaks else len(data)


def _last_result_line(data: bytes, begin: int, end: int) -> str | None:
    """The last line of ``data[begin:end]`` that is neither blank nor a
    comment, decoded; None if none is. Found from the end without splitting
    the rest into lines. Cutting at every CR and every LF leaves an empty
    piece inside a CRLF, and an empty piece is blank: the lines that count
    are those of ``splitlines``."""
    while end > begin:
        start = max(data.rfind(b"\n", begin, end), data.rfind(b"\r", begin, end), begin - 1) + 1
        text = data[start:end].decode("utf-8", errors="replace")
        if text.strip() and not text.lstrip().startswith("#"):
            return text
        end = start - 1
    return None


def _last_result_line_of_stream(path: str) -> str | None:
    """The last result line (see :func:`_last_result_line`) of a gzip file's
    text, read forwards chunk by chunk: each chunk's complete lines (cut
    after its last CR or LF) are searched from the end, the unfinished line
    carried into the next."""
    last = None
    carry = b""
    with open_gzip(path) as stream:
        while True:
            chunk = stream.read(TAG_CHUNK_BYTES)
            data = carry + chunk
            cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1 if chunk else len(data)
            found = _last_result_line(data, 0, cut)
            if found is not None:
                last = found
            carry = data[cut:]
            if not chunk:
                return last


def _tag_of(line: str) -> str:
    fields = line.split()
    return fields[5] if len(fields) >= 6 else ""


def read_zscores(path: str) -> dict[str, dict[str, tuple[float, float]]]:
    """A -Z file: ``{qid: {measure: (mean, stddev)}}`` from lines ``qid measure mean stddev``."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    if not data:
        raise TrecEvalError([f"trec_eval.get_zscores: Cannot read zscores file '{path}'"], _UNDEF_EXIT)
    text = data.decode("utf-8", errors="replace")
    if not text.endswith("\n"):
        text += "\n"
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for number, raw in enumerate(text.split("\n")[:-1], 1):
        fields = raw.split()
        if len(fields) != 4:  # blank lines too, as trec_eval
            raise TrecEvalError([f"trec_eval.get_zscores: Malformed line {number}"], _UNDEF_EXIT)
        qid, measure, mean, std = fields
        out.setdefault(qid, {})[measure] = (c_atof(mean), c_atof(std))
    return out


def zscore(value: float, entry: tuple[float, float] | None) -> float:
    """trec_eval's te_convert_to_zscore for one value."""
    if entry is None:
        return MISSING_ZSCORE
    mean, std = entry
    if std:
        return (value - mean) / std
    return 0.0 if value == mean else MISSING_ZSCORE


def read_inputs(opts: Options) -> tuple[Qrels, Run, str]:
    try:
        qrels = Qrels.from_trec(opts.rel_info_file)
    except GpukitError as exc:
        raise TrecEvalError([f"gpukit trec_eval: {exc}", f"trec_eval: Quit in file '{opts.rel_info_file}'"], 2) from None
    return (qrels, *read_run(opts.results_file))


def read_run(path: str) -> tuple[Run, str]:
    """The results file ('-': stdin) and its run tag; unreadable input is trec_eval's exit 2."""
    try:
        return _run_from_stdin() if path == "-" else (Run.from_trec(path), run_tag(path))
    except GpukitError as exc:
        raise TrecEvalError([f"gpukit trec_eval: {exc}", f"trec_eval: Quit in file '{path}'"], 2) from None


def _run_from_stdin() -> tuple[Run, str]:
    """trec_eval reads results_file '-' from stdin: spooled to a file gpukit's reader reads."""
    with tempfile.TemporaryDirectory() as tmp:
        spool = os.path.join(tmp, "stdin")
        with open(spool, "wb") as f:
            f.write(sys.stdin.buffer.read())
        return Run.from_trec(spool, name="-"), run_tag(spool)

