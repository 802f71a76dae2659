"""The grade join of the ranking stage: the grade of every ranked document.

Ranked and judged documents are expressed in one key space, then each topic
row looks its documents up in its own sorted judged keys (see
:class:`_GradeJoin`). Work tensors of one call are reused slice by slice.
"""
from __future__ import annotations

import numpy as np
import torch

from gpukit.data.run import Run
from gpukit.ideal_grades import NOT_JUDGED, _per_topic_table
from gpukit.io.doc_space import Vocabulary, sorted_distinct, translate_keys
from gpukit.judgments.qrels import Qrels


def _work(scratch: dict[str, torch.Tensor] | None, name: str, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A work tensor of ``like``'s shape: the leading rows of one buffer per
    name in ``scratch``, kept for the next slice (fresh pages for every slice
    of a large run cost more than the work done in them)."""
    buf = None if scratch is None else scratch.get(name)
    if buf is None or buf.shape[0] < like.shape[0] or buf.shape[1:] != like.shape[1:] or buf.dtype != dtype or buf.device != like.device:
        buf = torch.empty(like.shape, dtype=dtype, device=like.device)
        if scratch is not None:
            scratch[name] = buf
    return buf[: like.shape[0]]


def _row_lengths(codes: torch.Tensor, scratch: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
    """(R,) int64 documents (keys >= 0) of each row. Counted as bytes into
    int32 (widths < 2**31): a bool row sum widens every element to int64."""
    present = torch.ge(codes, 0, out=_work(scratch, "present", codes, torch.bool))
    wide = torch.int32 if codes.shape[1] < 2**31 else torch.int64
    return present.view(torch.uint8).sum(1, dtype=wide).to(torch.int64)


class _GradeJoin:
    """Grades of ranked documents, a slice of topic rows at a time.

    Ranked and judged documents are first expressed in one key space. With
    a vocabulary run (or packed ids on both sides) that is the qrels' own
    space: the run's vocabulary is looked up in the qrels' (-1: never
    judged), and the tables below depend on the qrels and the topics only,
    so they are built once per Qrels (``Qrels.derived``) and reused by every
    run. Otherwise (a packed run against a vocabulary qrels) the qrels docs
    are expressed as the run's packed keys. Then each topic row searches its
    own judged keys in a padded (T, J) table (short, cache-resident binary
    searches), or, when one topic has too many judgments for such a table,
    all (topic, judged doc) pairs at once.
    """

    def __init__(self, qrels: Qrels, run: Run, topics: np.ndarray, device: torch.device):
        self.device = device
        self.topics = torch.from_numpy(topics).to(device)
        # (V,) qrels key of each run vocabulary key, when codes are joined in the qrels' space.
        self.to_qrels_space: torch.Tensor | None = None
        if isinstance(run.doc_space, Vocabulary) or run.doc_space == qrels.doc_space:
            if isinstance(run.doc_space, Vocabulary):
                mapped = qrels.doc_space.keys_of(run.doc_space.ids)  # -1: never judged
                # One spare -1 so that an empty vocabulary still indexes (its codes are all padding).
                self.to_qrels_space = torch.from_numpy(np.append(mapped, -1)).to(device)
            structures = qrels.derived(
                ("join", str(device), topics.tobytes()),
                lambda: _join_structures(qrels.query_codes, qrels.doc_codes, qrels.grades, topics, qrels.doc_space.bound, device),
            )
        else:
            # The judged docs in the run's key space: built once per space (runs
            # of one collection usually share it: same bytes at each position).
            structures = qrels.derived(
                ("join", str(device), topics.tobytes(), run.doc_space),
                lambda: _translated_join_structures(qrels, run.doc_space, topics, device),
            )
        self.table, self.pairs = structures

    def __call__(self, codes: torch.Tensor, rows: slice, scratch: dict[str, torch.Tensor] | None = None,
                 out: torch.Tensor | None = None) -> torch.Tensor:
        """(R, K) int32 grades of ``codes`` (topic rows ``rows``); NOT_JUDGED when absent.

        ``scratch`` keeps work tensors for the next call (see :func:`_work`);
        ``out``, an (R, K) int32 tensor, receives the grades (returned)."""
        if self.to_qrels_space is not None:
            safe = torch.clamp(codes, min=0, out=_work(scratch, "safe", codes, codes.dtype))
            mapped = torch.index_select(self.to_qrels_space, 0, safe.view(-1), out=_work(scratch, "mapped", safe.view(-1), codes.dtype))
            codes = mapped.view(codes.shape).masked_fill_(codes < 0, -1)
        return self._grades(codes, rows, scratch, out)

    def _grades(self, codes: torch.Tensor, rows: slice, scratch: dict[str, torch.Tensor] | None = None,
                out: torch.Tensor | None = None) -> torch.Tensor:
        """Grades of ``codes`` given in the key space of the tables."""
        if self.table is not None:
            sorted_codes, sorted_grades = self.table[0][rows], self.table[1][rows]
            # Every key is below the pad, which ends each row (a spare column,
            # see _join_structures): the insertion point is always in the row.
            pos = torch.searchsorted(sorted_codes, codes, out=_work(scratch, "pos", codes, torch.int64))
            found = torch.gather(sorted_codes, 1, pos, out=_work(scratch, "found", codes, sorted_codes.dtype))
            missing = torch.ne(found, codes, out=_work(scratch, "missing", codes, torch.bool))  # padding (-1) never matches
            return torch.gather(sorted_grades, 1, pos, out=out).masked_fill_(missing, NOT_JUDGED)
        if self.pairs is not None:
            distinct, pair_keys, grades = self.pairs
            dense = torch.searchsorted(distinct, codes).clamp_(max=distinct.numel() - 1)
            judged_doc = (distinct[dense] == codes) & (codes >= 0)
            run_keys = self.topics[rows, None] * distinct.numel() + dense  # topics hold qrels query codes
            pos = torch.searchsorted(pair_keys, run_keys).clamp_(max=pair_keys.numel() - 1)
            found = judged_doc & (pair_keys[pos] == run_keys)
            return _into(torch.where(found, grades[pos], torch.full_like(pos, NOT_JUDGED, dtype=torch.int32)), out)
        return _into(torch.full(codes.shape, NOT_JUDGED, dtype=torch.int32, device=codes.device), out)


class _AnnotatedJoin(_GradeJoin):
    """Grade 0 where the ranked document is judged for any query of the qrels
    (whatever its grade), ``NOT_JUDGED`` elsewhere: membership in the sorted
    distinct judged doc keys, in the key space ``_GradeJoin`` maps codes to."""

    def __init__(self, qrels: Qrels, run: Run, topics: np.ndarray, device: torch.device):
        super().__init__(qrels, run, topics, device)
        same_space = isinstance(run.doc_space, Vocabulary) or run.doc_space == qrels.doc_space
        keys = qrels.doc_codes if same_space else translate_keys(qrels.doc_codes, qrels.doc_space, run.doc_space)
        self.keys = torch.from_numpy(sorted_distinct(keys[keys >= 0])).to(device)

    def _grades(self, codes: torch.Tensor, rows: slice, scratch: dict[str, torch.Tensor] | None = None,
                out: torch.Tensor | None = None) -> torch.Tensor:
        if self.keys.numel() == 0:
            return _into(torch.full(codes.shape, NOT_JUDGED, dtype=torch.int32, device=codes.device), out)
        pos = torch.searchsorted(self.keys, codes).clamp_(max=self.keys.numel() - 1)
        found = (self.keys[pos] == codes) & (codes >= 0)
        return _into(torch.where(found, 0, NOT_JUDGED).to(torch.int32), out)


def _into(values: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """``values``, copied into ``out`` when one is given (the join's output contract)."""
    if out is None:
        return values
    return out.copy_(values)


def _join_structures(
    kept_q: np.ndarray, kept_keys: np.ndarray, kept_grades: np.ndarray, topics: np.ndarray, pad: int, device: torch.device
) -> tuple[tuple[torch.Tensor, torch.Tensor] | None, tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None]:
    """(table, pairs) of judged (query code, doc key, grade) rows for ``_GradeJoin``: one is set, or neither
    when nothing is judged. Keys ascend within a query; ``pad`` is above every key."""
    if not len(kept_keys):
        return None, None
    # One spare pad column: a key's insertion point is then always a column of its row.
    table = _per_topic_table(kept_q, kept_keys, kept_grades, topics, pad, spare=1)
    if table is not None:
        return (torch.from_numpy(table[0]).to(device), torch.from_numpy(table[1]).to(device)), None
    # Pairs: judged docs renumbered densely (their keys may use all 63 bits),
    # so that (topic, doc) fits one sortable int64.
    distinct = sorted_distinct(kept_keys)
    pair_keys = kept_q * len(distinct) + np.searchsorted(distinct, kept_keys)
    order = np.argsort(pair_keys, kind="stable")
    pairs = (
        torch.from_numpy(distinct).to(device),
        torch.from_numpy(pair_keys[order]).to(device),
        torch.from_numpy(kept_grades[order]).to(device=device, dtype=torch.int32),
    )
    return None, pairs


def _translated_join_structures(qrels: Qrels, space, topics: np.ndarray, device: torch.device):
    """:func:`_join_structures` of the judgments with their docs expressed in
    ``space`` (a run's); docs ``space`` cannot hold are dropped (no run of it ranks them)."""
    judged_keys = translate_keys(qrels.doc_codes, qrels.doc_space, space)
    keep = judged_keys >= 0
    # Keys keep the ids' byte order, so they stay sorted within a query like the qrels' codes.
    return _join_structures(qrels.query_codes[keep], judged_keys[keep], qrels.grades[keep], topics, space.bound, device)
