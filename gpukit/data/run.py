"""Retrieval runs as padded (Q, K) tensors, or blocks of them.

A ``Run`` stores, for each query row, the retrieved documents as integer keys
whose order is the ids' byte order (see :mod:`gpukit.io.doc_space`: the ids'
own packed bytes when they are short, else positions in a sorted vocabulary),
and their scores. Each row is stored in trec_eval's ranking order (score
descending, ties by docno descending) with padding (-1) at the end, so that
forming the ranking needs no sort unless scores are compared in another
precision. Rows are usually in that order in the file already (runs list
documents by rank): only rows found out of order, or holding tied scores, are
sorted.

Lopsided runs (a few rankings far deeper than the rest) are not padded to
the deepest one: the queries are grouped into blocks by the power of two
that bounds their length, one padded (R, K_b) block each, so the layout
holds at most about twice the run's lines (see :class:`RunBlock`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterator, Literal, Mapping, Sequence

import numpy as np
import pyarrow as pa
import torch

from gpukit.io.arrow_numpy import arrow_indices, numpy_values, pandas_columns, pc, string_array
from gpukit.io.corpus_keys import CorpusKeys, corpus_keys
from gpukit.io.doc_space import DocSpace, doc_keys
from gpukit.io.nested_mapping import FlatMapping, flatten
from gpukit.io.string_coding import CodeRuns, string_codes, string_codes_or_runs
from gpukit.io.text_table import Column, ParsedTable, read_table
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import DeviceError, InputFormatError, UsageError, echo

Dedup = Literal["error", "max", "first"]

#: Padding (elements) a single (Q, K) layout may add beyond twice the run's
#: lines before queries are laid out in blocks by depth instead: runs whose
#: rankings are about equally deep keep one block, today's fast path.
LAYOUT_SLACK_ELEMENTS = 1 << 20


def lopsided(n_rows: int, width: int, n_entries: int) -> bool:
    """Whether padding ``n_rows`` rows to ``width`` would cost more than twice
    the ``n_entries`` they hold (plus ``LAYOUT_SLACK_ELEMENTS``)."""
    return n_rows * width > 2 * n_entries + LAYOUT_SLACK_ELEMENTS


def length_classes(lengths: np.ndarray) -> np.ndarray:
    """ceil(log2(length)) per entry (0 for lengths 0 and 1): the depth bucket.
    Rows of one class differ at most twofold in length, so padding a class to
    its longest row at most doubles it."""
    powers = np.left_shift(np.int64(1), np.arange(63, dtype=np.int64))
    return np.searchsorted(powers, lengths, side="left")


#: The columns of a TREC run line; the rank is not read (trec_eval re-ranks by score).
TREC_RUN_COLUMNS = (
    Column("query_id", "id"),
    Column("q0", "skip"),
    Column("doc_id", "id"),
    Column("rank", "skip"),
    Column("score", "float"),
    Column("run_tag", "skip"),
)


def read_run_table(path: str | os.PathLike) -> ParsedTable:
    """The parsed text of a TREC run file (``qid Q0 docno rank score tag``;
    the rank column is skipped, the rest of a line after the tag ignored):
    :meth:`Run.from_trec`'s first step, for :meth:`Run.from_table`."""
    return read_table(path, TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True)


@dataclass(frozen=True, eq=False)
class RunBlock:
    """Rows of a run padded to their own deepest ranking.

    Attributes:
        rows: (R,) int64 run rows held, ascending, on the run's device;
            ``None``: every row of the run, in order.
        doc_codes: (R, K_b) int64, as :attr:`Run.doc_codes` for these rows.
        scores: (R, K_b) float, aligned with ``doc_codes`` (on their device
            when read; see :meth:`to`).
    """

    rows: torch.Tensor | None
    doc_codes: torch.Tensor
    _scores: torch.Tensor

    @property
    def scores(self) -> torch.Tensor:
        return _scores_on_codes_device(self, "_scores", self.doc_codes)

    @property
    def score_dtype(self) -> torch.dtype:
        """dtype of :attr:`scores`, without copying them to the device."""
        return self._scores.dtype

    def to(self, device: torch.device) -> "RunBlock":
        """Rows and doc keys copied to ``device``; scores on their first read."""
        rows = None if self.rows is None else self.rows.to(device)
        return RunBlock(rows, self.doc_codes.to(device), _deferred(self._scores, device))


