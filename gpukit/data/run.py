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
from typing import Literal, Mapping, Sequence

import numpy as np
import pyarrow as pa
import torch

from gpukit.data.row_ranking import (
    _check_no_duplicates,
    _sort_rows,
    _sort_rows_inplace,
    adjacent_repeats,
    rank_rows_inplace,
)
from gpukit.data.run_layout import (
    ParsedScores,
    RunBlock,
    _block_layout,
    _deferred,
    _flat_rows,
    _group_layout,
    _listed,
    _scores_on_codes_device,
    host_empty,
    lopsided,
    query_groups,
)
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import InputFormatError, UsageError, echo
from gpukit.io.arrow_numpy import arrow_indices, pandas_columns, string_array
from gpukit.io.corpus_keys import CorpusKeys
from gpukit.io.doc_space import DocSpace, doc_keys
from gpukit.io.nested_mapping import FlatMapping, flatten
from gpukit.io.string_coding import CodeRuns, string_codes, string_codes_or_runs
from gpukit.io.text_table import Column, ParsedTable, read_table

Dedup = Literal["error", "max", "first"]


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
        d_codes, d_space = doc_keys(table.columns.pop("doc_id"), radix=True, empty=host_empty)
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
        from gpukit.data.run_from_topk import topk_rows

        return cls(*topk_rows(scores, doc_indices, query_ids, doc_ids, name), name)

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
        groups = query_groups(q_codes, len(q_vocab), n_rows)
        if groups is not None:
            starts, group_q = groups
            if not lopsided(len(q_vocab), int(np.diff(np.append(starts, n_rows)).max(initial=0)), n_rows):
                # Each query's lines contiguous (the usual file): laid out without a sort.
                codes, score_t, first_lines = _group_layout(starts, group_q, n_rows, len(q_vocab), _listed(d_codes), _listed(scores))

                def rows_of(q: int, code: int) -> list[int]:
                    # Only on error (rows still in file order): the file rows of that pair.
                    return (int(first_lines[q]) + np.flatnonzero(codes[q].numpy() == code)[:2]).tolist()

                codes, score_t = _dedup_and_rank(codes, score_t, dedup, q_vocab, d_space, source, line_of, rows_of, distinct_pairs)
                return cls(q_vocab, d_space, codes, score_t, name)
        if isinstance(q_codes, CodeRuns):
            q_codes = q_codes.per_row()
        d_codes = d_codes.pop() if isinstance(d_codes, list) else d_codes
        flat_scores = scores.pop() if isinstance(scores, list) else scores
        if isinstance(flat_scores, ParsedScores):
            flat_scores = flat_scores.to_flat()
        del scores

        def rows_of(q: int, code: int) -> list[int]:
            # Only on error: the file rows of that (query, doc) pair, in file order.
            return np.flatnonzero((q_codes == q) & (d_codes == code))[:2].tolist()

        lengths = np.bincount(q_codes, minlength=len(q_vocab))
        # One (Q, K) block unless padding to the deepest ranking would be lopsided.
        one_block = not lopsided(len(q_vocab), int(lengths.max(initial=0)), len(q_codes))
        blocks = []
        for rows, codes, score_t in _block_layout(q_codes, lengths, d_codes, [flat_scores], one_block):
            names = q_vocab if one_block else q_vocab.take(arrow_indices(rows))

            def block_rows_of(q: int, code: int, rows=rows) -> list[int]:
                return rows_of(int(rows[q]), code)

            codes, score_t = _dedup_and_rank(codes, score_t, dedup, names, d_space, source, line_of, block_rows_of, distinct_pairs)
            if one_block:
                return cls(q_vocab, d_space, codes, score_t, name)
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
        dev = resolve_device(device, self.device)
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


