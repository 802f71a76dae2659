"""trec_eval's inputs: the qrels and results files (stdin for ``-``), the run
tag it prints as ``runid``, and the ``-Z`` z-score file."""
from __future__ import annotations

import gzip
import os
import sys
import tempfile

from gpukit.data.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import GpukitError, TrecEvalError
from gpukit.trec_eval.options import Options, c_atof

#: Value printed for a z-score whose mean/stddev is not in the -Z file.
MISSING_ZSCORE = -1000000.0
#: trec_eval's main returns UNDEF (-1) when the -Z file fails: exit status 255.
_UNDEF_EXIT = 255


def run_tag(path: str) -> str:
    """The tag (6th field) of the last result line of a run file, as trec_eval's runid.

    trec_eval stores one tag pointer for the whole file, overwritten by every
    line, so the tag it prints is the last line's. Comment (``#``) and blank
    lines are skipped. Plain files are read backwards from the end.
    """
    if path.endswith(".gz"):
        last = ""
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.strip() and not line.lstrip().startswith("#"):
                    last = line
        return _tag_of(last)
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        tail = b""
        step = 1 << 16
        while True:
            start = max(0, end - step)
            f.seek(start)
            tail = f.read(end - start) + tail
            end = start
            lines = tail.splitlines()
            # The first line of the block may be partial unless we reached the file's start.
            candidates = lines if start == 0 else lines[1:]
            for line in reversed(candidates):
                text = line.decode("utf-8", errors="replace")
                if text.strip() and not text.lstrip().startswith("#"):
                    return _tag_of(text)
            if start == 0:
                return ""


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