def _deferred(scores: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Scores for a copy on ``device``: host scores stay where they are until
    read (they hold no device memory); device scores are copied now, so that
    moving a run off a device frees it."""
    return scores if scores.device.type == "cpu" else scores.to(device)


def _scores_on_codes_device(owner, field: str, codes: torch.Tensor) -> torch.Tensor:
    """``owner.<field>`` moved, once, to the device of ``codes``: ``to`` defers
    the copy of scores because evaluation reads them only to compare them in
    a narrower precision than stored (see :func:`gpukit.ranking.form_ranking`)."""
    scores = getattr(owner, field)
    if scores.device != codes.device:
        scores = scores.to(codes.device)
        object.__setattr__(owner, field, scores)  # frozen dataclass: a cache, not a change of value
    return scores


@dataclass(frozen=True, eq=False)
class Run:
    """A ranked retrieval run.

    Attributes:
        query_ids: query id of each row (``pa.StringArray``, unique).
        doc_space: how document keys map to ids (:class:`~gpukit.io.doc_space.PackedIds`,
            :class:`~gpukit.io.doc_space.RadixIds` or a :class:`~gpukit.io.doc_space.Vocabulary`).
        doc_codes: (Q, K) int64 tensor of document keys in ``doc_space``,
            ordered as the ids are byte-wise; each row in ranking order
            (score desc, key desc), -1 marks padding (always at the row's end).
            For a run stored in blocks (:meth:`row_blocks`) it is padded on
            demand: Q x K elements, however few the lines.
        scores: (Q, K) float tensor aligned with ``doc_codes`` (also padded on
            demand for a run in blocks).
        name: run name used in reports (file name for files).
        blocks: ``None`` when the run is one (Q, K) layout; else the
            :class:`RunBlock` s holding each row exactly once.
    """

    query_ids: pa.Array
    doc_space: DocSpace
    _doc_codes: torch.Tensor | None
    _scores: torch.Tensor | None
    name: str = "run"
    blocks: tuple[RunBlock, ...] | None = None

    @classmethod
    def from_blocks(cls, query_ids: pa.Array, doc_space: DocSpace, blocks: Sequence[RunBlock], name: str = "run") -> "Run":
        """A run stored as ``blocks`` (each row in exactly one)."""
        return cls(query_ids, doc_space, None, None, name, tuple(blocks))

    # ------------------------------------------------------------------ build
    @classmethod
    def from_trec(cls, path: str | os.PathLike, name: str | None = None, dedup: Dedup = "error") -> "Run":
        """Read a TREC run ``qid Q0 docno rank score tag`` (plain or gzip).

        The rank column is ignored (trec_eval re-ranks by score), and so is
        anything after the run tag on a line, as trec_eval does. NaN scores are
        an error. A document retrieved twice for one query is an error naming
        both lines, unless ``dedup`` is ``"max"`` (keep the higher score) or
        ``"first"`` (keep the first line). Scores are strtod's decimal
        spellings (see :mod:`gpukit.io.text_table`); ``path`` ``"-"`` reads
        standard input.
        """
        return cls.from_table(read_run_table(path), name, dedup)

    @classmethod
    def from_msmarco(cls, path: str | os.PathLike, name: str | None = None, dedup: Dedup = "error") -> "Run":
        """Read an MS MARCO run ``qid<TAB>docid<TAB>rank`` (plain or gzip); the
        score of a line is ``-rank``, so the ranking is the file's ranks (see
        :mod:`gpukit.data.file_formats`)."""
        from gpukit.data.file_formats import run_from_msmarco

        return run_from_msmarco(path, name, dedup)

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike, name: str | None = None, dedup: Dedup = "error") -> "Run":
        """Read a run of JSON lines ``{"query_id": ..., "doc_id": ..., "score": ...}``
        (plain or gzip; see :mod:`gpukit.io.jsonl`)."""
        from gpukit.data.file_formats import run_from_jsonl

        return run_from_jsonl(path, name, dedup)

    @classmethod
    def from_parquet(cls, path: str | os.PathLike, name: str | None = None, dedup: Dedup = "error", query_col: str = "query_id",
                     doc_col: str = "doc_id", score_col: str = "score") -> "Run":
        """Read a run from a Parquet file with columns ``query_id``, ``doc_id``,
        ``score`` (see :mod:`gpukit.io.parquet`)."""
        from gpukit.data.file_formats import run_from_parquet

        return run_from_parquet(path, name, dedup, query_col, doc_col, score_col)

    @classmethod
    def from_table(cls, table: ParsedTable, name: str | None = None, dedup: Dedup = "error") -> "Run":
        """:meth:`from_trec` of a run file's parsed text (:func:`read_run_table`).
        ``table``'s columns are consumed."""
        source = table.source
        # Columns are popped as they are used so that their memory goes early.
        # A grouped file's query ids stay runs (no code per line): its layout needs no more.
        q_rows, q_vocab = string_codes_or_runs(table.columns.pop("query_id"))
        # The parsed scores stay Arrow chunks until they are laid out, or made
        # one flat array chunk by chunk where the layout needs one (_from_flat).
        score_column = table.columns.pop("score")
        chunks = score_column.chunks if isinstance(score_column, pa.ChunkedArray) else [score_column]
        scores = [ParsedScores(chunks, source, table.line_of)]
        del score_column, chunks
        d_codes, d_space = doc_keys(table.columns.pop("doc_id"), radix=True)
        run_name = name if name is not None else os.path.basename(source)
        flat_docs = [d_codes]
        del d_codes  # _from_flat frees the flat keys and scores once they are laid out
        return cls._from_flat(q_rows, q_vocab, flat_docs, d_space, scores, run_name, dedup, source, table.line_of)

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], name: str = "run", dedup: Dedup = "error") -> "Run":
        """Build from ``{query_id: {doc_id: score}}`` (pytrec_eval / ranx shape).

        Ids that are not strings are read as ``str(id)`` (so ``1`` and ``"1"``
        are one id: a document given under both is retrieved twice, handled
        by ``dedup``). A query with an empty dict has no row, as in a TREC
        file. NaN scores are an error naming the query and document.
        Flattened in one pass (:func:`gpukit.io.nested_mapping.flatten`);
        with string keys no pair can repeat, so ``dedup`` has nothing to do.
        """
        flat = flatten(run, name, strict=False)
        return cls.from_flat_mapping(flat, name, dedup)

    @classmethod
    def from_flat_mapping(cls, flat: FlatMapping, name: str = "run", dedup: Dedup = "error") -> "Run":
        """Build from a flattened ``{query_id: {doc_id: score}}`` (see :meth:`from_dict`)."""
        if not len(flat.values):
            raise InputFormatError(name, None, "empty run: no retrieved documents")
        scores = flat.values.astype(np.float64, copy=False)
        nan = np.flatnonzero(np.isnan(scores))
        if len(nan):
            qid, did = flat.where(int(nan[0]))
            raise InputFormatError(name, None, f"query {echo(qid)} document {echo(did)}: score is NaN")
        q_codes, q_vocab = flat.sorted_query_codes()
        d_codes, d_space = doc_keys(flat.doc_ids, radix=True)
        return cls._from_flat(q_codes, q_vocab, d_codes, d_space, scores, name, dedup, name, None, flat.distinct_pairs)

    @classmethod
    def from_arrays(cls, query_ids, doc_ids, scores, name: str = "run", dedup: Dedup = "error") -> "Run":
        """Build from three parallel sequences (lists, NumPy or Arrow arrays)."""
        q = string_array(query_ids)
        d = string_array(doc_ids)
        s = np.asarray(scores, dtype=np.float64)
        if not (len(q) == len(d) == len(s)):
            raise InputFormatError(name, None, "query_ids, doc_ids and scores differ in length")
        if len(s) == 0:
            raise InputFormatError(name, None, "empty run: no retrieved documents")
        nan = np.flatnonzero(np.isnan(s))
        if len(nan):
            raise InputFormatError(name, None, f"row {int(nan[0])}: score is NaN")
        q_codes, q_vocab = string_codes(q)
        d_codes, d_space = doc_keys(d, radix=True)
        return cls._from_flat(q_codes, q_vocab, d_codes, d_space, s, name, dedup, name, None)

    @classmethod
    def from_pandas(
        cls,
        df,
        query_col: str = "query_id",
        doc_col: str = "doc_id",
        score_col: str = "score",
        name: str = "run",
        dedup: Dedup = "error",
    ) -> "Run":
        """Build from a pandas DataFrame with one row per retrieved document.

        Column names default to ir_measures' (``query_id``, ``doc_id``,
        ``score``); for ranx's pass ``query_col="q_id"``. Ids may be strings,
        categoricals or integers (read as their decimal text, as ``from_dict``
        does with ``str``). Goes through Arrow, without a Python row loop; the
        result equals :meth:`from_dict` of the same data.
        """
        roles = {"query_col": query_col, "doc_col": doc_col, "score_col": score_col}
        cols = pandas_columns(df, roles, "Run.from_pandas", name, ids=("query_col", "doc_col"))
        score = cols["score_col"]
        if not (pa.types.is_floating(score.type) or pa.types.is_integer(score.type) or pa.types.is_decimal(score.type)):
            raise InputFormatError(name, None, f"Run.from_pandas: column {score_col!r} must be numeric, got {score.type}")
        scores = score.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return cls.from_arrays(cols["query_col"], cols["doc_col"], scores, name=name, dedup=dedup)

    @classmethod
    def from_topk(
        cls,
        scores: torch.Tensor,
        doc_indices: torch.Tensor,
        query_ids: Sequence[str],
        doc_ids: Sequence[str] | pa.Array | CorpusKeys,
        name: str = "run",
    ) -> "Run":
        """Wrap search output without leaving the device.

        ``scores`` and ``doc_indices`` are (Q, K) tensors on one device as
        returned by a search; ``doc_indices`` index ``doc_ids`` (the corpus in
        index order) and may hold -1 for "no result" (FAISS); any other
        negative index is an error. A row that is all -1 is left out of the
        run, as the TREC file written from the same output has no line for
        it: trec_eval then drops that query (or, with ``-c`` /
        ``complete=True``, scores it as an empty ranking), and so does
        evaluating this run. Corpus positions are mapped to doc keys by one
        on-device gather, and rows not already in ranking order are sorted;
        no per-query Python structure is built.

        The corpus key table is built and copied to the device once per
        :class:`~gpukit.io.corpus_keys.CorpusKeys` (a ``pa.Array`` corpus
        keeps one while it lives). Off the CPU every check is read back in
        one device-to-host transfer (one more to drop rows without results).
        """
        scores = torch.as_tensor(scores)
        doc_indices = torch.as_tensor(doc_indices)
        if scores.shape != doc_indices.shape or scores.dim() != 2:
            raise InputFormatError(name, None, f"scores {tuple(scores.shape)} and doc_indices {tuple(doc_indices.shape)} must be the same (Q, K) shape")
        if scores.device != doc_indices.device:
            raise DeviceError(f"scores on {scores.device} but doc_indices on {doc_indices.device}; move one explicitly")
        if len(query_ids) != scores.shape[0]:
            raise InputFormatError(name, None, f"{len(query_ids)} query ids for {scores.shape[0]} rows")
        if not scores.is_floating_point():
            raise InputFormatError(name, None, f"scores must be floating point, got {scores.dtype}")
        corpus = corpus_keys(doc_ids, name)
        qids = pa.array([str(q) for q in query_ids], pa.string())
        if len(qids) > 1 and pc.count_distinct(qids).as_py() != len(qids):
            raise InputFormatError(name, None, "query_ids contains duplicates")
        idx = doc_indices.to(torch.int64)
        # Indices out of range gather the padding key; the checks below reject them.
        codes = corpus.table(scores.device)[idx.clamp(-1, len(corpus))]
        ranked_scores = scores.clone()  # the caller's tensor is left as it is
        if _syncs_are_cheap(scores.device):
            return cls._checked_topk(idx, codes, ranked_scores, qids, corpus, name)
        # Off the CPU: rank every row (fixed shapes) and read all checks at once.
        repeated = _rank_rows_flagging_repeats(codes, ranked_scores)
        some = torch.ones((), dtype=torch.int64, device=idx.device)
        stats = torch.stack([
            idx.max() if idx.numel() else -some,
            idx.min() if idx.numel() else -some,
            (idx < 0).all(1).any().long() if idx.numel() else some * int(idx.shape[0] > 0),
            torch.isnan(scores).any().long(),
            repeated.long(),
        ]).tolist()
        highest, lowest, unanswered, nan, duplicate = stats
        if highest >= len(corpus) or lowest < -1 or nan or duplicate:
            # Some check fails: the CPU path names the problem.
            return cls._checked_topk(idx.cpu(), codes.cpu(), ranked_scores.cpu(), qids, corpus, name)
        if unanswered:
            return cls._checked_topk(idx, codes, ranked_scores, qids, corpus, name)
        return cls(qids, corpus.space, codes, ranked_scores, name)

    @classmethod
    def _checked_topk(cls, idx, codes, ranked_scores, qids, corpus, name) -> "Run":
        """``from_topk``'s checks one by one (errors name the problem), then the
        ranking of rows not in order. ``codes`` are ``idx`` mapped to keys."""
        if idx.numel() and int(idx.max()) >= len(corpus):
            raise InputFormatError(name, None, f"doc index {int(idx.max())} out of range for {len(corpus)} doc ids")
        if idx.numel() and int(idx.min()) < -1:
            row = int(torch.nonzero((idx < -1).any(1))[0])
            raise InputFormatError(name, None, f"row {row}: doc index {int(idx[row].min())}; only -1 may mark a missing result")
        answered = (idx >= 0).any(1)
        if not bool(answered.all()):
            if not bool(answered.any()):
                raise InputFormatError(name, None, "no result in any row (every doc index is -1)")
            kept = torch.nonzero(answered).flatten()
            codes, ranked_scores = codes[kept], ranked_scores[kept]
            qids = qids.take(arrow_indices(kept.cpu().numpy()))
        if torch.isnan(ranked_scores).any():
            raise InputFormatError(name, None, "scores contain NaN")
        _check_no_duplicates(codes, qids, corpus.space, name, None, None)
        rank_rows_inplace(codes, ranked_scores)
        return cls(qids, corpus.space, codes, ranked_scores, name)

    @classmethod
    def _from_flat(cls, q_codes, q_vocab, d_codes, d_space, scores, name, dedup, source, line_of, distinct_pairs=False) -> "Run":
        """Lay flat (row-aligned) query codes, doc keys and scores out as a Run.

        ``q_codes`` is a code per row or, for a grouped column, its
        :class:`CodeRuns`. ``d_codes`` and ``scores`` may each be wrapped in a
        one-element list, which is emptied once they are copied into the
        (Q, K) layout (to free them early: fresh pages are slow to fault in).
        ``distinct_pairs``: no (query, doc) pair repeats (the input was dicts), so ``dedup`` has nothing to do.
        """
        if dedup not in ("error", "max", "first"):
            raise UsageError(f"dedup must be 'error', 'max' or 'first', got {dedup!r}")
        n_rows = _flat_rows(scores)
        runs = q_codes if isinstance(q_codes, CodeRuns) else None
        if runs is not None and runs.each_code_once():
            lengths = np.zeros(len(q_vocab), dtype=np.int64)
            lengths[runs.codes] = runs.lengths()
            if not lopsided(len(q_vocab), int(lengths.max(initial=0)), n_rows):
                codes, score_t, first_lines = _grouped_layout(runs, d_codes, scores)

                def rows_of(q: int, code: int) -> list[int]:
                    # Only on error (rows still in file order): the file rows of that pair.
                    return (int(first_lines[q]) + np.flatnonzero(codes[q].numpy() == code)[:2]).tolist()

                codes, score_t = _dedup_and_rank(codes, score_t, dedup, q_vocab, d_space, source, line_of, rows_of, distinct_pairs)
                return cls(q_vocab, d_space, codes, score_t, name)
        if runs is not None:
            q_codes = runs.per_row()
        d_codes = d_codes.pop() if isinstance(d_codes, list) else d_codes
        flat_scores = scores.pop() if isinstance(scores, list) else scores
        if isinstance(flat_scores, ParsedScores):
            flat_scores = flat_scores.to_flat()
        del scores

        def rows_of(q: int, code: int) -> list[int]:
            # Only on error: the file rows of that (query, doc) pair, in file order.
            return np.flatnonzero((q_codes == q) & (d_codes == code))[:2].tolist()

        lengths = np.bincount(q_codes, minlength=len(q_vocab))
        if not lopsided(len(q_vocab), int(lengths.max(initial=0)), len(q_codes)):
            # (Q, K) layout with each query's documents in file order, so "first" needs no sort.
            codes, score_t = _padded_layout(q_codes, len(q_vocab), d_codes, flat_scores)
            del flat_scores
            codes, score_t = _dedup_and_rank(codes, score_t, dedup, q_vocab, d_space, source, line_of, rows_of, distinct_pairs)
            return cls(q_vocab, d_space, codes, score_t, name)
        blocks = []
        for rows, codes, score_t in _block_layout(q_codes, lengths, d_codes, [flat_scores]):
            names = q_vocab.take(arrow_indices(rows))

            def block_rows_of(q: int, code: int, rows=rows) -> list[int]:
                return rows_of(int(rows[q]), code)

            codes, score_t = _dedup_and_rank(codes, score_t, dedup, names, d_space, source, line_of, block_rows_of, distinct_pairs)
            blocks.append(RunBlock(torch.from_numpy(rows), codes, score_t))
            del codes, score_t
        del flat_scores
        return cls.from_blocks(q_vocab, d_space, blocks, name)

    # ----------------------------------------------------------------- access
    def row_blocks(self) -> tuple[RunBlock, ...]:
        """The run's rows as padded blocks: one block of every row (``rows``
        ``None``) unless the run is stored in blocks."""
        if self.blocks is None:
            return (RunBlock(None, self._doc_codes, self._scores),)
        return self.blocks

    @property
    def doc_codes(self) -> torch.Tensor:
        """(Q, K) doc keys; for a run in blocks a new padded tensor of Q x K
        int64 (memory: the deepest ranking times the number of queries), so
        code that can work block by block should use :meth:`row_blocks`."""
        if self.blocks is None:
            return self._doc_codes
        return self._padded(lambda b: b.doc_codes, -1)

    @property
    def scores(self) -> torch.Tensor:
        """(Q, K) scores aligned with :attr:`doc_codes` (padded on demand, as it
        is; after :meth:`to`, copied to the device on first read)."""
        if self.blocks is None:
            return _scores_on_codes_device(self, "_scores", self._doc_codes)
        return self._padded(lambda b: b.scores, 0)

    @property
    def score_dtype(self) -> torch.dtype:
        """dtype of :attr:`scores`, without copying them to the device."""
        return self.row_blocks()[0].score_dtype

    def _padded(self, part, fill) -> torch.Tensor:
        first = part(self.blocks[0])
        out = torch.full((self.num_queries, self.depth), fill, dtype=first.dtype, device=first.device)
        for block in self.blocks:
            values = part(block)
            out[block.rows, : values.shape[1]] = values
        return out

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    @property
    def depth(self) -> int:
        """K: the padded width (the longest ranking)."""
        return max(int(b.doc_codes.shape[1]) for b in self.row_blocks())

    @property
    def device(self) -> torch.device:
        return self.row_blocks()[0].doc_codes.device

    def lengths(self) -> torch.Tensor:
        """Number of retrieved documents per row."""
        if self.blocks is None:
            return (self._doc_codes >= 0).sum(1)
        out = torch.zeros(self.num_queries, dtype=torch.int64, device=self.device)
        for block in self.blocks:
            out[block.rows] = (block.doc_codes >= 0).sum(1)
        return out

    def to(self, device: DeviceLike) -> "Run":
        """A copy on ``device`` (explicit; evaluation never moves a run silently).

        Doc keys are copied now; scores held on the CPU when first read
        (:attr:`scores`): evaluating in the stored precision never reads
        them. Scores on a device are copied now (the copy frees it).
        """
        dev = resolve_device(device)
        if self.blocks is None:
            return Run(self.query_ids, self.doc_space, self._doc_codes.to(dev), _deferred(self._scores, dev), self.name)
        return Run.from_blocks(self.query_ids, self.doc_space, [b.to(dev) for b in self.blocks], self.name)

    def query_id_list(self) -> list[str]:
        return self.query_ids.to_pylist()

    @property
    def doc_ids(self) -> pa.Array:
        """The distinct retrieved document ids, byte-wise sorted (with a
        vocabulary: every id it holds). Computed on demand for packed keys."""
        keys = [b.doc_codes.cpu().numpy().reshape(-1) for b in self.row_blocks()]
        return self.doc_space.distinct_ids(keys[0] if len(keys) == 1 else np.concatenate(keys))

    def _row_in_block(self, row: int) -> tuple[RunBlock, int]:
        for block in self.row_blocks():
            if block.rows is None:
                return block, row
            at = int(torch.searchsorted(block.rows, torch.tensor(row, device=block.rows.device)))
            if at < block.rows.numel() and int(block.rows[at]) == row:
                return block, at
        raise IndexError(f"run row {row} out of range for {self.num_queries} rows")

    def doc_ids_of_row(self, row: int) -> list[str]:
        """Document ids of row ``row``, in stored order (key descending, no padding)."""
        block, at = self._row_in_block(row)
        keys = block.doc_codes[at].cpu().numpy()
        return self.doc_space.ids_of(keys[keys >= 0]).to_pylist()

    def save(self, path: str | os.PathLike, format: str = "trec", tag: str | None = None) -> None:
        """Write the run to ``path`` (``.gz``: gzip; ``"-"``: standard output).

        ``format="trec"``: ``qid Q0 docno rank score tag`` lines, each query's
        documents in ranking order with ranks from 1, scores written so that
        :meth:`from_trec` reads back the same values exactly (see
        :mod:`gpukit.io.trec_writer`); ``tag`` defaults to the run's name.
        """
        from gpukit.data.file_formats import save_run

        save_run(self, path, format, tag)

    def to_trec(self, tag: str | None = None) -> str:
        """The text :meth:`save` writes in TREC format, as a string."""
        from gpukit.data.file_formats import run_to_trec

        return run_to_trec(self, tag)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """The pytrec_eval / ranx shape ``{query_id: {doc_id: score}}``."""
        qids = self.query_ids.to_pylist()
        rankings: list[dict[str, float]] = [{} for _ in qids]
        for block in self.row_blocks():
            keys = block.doc_codes.cpu().numpy()
            valid = keys >= 0
            ids = iter(self.doc_space.ids_of(keys[valid]).to_pylist())  # row-major, as the loop below
            rows = range(len(qids)) if block.rows is None else block.rows.cpu().tolist()
            for row, row_valid, row_s in zip(rows, valid.tolist(), block.scores.cpu().tolist()):
                rankings[row] = {next(ids): s for ok, s in zip(row_valid, row_s) if ok}
        return dict(zip(qids, rankings))

    def __repr__(self) -> str:
        return f"Run({self.name!r}, queries={self.num_queries}, depth={self.depth}, device={self.device})"


