"""``{query_id: {doc_id: value}}`` mappings flattened in one pass.

The pytrec_eval / ranx / ir_measures / BEIR shape of a run (values are
scores) or of qrels (values are grades). Flattening builds, without a
per-pair Python statement: the query ids in the mapping's order, the number
of entries of each, the document ids as one Arrow string array and the values
as one NumPy array (``itertools.chain`` over the inner mappings, then one joined buffer (ASCII
ids) or ``pa.array``, and ``array.array`` of the values).

Because every query's documents are the keys of one mapping, a (query,
document) pair cannot repeat when the keys are strings: :attr:`FlatMapping.distinct_pairs`
says so, and builders skip their duplicate check. Non-string keys are an
error (``strict``, pytrec_eval's rule) or read as ``str(key)`` (then ``1`` and
``"1"`` are the same id, and the duplicate check runs).
"""
from __future__ import annotations

import array
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from operator import methodcaller

import numpy as np
import pyarrow as pa

from gpukit.errors import InputFormatError, UsageTypeError, echo
from gpukit.io.string_coding import string_codes

_VALUES = methodcaller("values")


@dataclass(frozen=True)
class FlatMapping:
    """A nested mapping as parallel flat arrays, queries in mapping order.

    Attributes:
        query_ids: ``pa.StringArray`` of the queries with at least one entry
            (distinct unless non-string keys were read as ``str``).
        counts: (Q,) int64 entries of each query.
        doc_ids: ``pa.StringArray``, every query's document ids in turn.
        values: the values, aligned with ``doc_ids``: float64, or int64
            (grades that are all integers).
        distinct_pairs: no (query, document) pair is repeated (keys were strings).
    """

    query_ids: pa.Array
    counts: np.ndarray
    doc_ids: pa.Array
    values: np.ndarray
    distinct_pairs: bool

    def sorted_query_codes(self) -> tuple[np.ndarray, pa.Array]:
        """((N,) int64 code of each entry's query, the distinct query ids byte-wise
        sorted): one sort of the Q query ids, not of the N entries."""
        codes, vocab = string_codes(self.query_ids)
        return np.repeat(codes.astype(np.int64, copy=False), self.counts), vocab

    def where(self, flat: int) -> tuple[str, str]:
        """(query id, doc id) of entry ``flat``, for an error message."""
        row = int(np.searchsorted(np.cumsum(self.counts), flat, side="right"))
        return self.query_ids[row].as_py(), self.doc_ids[flat].as_py()


def flatten(mapping: Mapping, what: str, *, strict: bool, grades: bool = False) -> FlatMapping:
    """``mapping`` (``{query_id: {doc_id: value}}``) as a :class:`FlatMapping`.

    ``strict``: query and document ids must be ``str`` and values numbers
    (``int``, ``float``, ``bool`` or NumPy scalars), else UsageTypeError
    naming ``what``; otherwise ids are read as ``str(id)`` and values as
    ``float(value)`` (``"1.5"`` too). Values are float64, or with ``grades``
    int64 when every one is an integer. Queries with an empty inner mapping
    are left out.
    """
    if not isinstance(mapping, Mapping):
        raise UsageTypeError(f"{what}: expected a mapping {{query_id: {{doc_id: value}}}}, got {type(mapping).__name__}")
    qids = list(mapping.keys())
    inners = list(mapping.values())
    for qid, inner in zip(qids, inners):
        if not isinstance(inner, Mapping):
            raise UsageTypeError(f"{what}: expected a mapping {{doc_id: value}} for query {echo(str(qid))}, got {type(inner).__name__}")
    counts = np.fromiter(map(len, inners), np.int64, len(inners))
    if not counts.all():  # empty rankings / judgment sets hold no pair
        kept = np.flatnonzero(counts)
        qids, inners, counts = [qids[i] for i in kept], [inners[i] for i in kept], counts[kept]
    docs = list(chain.from_iterable(inners))
    query_ids, q_str = _strings(qids, what, "query ids", strict)
    doc_ids, d_str = _strings(docs, what, "document ids", strict)
    values = _numbers(list(chain.from_iterable(map(_VALUES, inners))), what, strict, grades)
    return FlatMapping(query_ids, counts, doc_ids, values, distinct_pairs=q_str and d_str)


def _strings(ids: list, what: str, kind: str, strict: bool) -> tuple[pa.Array, bool]:
    """(ids as a string array, whether they were all ``str`` already)."""
    ascii_ids = _ascii_string_array(ids)
    if ascii_ids is not None:
        return ascii_ids, True
    try:
        return pa.array(ids, pa.string()), True
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        if strict:
            bad = next(i for i in ids if not isinstance(i, str))
            raise UsageTypeError(f"{what}: {kind} must be strings, got {type(bad).__name__} {bad!r}") from None
    return pa.array([str(i) for i in ids], pa.string()), False


def _ascii_string_array(ids: list) -> pa.Array | None:
    """``ids`` as a string array built from one joined buffer, or None when an id
    is not a ``str``, not ASCII, or the bytes pass int32 offsets.

    Three times faster than ``pa.array(ids)`` on millions of short ids, and it
    does not make pyarrow import pandas (about 0.3 s on a first call). With
    ASCII only, characters are bytes, so the offsets are the cumulated
    ``len`` of the ids; the joined text's byte count checks that.
    """
    try:
        data = "".join(ids).encode()
    except TypeError:  # a non-str id: the general path reports or converts it
        return None
    lengths = np.fromiter(map(len, ids), np.int64, len(ids))
    if len(data) != int(lengths.sum()) or len(data) >= 2**31:
        return None
    offsets = np.zeros(len(ids) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.StringArray.from_buffers(len(ids), pa.py_buffer(offsets), pa.py_buffer(data))


def _numbers(values: list, what: str, strict: bool, grades: bool) -> np.ndarray:
    """The values as one array: int64 grades where every one is an integer (else
    float64, for the caller's integrality check), float64 scores. Python's
    ``array`` reads a list of numbers in one C loop and rejects text and
    ``None`` (its TypeError is the type check)."""
    if grades:
        try:
            return np.frombuffer(array.array("q", values), dtype=np.int64)
        except (TypeError, OverflowError):
            pass  # floats (1.0 is a grade too), or the error below
    try:
        return np.frombuffer(array.array("d", values), dtype=np.float64)
    except (TypeError, OverflowError):
        if strict:
            bad = next(v for v in values if not _one_double(v))
            shown = repr(bad) if len(repr(bad)) <= 60 else repr(bad)[:57] + "..."
            raise UsageTypeError(f"{what}: values must be numbers, got {type(bad).__name__} {shown}") from None
    try:  # not strict: anything float() reads ("1.5", Decimal)
        return np.array([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputFormatError(what, None, f"a value is not a number ({exc})") from None


def _one_double(value) -> bool:
    """Whether ``array("d")`` takes ``value`` (the strict rule for one value)."""
    try:
        array.array("d", [value])
    except (TypeError, OverflowError):
        return False
    return True
