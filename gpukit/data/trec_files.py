"""A qrels file and many run files, each run's text read ahead on a second thread.

Evaluating a dozen runs of a TREC track against one qrels is a loop of
"parse a run, evaluate it". Parsing text (zlib's inflate, Arrow's CSV
parser) runs without Python's GIL, so one worker thread reads the next run's
text while the calling thread builds and evaluates the current one, and
reads the first run while the qrels are read: on a machine with a free core
the text parse leaves the critical path (docs/benchmarks.md, "Sixth pass").

The worker only parses text into Arrow columns (:func:`~gpukit.data.run.read_run_table`);
doc keys, the (Q, K) layout and every torch op stay on the calling thread,
so torch's process-wide intra-op thread count (:mod:`gpukit.threads`) is
never changed from two threads at once. The runs, and every error, come in
the order of ``run_paths`` with the same values and messages as
:meth:`Run.from_trec` one after another: a bad line in run ``i + 1`` is raised
when run ``i + 1`` is due, never earlier. At most one run's text is held
ahead.

A file is read ahead only when that can pay: the machine is not busy
(:func:`gpukit.threads.machine_busy`; there a second thread only waits for
a core), the file is a regular file of at least ``TINY_INPUT_BYTES`` (below
it, the thread hand-off costs about what the parse does) and fits one
``BLOCK_BYTES`` block of text (a longer file is read block by block with
the next block's parse overlapping the read, on all cores already, and
holding one ahead would hold a large table). Any other file is read when it
is due, on the calling thread.
"""
from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator, Sequence

from gpukit.data.qrels import Qrels
from gpukit.data.run import Dedup, Run, read_run_table
from gpukit.data.text_table import BLOCK_BYTES, TINY_INPUT_BYTES, ParsedTable, text_size_hint
from gpukit.errors import UsageError
from gpukit.threads import machine_busy

Path = str | os.PathLike


def worth_reading_ahead(path: Path) -> bool:
    """Whether ``path``'s size lies where reading it on a second thread pays
    (see the module docstring); the machine's load is not considered here."""
    size = text_size_hint(path)
    return size is not None and TINY_INPUT_BYTES <= size < BLOCK_BYTES


def read_trec_files(
    qrels_path: Path, run_paths: Sequence[Path], *, dedup: Dedup = "error", read_ahead: bool | None = None
) -> tuple[Qrels, Iterator[Run]]:
    """(qrels, the runs one at a time) of a TREC qrels file and run files.

    Equivalent to ``Qrels.from_trec(qrels_path)`` and ``(Run.from_trec(p,
    dedup=dedup) for p in run_paths)``: the same runs, names, values and
    errors, in the same order. With ``read_ahead`` (default: when the machine
    is not busy) a worker thread parses the text of the next run file whose
    size makes that pay while the caller works (see the module docstring).
    Consume the iterator to the end, or close it (``it.close()``, or leave a
    ``for`` loop), to stop the worker; it finishes the file it is parsing.
    """
    paths = list(run_paths)
    if not paths:
        raise UsageError("read_trec_files needs at least one run file")
    if read_ahead is None:
        read_ahead = not machine_busy()
    ahead = [read_ahead and worth_reading_ahead(p) for p in paths]
    if not any(ahead):
        return Qrels.from_trec(qrels_path), (Run.from_trec(p, dedup=dedup) for p in paths)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpukit-read-ahead")
    first = _submit(pool, paths, ahead, 0)
    try:
        qrels = Qrels.from_trec(qrels_path)
    except BaseException:
        # The qrels' error comes first, as when read one after the other.
        _stop(pool, first)
        raise
    return qrels, _runs(pool, first, paths, ahead, dedup)


def _submit(pool: ThreadPoolExecutor, paths: list[Path], ahead: list[bool], index: int) -> Future | None:
    """Start parsing run ``index``'s text on the worker, if it is read ahead."""
    if index >= len(paths) or not ahead[index]:
        return None
    return pool.submit(read_run_table, paths[index])


def _runs(
    pool: ThreadPoolExecutor, pending: Future | None, paths: list[Path], ahead: list[bool], dedup: Dedup
) -> Iterator[Run]:
    """The runs in order; run ``i + 1``'s text is parsed while run ``i`` is built and used."""
    try:
        for index, path in enumerate(paths):
            table: ParsedTable = pending.result() if ahead[index] else read_run_table(path)  # type: ignore[union-attr]
            # The next file is found before this run is handed out, so it is parsed meanwhile.
            pending = _submit(pool, paths, ahead, index + 1)
            yield Run.from_table(table, dedup=dedup)
            del table
    finally:
        _stop(pool, pending)


def _stop(pool: ThreadPoolExecutor, pending: Future | None) -> None:
    """Stop the worker: a parse not yet started is cancelled, one under way finishes."""
    if pending is not None:
        pending.cancel()
    pool.shutdown(wait=True)