def _dedup_and_rank(codes, score_t, dedup, names, d_space, source, line_of, rows_of, distinct_pairs=False) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply ``dedup`` to (R, K) rows in file order (``names``: their query
    ids, for errors) and put each row in ranking order. ``distinct_pairs``:
    no row can hold a document twice (the keys of one dict), nothing to check."""
    if distinct_pairs:
        pass
    elif dedup == "error":
        _check_no_duplicates(codes, names, d_space, source, line_of, rows_of)
    else:
        if dedup == "max":
            # Highest score first within equal codes, so the kept copy is the max.
            by_score = torch.sort(score_t.masked_fill(codes < 0, -torch.inf), dim=1, descending=True, stable=True).indices
            codes, score_t = codes.gather(1, by_score), score_t.gather(1, by_score)
            del by_score
        _sort_rows_inplace(codes, score_t)  # by key: the copies of a document become neighbours
        repeated = torch.zeros_like(codes, dtype=torch.bool)
        repeated[:, 1:] = adjacent_repeats(codes)
        if bool(repeated.any()):
            codes = codes.masked_fill(repeated, -1)
            codes, score_t, _ = _sort_rows(codes, score_t)
            width = int((codes >= 0).sum(1).max())
            codes, score_t = codes[:, :width].contiguous(), score_t[:, :width].contiguous()
    rank_rows_inplace(codes, score_t)
    return codes, score_t


def _block_layout(q_codes: np.ndarray, lengths: np.ndarray, d_codes: np.ndarray, scores: list) -> Iterator[tuple[np.ndarray, torch.Tensor, torch.Tensor]]:
    """(rows, codes, scores) blocks of the queries of each length class
    (:func:`length_classes`), rows ascending, each row in file order, padded
    (-1, 0) to the class's longest row: at most twice the lines in all.

    One stable sort of the lines by (class, query); ``scores`` is a
    one-element list, emptied once copied (to free the flat scores early).
    """
    classes = length_classes(lengths)
    n = len(q_codes)
    row_bits, query_bits = max(1, (n - 1).bit_length()), max(1, (len(lengths) - 1).bit_length())
    if 6 + query_bits + row_bits <= 64:  # classes < 64: one direct sort of (class, query, line) keys
        key = classes[q_codes].astype(np.uint64) << np.uint64(query_bits + row_bits)
        key |= q_codes.astype(np.uint64) << np.uint64(row_bits)
        key |= np.arange(n, dtype=np.uint64)
        key.sort()
        order = (key & np.uint64((1 << row_bits) - 1)).astype(np.int64)
        del key
    else:  # more lines and queries than one 64-bit key holds
        order = np.lexsort((np.arange(n), q_codes, classes[q_codes]))
    flat_scores = scores.pop()
    line_q = q_codes[order]
    # Place of each sorted line within its query: its distance from the query's first line.
    firsts = np.concatenate([np.zeros(1, np.int64), np.flatnonzero(line_q[1:] != line_q[:-1]) + 1])
    place = np.arange(n, dtype=np.int64)
    place -= np.repeat(firsts, np.diff(np.append(firsts, n)))
    del firsts
    class_counts = np.bincount(classes[line_q], minlength=int(classes.max(initial=0)) + 1)
    at = 0
    for c in np.flatnonzero(class_counts):
        lines = slice(at, at + int(class_counts[c]))
        at = lines.stop
        rows = np.flatnonzero(classes == c)
        width = int(lengths[rows].max())
        local = np.searchsorted(rows, line_q[lines])
        slot = local * width + place[lines]
        codes = np.full(len(rows) * width, -1, dtype=np.int64)
        codes[slot] = d_codes[order[lines]]
        block_scores = np.zeros(len(rows) * width, dtype=np.float64)
        block_scores[slot] = flat_scores[order[lines]]
        del local, slot
        yield rows.astype(np.int64), torch.from_numpy(codes.reshape(len(rows), width)), torch.from_numpy(block_scores.reshape(len(rows), width))


def _flat_rows(values: np.ndarray | list | ParsedScores) -> int:
    """Rows of a flat array, or of one wrapped in a one-element list, or of parsed scores."""
    return len(values[0]) if isinstance(values, list) else len(values)


class ParsedScores:
    """A run file's parsed score column, in file order, as the reader's chunks;
    a NaN is an error naming its line, raised when the chunk holding it is read."""

    def __init__(self, chunks: list[pa.Array], source: str, line_of: Callable[[int], int | None]):
        self._chunks = list(chunks)
        self._rows = sum(len(c) for c in self._chunks)
        self.source, self.line_of = source, line_of

    @staticmethod
    def _check(values: np.ndarray, first_row: int, source: str, line_of) -> None:
        nan = np.flatnonzero(np.isnan(values))
        if len(nan):
            raise InputFormatError(source, line_of(first_row + int(nan[0])), "score is NaN")

    def __len__(self) -> int:
        return self._rows

    def pieces(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, float64 values) of each chunk in order, NaN checked;
        each chunk is dropped once the next is asked for."""
        at = 0
        while self._chunks:
            values = numpy_values(self._chunks.pop(0)).astype(np.float64, copy=False)
            self._check(values, at, self.source, self.line_of)
            yield at, values
            at += len(values)
            del values

    def to_flat(self) -> np.ndarray:
        """Every row's score as one float64 array, NaN checked, filled chunk by
        chunk: each chunk is dropped once copied, so a full Arrow column and a
        full NumPy copy are never both alive."""
        out = np.empty(self._rows, dtype=np.float64)
        for at, values in self.pieces():
            out[at : at + len(values)] = values
        return out


