"""A qrels file and many run files, each run's text read ahead on a second thread.

:func:`read_trec_files` reads the qrels and builds the runs one at a time
from :class:`~gpukit.data.run_texts.RunTexts`, which parses the next run's
text on a worker thread while the caller builds and evaluates the current
one, and the first run's while the qrels are read (where that pays; the
rules, and why only text parsing leaves the calling thread, are in
:mod:`gpukit.data.run_texts`).
"""
from __future__ import annotations

import os
from typing import Iterator, Sequence

from gpukit.data.qrels import Qrels
from gpukit.data.run import Dedup, Run
from gpukit.data.run_texts import RunTexts
from gpukit.errors import UsageError

Path = str | os.PathLike


def read_trec_files(
    qrels_path: Path, run_paths: Sequence[Path] | RunTexts, *, dedup: Dedup = "error", read_ahead: bool | None = None
) -> tuple[Qrels, Iterator[Run]]:
    """(qrels, the runs one at a time) of a TREC qrels file and run files.

    Equivalent to ``Qrels.from_trec(qrels_path)`` and ``(Run.from_trec(p,
    dedup=dedup) for p in run_paths)``: the same runs, names, values and
    errors, in the same order. With ``read_ahead`` (default: when the machine
    is not busy) a worker thread parses the text of the next run file whose
    size makes that pay while the caller works. ``run_paths`` may be a
    :class:`RunTexts` started earlier (``read_ahead`` is then its own), as
    ``gpukit eval`` does before importing torch. Consume the iterator to the
    end, or close it (``it.close()``, or leave a ``for`` loop), to stop the
    worker; it stops the file it is parsing after the block under way.
    """
    if isinstance(run_paths, RunTexts):
        texts = run_paths
    else:
        if not run_paths:
            raise UsageError("read_trec_files needs at least one run file")
        texts = RunTexts(run_paths, read_ahead)
    try:
        qrels = Qrels.from_trec(qrels_path)
    except BaseException:
        # The qrels' error comes first, as when read one after the other.
        texts.close()
        raise
    return qrels, _runs(texts, dedup)


def _runs(texts: RunTexts, dedup: Dedup) -> Iterator[Run]:
    """The runs in order; run ``i + 1``'s text is parsed while run ``i`` is built and used."""
    with texts:
        for table in texts:
            yield Run.from_table(table, dedup=dedup)
