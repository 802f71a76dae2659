"""Runs and qrels written as TREC text, plain or gzip: the inverse of their readers.

Run lines are ``qid Q0 docno rank score tag``: each query's documents in the
run's ranking order (score descending, ties by docno descending, trec_eval's
order), ranks from 1, queries in the run's row order. Qrels lines are
``qid 0 docno grade`` in the Qrels' order (query, then docno, byte-wise);
gpukit keeps no iteration column, so it is written as ``0``.

Scores are written as the shortest decimal that strtod reads back to the
same float64 (Arrow's float-to-string cast, the double-conversion library's
shortest form: ``0.1``, ``1e+22``, ``-inf``). A float32, float16 or bfloat16
score is first widened to float64, which is exact, so the value read back by
:meth:`gpukit.Run.from_trec` (or trec_eval's ``atof``) is the stored score bit
for bit, whatever the run's precision: the same rankings, ties included.
(Writing a float32 score with its own shortest form, 9 digits at most, would
read back as a nearby but different float64.)

The text is built by Arrow kernels over slices of about ``LINES_PER_SLICE``
lines, no Python loop per line, and written slice by slice. A path ending in
``.gz`` is written gzip-compressed (python-isal's ``igzip`` where installed,
else the gzip module: same text, the bytes may differ). A file is written
under a temporary name in its directory and renamed when complete, so that
an error never leaves half a file; ``"-"`` writes standard output.

Ids a reader would not give back are refused before their slice is
written, with an :class:`~gpukit.errors.InputFormatError` naming the id:
empty ids, ids holding whitespace or other ASCII control characters (the
readers split fields on them or refuse them), a byte order mark, and query
ids starting with ``#`` (a comment line to the readers).
"""
from __future__ import annotations

import contextlib
import gzip
import io
import os
import secrets
import sys
from typing import IO, Iterator

import numpy as np
import pyarrow as pa

from gpukit.errors import InputFormatError, UsageError, echo
from gpukit.io.arrow_numpy import arrow_indices, pc, value_offsets

#: Lines built per slice (about 50-100 MB of text for TREC ids).
LINES_PER_SLICE = 1 << 20

#: An id the readers do not give back: empty, or holding a control byte,
#: whitespace (ASCII 0x00-0x20) or a byte order mark.
_BAD_ID = r"^$|[\x00-\x20]|\x{FEFF}"
#: A query id that would make its line a comment.
_COMMENT_ID = r"^#"


def _float64_array(values: np.ndarray) -> pa.Array:
    data = np.ascontiguousarray(values, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(data), [None, pa.py_buffer(data)])


def _int64_array(values: np.ndarray) -> pa.Array:
    return arrow_indices(values)  # an int64 array over the NumPy buffer


def _text_of(lines: pa.Array) -> memoryview:
    """The bytes of a string array whose every value ends in a newline: its
    data buffer between the first and last offset, no copy."""
    if len(lines) == 0:
        return memoryview(b"")
    offsets = value_offsets(lines)
    return memoryview(lines.buffers()[2])[int(offsets[0]) : int(offsets[-1])]


def check_ids(ids: pa.Array, source: str, what: str, first_field: bool = False) -> None:
    """Refuse ids the TREC readers would not read back as they are (see the module docstring)."""
    bad = pc.match_substring_regex(ids, _BAD_ID)
    if first_field:
        bad = pc.or_(bad, pc.match_substring_regex(ids, _COMMENT_ID))
    if pc.any(bad).as_py():
        value = ids.filter(bad)[0].as_py()
        why = "starts with '#' (the line would be a comment)" if value.startswith("#") and value.strip() == value and value else \
            "is empty or holds whitespace, a control character or a byte order mark"
        raise InputFormatError(source, None, f"{what} {echo(value)} {why}: a TREC file cannot hold it")


def check_tag(tag: str) -> str:
    """A run tag: one non-empty word (trec_eval reads the sixth field)."""
    if not isinstance(tag, str) or not tag or any(ch <= " " or ch == "\ufeff" for ch in tag):
        raise UsageError(f"run tag {tag!r} must be one word without whitespace or control characters")
    return tag