def _grouped_layout(runs: CodeRuns, d_codes: list, scores: list) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """(Q, K) int64 keys (-1 padding), float64 scores, each row in file order,
    and the file row of each query's first line, for a file whose queries'
    lines are contiguous (``runs.each_code_once()``): :func:`_group_layout`
    of its runs."""
    return _group_layout(runs.starts, runs.codes.astype(np.int64, copy=False), runs.num_rows, len(runs.vocab), d_codes, scores)


def _group_layout(
    starts: np.ndarray, group_q: np.ndarray, n: int, n_queries: int, d_codes: list, scores: list
) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """:func:`_grouped_layout` of ``n`` rows in groups of one query each
    (group ``g`` starts at row ``starts[g]`` and holds query ``group_q[g]``,
    int64; every one of the ``n_queries`` queries has one group).

    ``d_codes`` is a one-element list of a flat array, emptied (the array
    freed) once laid out, before the scores' (Q, K) array is allocated:
    freed pages are reused instead of new ones faulted in (slow on some
    machines). ``scores`` is a one-element list of the parsed column (laid
    out chunk by chunk, no flat copy) or of a flat array. When every query has
    the same number of lines, a piece of the file is whole rows (and at most
    two partial ones) that are only permuted into query-code order.
    """
    lengths = np.diff(np.append(starts, n))
    width = int(lengths.max()) if n else 0
    first_lines = np.empty(n_queries, dtype=np.int64)
    first_lines[group_q] = starts
    if n and int(lengths.min()) == width:
        place = None
    else:
        # Flat slot of row i: its query's row start plus its place within the group.
        place = np.repeat(group_q * width - starts, lengths) + np.arange(n, dtype=np.int64)
    flat_codes = d_codes.pop()
    codes = _lay_out([(0, flat_codes)], n_queries, width, group_q, place, -1, np.int64)
    del flat_codes
    score_column = scores.pop()
    pieces = score_column.pieces() if isinstance(score_column, ParsedScores) else [(0, score_column)]
    del score_column
    score_np = _lay_out(pieces, n_queries, width, group_q, place, 0, np.float64)
    return torch.from_numpy(codes), torch.from_numpy(score_np), first_lines


