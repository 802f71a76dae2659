"""ir_datasets judgments and scored documents as gpukit Qrels and Runs (optional).

``load_qrels(dataset)`` reads ``dataset.qrels_iter()`` (``TrecQrel`` and
friends: ``query_id``, ``doc_id``, ``relevance``) into a
:class:`~gpukit.Qrels`; ``load_run(scoreddocs)`` reads a dataset's
``scoreddocs_iter()`` (``ScoredDoc``: ``query_id``, ``doc_id``, ``score``),
or any iterable of such records, into a :class:`~gpukit.Run`. A dataset may
be given by its ir_datasets id (``"vaswani"``), which ``ir_datasets.load``
resolves, and which may download it: pass a dataset object to stay offline.

The records are read in one pass into flat columns and built as
:meth:`Qrels.from_arrays` / :meth:`Run.from_arrays` build them: the same
values as :meth:`Qrels.from_dict` of ``{q.query_id: {q.doc_id: q.relevance}}``,
except that a pair given twice is an error (a dict keeps the last one) for
qrels, and follows ``dedup`` for runs. ir_datasets is imported only by these
functions (``pip install ir_datasets``).
"""
from __future__ import annotations

from typing import Any, Iterable

from gpukit.errors import InputFormatError, UsageError


def _ir_datasets():
    try:
        import ir_datasets
    except ImportError:
        raise UsageError("gpukit.io.ir_datasets needs the ir_datasets package (pip install ir_datasets)") from None
    return ir_datasets


def _dataset(dataset_or_id: Any) -> Any:
    return _ir_datasets().load(dataset_or_id) if isinstance(dataset_or_id, str) else dataset_or_id


def _name(dataset_or_id: Any, default: str) -> str:
    if isinstance(dataset_or_id, str):
        return dataset_or_id
    return getattr(dataset_or_id, "dataset_id", None) or default


def load_qrels(dataset_or_id: Any):
    """A :class:`~gpukit.Qrels` of an ir_datasets dataset's ``qrels_iter()``."""
    from gpukit.judgments.qrels import Qrels

    dataset = _dataset(dataset_or_id)
    source = _name(dataset_or_id, "<ir_datasets qrels>")
    if (hasattr(dataset, "has_qrels") and not dataset.has_qrels()) or not hasattr(dataset, "qrels_iter"):
        raise UsageError(f"{source}: this ir_datasets dataset has no qrels")
    qids, dids, grades = [], [], []
    for record in dataset.qrels_iter():
        qids.append(str(record.query_id))
        dids.append(str(record.doc_id))
        grades.append(record.relevance)
    if not qids:
        raise InputFormatError(source, None, "empty qrels: no judgments")
    return Qrels.from_arrays(qids, dids, grades, source=source)


def load_run(scoreddocs: Any, name: str | None = None, dedup: str = "error"):
    """A :class:`~gpukit.Run` of a dataset's ``scoreddocs_iter()`` (a dataset,
    its id, or an iterable of records with ``query_id``, ``doc_id``, ``score``)."""
    from gpukit.data.run import Run

    records: Iterable[Any]
    # A dataset (an id, or an object with scoreddocs, or an ir_datasets Dataset without them).
    if isinstance(scoreddocs, str) or hasattr(scoreddocs, "scoreddocs_iter") or hasattr(scoreddocs, "has_scoreddocs"):
        dataset = _dataset(scoreddocs)
        if hasattr(dataset, "has_scoreddocs") and not dataset.has_scoreddocs():
            raise UsageError(f"{_name(scoreddocs, '<ir_datasets>')}: this ir_datasets dataset has no scoreddocs")
        if not hasattr(dataset, "scoreddocs_iter"):
            raise UsageError(f"{_name(scoreddocs, '<ir_datasets>')}: this object has no scoreddocs_iter()")
        records = dataset.scoreddocs_iter()
    else:
        records = scoreddocs
    run_name = name if name is not None else _name(scoreddocs, "run")
    qids, dids, scores = [], [], []
    for record in records:
        qids.append(str(record.query_id))
        dids.append(str(record.doc_id))
        scores.append(float(record.score))
    return Run.from_arrays(qids, dids, scores, name=run_name, dedup=dedup)