# ---------------------------------------------------------------- run lines
def run_slices(run, tag: str) -> Iterator[memoryview]:
    """The TREC text of ``run`` (a :class:`gpukit.Run`), slice by slice."""
    check_tag(tag)
    source = run.name
    check_ids(run.query_ids, source, "query id", first_field=True)
    # Each block with its rows as NumPy (None: every row of the run), read once.
    blocks = [(None if b.rows is None else b.rows.cpu().numpy(), b) for b in run.row_blocks()]
    depth = max(run.depth, 1)
    step = max(1, LINES_PER_SLICE // depth)
    ending = tag + "\n"
    for lo in range(0, run.num_queries, step):
        hi = min(lo + step, run.num_queries)
        rows, doc_keys, scores = _rows_between(blocks, lo, hi)
        if not len(doc_keys):
            continue
        dids = run.doc_space.ids_of(doc_keys)
        check_ids(dids, source, "document id")
        counts = np.bincount(rows - lo, minlength=hi - lo)
        firsts = np.cumsum(counts) - counts
        ranks = np.arange(len(rows), dtype=np.int64) - np.repeat(firsts, counts) + 1
        lines = pc.binary_join_element_wise(
            run.query_ids.take(_int64_array(rows)),
            "Q0",
            dids,
            pc.cast(_int64_array(ranks), pa.string()),
            pc.cast(_float64_array(scores), pa.string()),
            ending,
            " ",
        )
        yield _text_of(lines)


def _rows_between(blocks, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row of each line, doc key, float64 score) of rows ``lo`` to ``hi`` of
    a run's blocks, rows ascending, each row in ranking order."""
    rows, keys, scores = [], [], []
    for held, block in blocks:
        if held is None:
            local = np.arange(lo, hi)
            block_rows = local
        else:
            start, stop = np.searchsorted(held, [lo, hi])
            local = np.arange(start, stop)
            block_rows = held[start:stop]
        if not len(local):
            continue
        codes = block.doc_codes[local[0] : local[-1] + 1].cpu().numpy()
        # Widened on the device (bfloat16 has no NumPy dtype); exact for every float type.
        values = block.scores[local[0] : local[-1] + 1].double().cpu().numpy()
        valid = codes >= 0  # a row's documents come first, padding last
        rows.append(np.repeat(block_rows.astype(np.int64), valid.sum(1)))
        keys.append(codes[valid])
        scores.append(values[valid])
    if len(rows) == 1:
        return rows[0], keys[0], scores[0]
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    row, key, score = np.concatenate(rows), np.concatenate(keys), np.concatenate(scores)
    order = np.argsort(row, kind="stable")  # blocks interleave rows; a row's lines stay in order
    return row[order], key[order], score[order]


# -------------------------------------------------------------- qrels lines
def qrels_slices(qrels) -> Iterator[memoryview]:
    """The TREC text of ``qrels`` (a :class:`gpukit.Qrels`), slice by slice."""
    check_ids(qrels.query_ids, qrels.source, "query id", first_field=True)
    for lo in range(0, len(qrels), LINES_PER_SLICE):
        hi = min(lo + LINES_PER_SLICE, len(qrels))
        dids = qrels.doc_space.ids_of(qrels.doc_codes[lo:hi])
        check_ids(dids, qrels.source, "document id")
        lines = pc.binary_join_element_wise(
            qrels.query_ids.take(_int64_array(qrels.query_codes[lo:hi])),
            "0",
            dids,
            pc.binary_join_element_wise(pc.cast(_int64_array(qrels.grades[lo:hi]), pa.string()), "\n", ""),
            " ",
        )
        yield _text_of(lines)


# ----------------------------------------------------------------- writing
def to_text(slices: Iterator[memoryview]) -> str:
    """The slices joined as one string."""
    return b"".join(bytes(s) for s in slices).decode("utf-8")


def write_slices(path: str | os.PathLike, slices: Iterator[memoryview]) -> None:
    """Write the slices to ``path`` (``.gz``: gzip; ``"-"``: standard output)."""
    target = os.fspath(path)
    if target == "-":
        out = sys.stdout.buffer
        for piece in slices:
            out.write(piece)
        out.flush()
        return
    directory = os.path.dirname(os.path.abspath(target))
    if os.path.isdir(target):
        raise UsageError(f"{target}: is a directory, not a file")
    if not os.path.isdir(directory):
        raise UsageError(f"{target}: directory {directory} does not exist")
    # A new name in the target's directory (so the rename is atomic), created
    # with mode 0666 less the umask, as open() would create the target itself.
    temporary = os.path.join(directory, f".{os.path.basename(target)}.{os.getpid()}.{secrets.token_hex(6)}.part")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as raw, _compressed(raw, target.endswith(".gz")) as out:
            for piece in slices:
                out.write(piece)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


@contextlib.contextmanager
def _compressed(raw: IO[bytes], gz: bool) -> Iterator[IO[bytes]]:
    if not gz:
        yield raw
        return
    try:
        from isal import igzip
    except ImportError:
        stream: io.BufferedIOBase = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)
    else:
        stream = igzip.IGzipFile(fileobj=raw, mode="wb", mtime=0)
    with stream:
        yield stream
