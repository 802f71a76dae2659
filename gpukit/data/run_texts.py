"""Run files' text, parsed in order, the next one ahead on a second thread (no torch).

Evaluating a dozen runs of a TREC track against one qrels is a loop of
"parse a run, evaluate it". Parsing text (zlib's inflate, Arrow's CSV
parser) runs without Python's GIL, so one worker thread parses the next run's
text while the calling thread builds and evaluates the current one: on a
machine with a free core the text parse leaves the critical path
(docs/benchmarks.md, "Sixth pass").

This module imports neither torch nor anything that does, so that
``gpukit eval`` can start :class:`RunTexts` first and parse the first run
while torch (about a second of single-threaded imports) loads on the calling
thread ("Seventh pass").

The worker only parses text into Arrow columns (:func:`read_run_table`); doc
keys, the (Q, K) layout and every torch op stay with the caller, so torch's
process-wide intra-op thread count (:mod:`gpukit.threads`) is never changed
from two threads at once. The tables, and every error, come in the order of
the paths with the same values and messages as :func:`read_run_table` one
after another: a bad line in run ``i + 1`` is raised when run ``i + 1`` is
due, never earlier. At most one run's text is held ahead.

A file is read ahead only when that can pay: the machine is not busy
(:func:`gpukit.machine_load.machine_busy`; there a second thread only waits
for a core), the file is a regular file of at least ``TINY_INPUT_BYTES``
(below it, the thread hand-off costs about what the parse does) and fits one
``BLOCK_BYTES`` block of text (a longer file is read block by block with the
next block's parse overlapping the read, on all cores already, and holding
one ahead would hold a large table beside the run in use). The first file is
exempt from the upper bound when the caller says it has single-threaded work
to overlap (``first_any_size``): no run is held yet, and the import of torch
leaves a core free. Any other file is read when it is due, on the calling
thread.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator, Sequence

from gpukit.data.text_table import BLOCK_BYTES, TINY_INPUT_BYTES, Column, ParsedTable, read_table, text_size_hint
from gpukit.errors import UsageError
from gpukit.machine_load import background_work, machine_busy

Path = str | os.PathLike

#: The columns of a TREC run line; the rank is not read (trec_eval re-ranks by score).
_TREC_RUN_COLUMNS = (
    Column("query_id", "id"),
    Column("q0", "skip"),
    Column("doc_id", "id"),
    Column("rank", "skip"),
    Column("score", "float"),
    Column("run_tag", "skip"),
)

#: The worker thread's name prefix.
WORKER_NAME = "gpukit-read-ahead"


def read_run_table(path: Path, stop: threading.Event | None = None) -> ParsedTable:
    """The parsed text of a TREC run file (``qid Q0 docno rank score tag``;
    the rank column is skipped, the rest of a line after the tag ignored):
    :meth:`gpukit.data.run.Run.from_trec`'s first step, for :meth:`~gpukit.data.run.Run.from_table`.
    ``stop``: see :func:`~gpukit.data.text_table.read_table`."""
    return read_table(path, _TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True, stop=stop)


def _read_in_background(path: Path, stop: threading.Event) -> ParsedTable:
    """:func:`read_run_table` on the worker, counted as gpukit background work
    (the calling thread's pools then leave its core to it)."""
    with background_work():
        return read_run_table(path, stop)


def worth_reading_ahead(path: Path, any_size: bool = False) -> bool:
    """Whether ``path``'s size lies where reading it on a second thread pays
    (see the module docstring; ``any_size``: no upper bound); the machine's
    load is not considered here."""
    size = text_size_hint(path)
    return size is not None and TINY_INPUT_BYTES <= size and (any_size or size < BLOCK_BYTES)


class RunTexts:
    """The parsed text (:func:`read_run_table`) of ``paths``, in order, one
    file ahead on a worker thread where that pays.

    ``read_ahead``: use the worker (default: when the machine is not busy).
    ``first_any_size``: the first file is read ahead whatever its size (for a
    caller about to do single-threaded work, such as importing torch). The
    first file's parse starts here. Iterate once; iterating to the end,
    closing the iterator, or :meth:`close` stops the worker (a parse under way
    ends after the block it is parsing; one not started is cancelled).
    """

    def __init__(self, paths: Sequence[Path], read_ahead: bool | None = None, *, first_any_size: bool = False) -> None:
        self.paths = list(paths)
        if not self.paths:
            raise UsageError("no run file given")
        if read_ahead is None:
            read_ahead = not machine_busy()
        self._ahead = [read_ahead and worth_reading_ahead(p, any_size=first_any_size and i == 0) for i, p in enumerate(self.paths)]
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=WORKER_NAME) if any(self._ahead) else None
        self._pending: Future | None = None
        # Set by close(): a parse under way stops before its next block.
        self._stop = threading.Event()
        self._started = False
        self._submit(0)

    @property
    def reading_ahead(self) -> bool:
        """Whether a file's parse is under way or done on the worker, not yet handed out."""
        return self._pending is not None

    def _submit(self, index: int) -> None:
        """Start parsing file ``index`` on the worker, if it is read ahead."""
        self._pending = None
        if index < len(self.paths) and self._ahead[index]:
            self._pending = self._pool.submit(_read_in_background, self.paths[index], self._stop)  # type: ignore[union-attr]

    def __iter__(self) -> Iterator[ParsedTable]:
        if self._started:
            raise UsageError("RunTexts can be iterated once")
        self._started = True
        return self._tables()

    def _tables(self) -> Iterator[ParsedTable]:
        try:
            for index, path in enumerate(self.paths):
                table = self._pending.result() if self._ahead[index] else read_run_table(path)  # type: ignore[union-attr]
                # The next file is submitted before this table is handed out, so it is parsed meanwhile.
                self._submit(index + 1)
                yield table
                del table
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker: a parse not yet started is cancelled, one under way
        stops after the block it is parsing (its table is dropped)."""
        self._stop.set()
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> "RunTexts":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

