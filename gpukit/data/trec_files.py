"""A qrels file and many run files, read in order."""
from __future__ import annotations

import os
from typing import Iterator, Sequence

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Dedup, Run
from gpukit.errors import UsageError

Path = str | os.PathLike


def read_trec_files(qrels_path: Path, run_paths: Sequence[Path], *, dedup: Dedup = "error") -> tuple[Qrels, Iterator[Run]]:
    """(qrels, the runs one at a time) of a TREC qrels file and run files:
    ``Qrels.from_trec(qrels_path)`` and ``(Run.from_trec(p, dedup=dedup) for
    p in run_paths)``, so that only one run is held at a time. The qrels are
    read at once (their error comes first); a run is read when it is due."""
    if not run_paths:
        raise UsageError("read_trec_files needs at least one run file")
    qrels = Qrels.from_trec(qrels_path)
    return qrels, (Run.from_trec(path, dedup=dedup) for path in run_paths)