def _lay_out(pieces, n_queries: int, width: int, group_q: np.ndarray, place: np.ndarray | None, fill, dtype) -> np.ndarray:
    """A (Q, K) array of the file's values, given as (first row, values)
    pieces in file order: row ``group_q[g]`` holds group ``g``'s lines, in
    file order (``place``: each line's flat slot, when groups differ in
    length; else group ``g`` is lines ``g * width`` to ``(g + 1) * width``)."""
    if place is not None:
        out = np.full((n_queries, width), fill, dtype=dtype)
        flat = out.reshape(-1)
        for at, values in pieces:
            flat[place[at : at + len(values)]] = values
        return out
    out = np.empty((n_queries, width), dtype=dtype)
    for at, values in pieces:
        end = at + len(values)
        first_whole, after_whole = -(-at // width), end // width
        if first_whole > after_whole:  # the piece lies inside one row
            out[group_q[at // width], at % width : at % width + len(values)] = values
            continue
        if at % width:  # the tail of a row begun in the previous piece
            out[group_q[first_whole - 1], at % width :] = values[: first_whole * width - at]
        if after_whole > first_whole:
            whole = values[first_whole * width - at : after_whole * width - at]
            out[group_q[first_whole:after_whole]] = whole.reshape(-1, width)
        if end % width:  # the head of a row that the next piece ends
            out[group_q[after_whole], : end % width] = values[after_whole * width - at :]
    return out


def _padded_layout(q_codes: np.ndarray, n_queries: int, d_codes: np.ndarray, scores: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """(Q, K) int64 codes (-1 padding) and float64 scores, each row in file order.

    A grouped file (each query's lines contiguous, the usual case) needs no
    sort; when every query also has the same number of lines the flat arrays
    are the rows already and are only permuted into query-code order.
    Otherwise rows are ordered by one direct sort of (query code, line) keys.
    """
    n = len(q_codes)
    q = q_codes
    change = np.flatnonzero(q[1:] != q[:-1]) + 1 if n else np.zeros(0, np.int64)
    if len(change) == n_queries - 1:
        starts = np.concatenate([np.zeros(1, np.int64), change])
        codes, score_t, _ = _group_layout(starts, q[starts].astype(np.int64), n, n_queries, [d_codes], [scores])
        return codes, score_t
    rowbits = max(1, (n - 1).bit_length())
    packed = q.astype(np.uint64) << np.uint64(rowbits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    order = (packed & np.uint64((1 << rowbits) - 1)).astype(np.int64)
    q_sorted = (packed >> np.uint64(rowbits)).astype(np.int64)
    del packed
    changes = np.flatnonzero(q_sorted[1:] != q_sorted[:-1]) + 1
    starts = np.concatenate([np.zeros(1, np.int64), changes])
    lengths = np.diff(np.append(starts, n))
    width = int(lengths.max()) if n else 0
    flat = q_sorted * width + (np.arange(n, dtype=np.int64) - np.repeat(starts, lengths))
    del q_sorted
    codes = np.full(n_queries * width, -1, dtype=np.int64)
    score_np = np.zeros(n_queries * width, dtype=np.float64)
    codes[flat] = d_codes[order]
    score_np[flat] = scores[order]
    return torch.from_numpy(codes.reshape(n_queries, width)), torch.from_numpy(score_np.reshape(n_queries, width))


#: Elements per slice of rows in row-wise sorts: bounds the sort's temporaries
#: (values and int64 indices) and keeps each slice cache-sized on CPU.
ROW_SLICE_ELEMENTS = 1 << 22


#: Elements per slice of the host's duplicate check (2 MiB of int64 keys).
CHECK_SLICE_ELEMENTS = 1 << 18


def row_slices(n_rows: int, width: int, elements: int | None = None):
    """Slices of rows holding about ``elements`` (default ``ROW_SLICE_ELEMENTS``) elements each."""
    step = max(1, (elements or ROW_SLICE_ELEMENTS) // max(width, 1))
    for lo in range(0, n_rows, step):
        yield slice(lo, min(lo + step, n_rows))


def _sort_rows_inplace(codes: torch.Tensor, scores: torch.Tensor) -> None:
    """``_sort_rows`` on tensors this module owns, slice by slice, in place."""
    for rows in row_slices(*codes.shape):
        sorted_codes, perm = torch.sort(codes[rows], dim=1, descending=True, stable=True)
        scores[rows] = scores[rows].gather(1, perm)
        codes[rows] = sorted_codes
        del sorted_codes, perm


def unranked_rows(codes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """(R,) indices of the rows not in ranking order: some adjacent pair is
    not strictly decreasing in score (a tie or an inversion), or padding
    precedes a document. Rows in order need no sort at all."""
    if codes.shape[1] < 2:
        return torch.zeros(0, dtype=torch.int64, device=codes.device)
    if codes.device.type == "cpu" and scores.dtype in _HOST_SCORE_DTYPES and not torch.compiler.is_compiling():
        # The same tests in NumPy, several times cheaper per op on a host run's rows.
        return torch.from_numpy(np.flatnonzero(_out_of_order(codes.numpy(), scores.numpy())).astype(np.int64, copy=False))
    return torch.nonzero(_out_of_order(codes, scores)).flatten()


#: Score dtypes NumPy holds (bfloat16 has no NumPy dtype).
_HOST_SCORE_DTYPES = (torch.float64, torch.float32, torch.float16)


def _out_of_order(codes, scores):
    """(R,) bool per row of at least two entries: not in ranking order (see
    :func:`unranked_rows`). The same operators on NumPy arrays or torch tensors."""
    doc = codes >= 0
    later = doc[:, 1:]
    in_order = (later & (scores[:, 1:] < scores[:, :-1])) | ~later
    in_order &= doc[:, :-1] | ~later
    return ~in_order.all(1)


def adjacent_repeats(keys):
    """(R, K - 1) bool: entry ``j + 1`` of a key-sorted row repeats entry ``j``
    (padding -1 never counts). The same operators on NumPy arrays or torch tensors."""
    return (keys[:, 1:] == keys[:, :-1]) & (keys[:, 1:] >= 0)


def ranking_permutation(codes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Per row, the permutation into ranking order: score descending, ties by
    key (docno) descending, padding last. Two stable sorts: by key, then by score."""
    return _permutation_after_key_sort(scores, *torch.sort(codes, dim=1, descending=True, stable=True))


def _permutation_after_key_sort(scores: torch.Tensor, keys: torch.Tensor, by_key: torch.Tensor) -> torch.Tensor:
    """:func:`ranking_permutation` given the rows' keys sorted descending (stable) and that sort's indices."""
    keyed = scores.gather(1, by_key).masked_fill(keys < 0, -torch.inf)
    by_score = torch.sort(keyed, dim=1, descending=True, stable=True).indices
    return by_key.gather(1, by_score)


def _syncs_are_cheap(device: torch.device) -> bool:
    """On the CPU a host read of a tensor costs nothing special (no device sync)."""
    return device.type == "cpu"


def _rank_rows_flagging_repeats(codes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Every row put in ranking order in place, with no host sync (fixed
    shapes: all rows are permuted, not just those out of order); returns a
    0-dim bool tensor, whether some row holds a document twice (found on the
    key sort the ranking does anyway)."""
    repeated = torch.zeros((), dtype=torch.bool, device=codes.device)
    for rows in row_slices(*codes.shape):
        c, s = codes[rows], scores[rows]
        keys, by_key = torch.sort(c, dim=1, descending=True, stable=True)
        repeated |= adjacent_repeats(keys).any()
        perm = _permutation_after_key_sort(s, keys, by_key)
        c.copy_(c.gather(1, perm))
        s.copy_(s.gather(1, perm))
    return repeated


def rank_rows_inplace(codes: torch.Tensor, scores: torch.Tensor) -> None:
    """Put every row of a run in ranking order, sorting only the rows that are
    not, and of a row whose scores only tie (never increase) only its tied
    entries (:func:`order_ties_inplace`)."""
    for rows in row_slices(*codes.shape):
        c, s = codes[rows], scores[rows]
        bad = unranked_rows(c, s)
        if bad.numel():
            cb, sb = c[bad], s[bad]
            doc = cb >= 0
            # An increase, or padding before a document: the row needs the full sort.
            disorder = (doc[:, 1:] & (sb[:, 1:] > sb[:, :-1])) | (doc[:, 1:] & ~doc[:, :-1])
            full = disorder.any(1)
            if bool(full.all()):
                perm = ranking_permutation(cb, sb)
                cb, sb = cb.gather(1, perm), sb.gather(1, perm)
            else:
                if bool(full.any()):
                    perm = ranking_permutation(cb[full], sb[full])
                    cb[full], sb[full] = cb[full].gather(1, perm), sb[full].gather(1, perm)
                ties = ~full
                ct, st = cb[ties], sb[ties]
                order_ties_inplace(ct, st)
                cb[ties], sb[ties] = ct, st
            c[bad], s[bad] = cb, sb
        del bad


def order_ties_inplace(codes: torch.Tensor, scores: torch.Tensor) -> None:
    """Rows whose document scores never increase (padding last): order each
    run of equal scores by key descending, as trec_eval breaks ties by docno.

    The same result as :func:`ranking_permutation` on such rows (both stable
    sorts leave a tie group where it is and only reorder it by key), at the
    cost of sorting the tied entries alone, usually a few percent of a run.
    """
    tie = (scores[:, 1:] == scores[:, :-1]) & (codes[:, 1:] >= 0)  # padding after a document is in order already
    if not bool(tie.any()):
        return
    member = torch.zeros_like(codes, dtype=torch.bool)
    member[:, 1:] |= tie
    member[:, :-1] |= tie
    follows = torch.zeros_like(member)
    follows[:, 1:] = tie
    group = torch.cumsum((member & ~follows).flatten(), 0)  # a group number per entry, rising along the rows
    at = torch.nonzero(member.flatten()).flatten()  # ascending: each group's entries are contiguous
    flat_codes, flat_scores = codes.view(-1), scores.view(-1)
    by_key = torch.sort(flat_codes[at], descending=True, stable=True).indices
    perm = by_key[torch.sort(group[at][by_key], stable=True).indices]
    source = at[perm]
    flat_codes[at], flat_scores[at] = flat_codes[source], flat_scores[source]


def _sort_rows(codes: torch.Tensor, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sort each row by doc code descending (stable; padding -1 goes last)."""
    sorted_codes, perm = torch.sort(codes, dim=1, descending=True, stable=True)
    return sorted_codes, scores.gather(1, perm), perm


def _check_no_duplicates(
    codes: torch.Tensor,
    query_ids: pa.Array,
    doc_space: DocSpace,
    source: str,
    line_of: Callable[[int], int | None] | None,
    rows_of: Callable[[int, int], list[int]] | None,
) -> None:
    """Raise on a document repeated within a row (rows in any order).

    ``rows_of(q, code)`` gives the input rows of that pair in file order; it is
    called only to name the lines of a duplicate in the error message.
    """
    if codes.shape[1] < 2:
        return
    on_host = codes.device.type == "cpu"
    buffer = None
    # On the host: small slices sorted in one reused buffer (a row sort needs
    # no more), so that the check takes no fresh memory, slow to fault in.
    for rows in row_slices(*codes.shape, CHECK_SLICE_ELEMENTS if on_host else None):
        if on_host:  # values only: NumPy's row sort and tests are several times faster here
            block = codes[rows].numpy()
            if buffer is None:
                buffer = np.empty_like(block)
            keys = buffer[: len(block)]
            np.copyto(keys, block)
            keys.sort(axis=1)
        else:
            keys = torch.sort(codes[rows], dim=1).values
        repeated = adjacent_repeats(keys)
        if bool(repeated.any()):
            q, k = (int(x) for x in torch.nonzero(torch.as_tensor(repeated))[0])
            _raise_duplicate(rows.start + q, int(keys[q, k + 1]), query_ids, doc_space, source, line_of, rows_of)


def _raise_duplicate(q, code, query_ids, doc_space, source, line_of, rows_of) -> None:
    qid = query_ids[q].as_py()
    did = doc_space.ids_of(np.array([code]))[0].as_py()
    if line_of is not None and rows_of is not None:
        lines = sorted(line_of(int(row)) or 0 for row in rows_of(q, code))
        raise InputFormatError(
            source, lines[1], f"document {echo(did)} retrieved twice for query {echo(qid)} (lines {lines[0]} and {lines[1]}); pass dedup='max' or 'first' to keep one"
        )
    raise InputFormatError(source, None, f"document {echo(did)} retrieved twice for query {echo(qid)}")
