"""Changing judgments: what moved between two versions of the qrels, and what it did to a run's scores.

:func:`judgment_changes` lists every judged (query, document) pair whose
grade differs between an old and a new qrels -- added (judged only in the
new one), removed (judged only in the old one), regraded (both, other grade)
-- by one vectorised Arrow join, no Python loop over judgments.

:func:`qrels_diff` evaluates one run against both versions and reports, per
measure, both means, the change of the mean and the per-query change, next to
the judgment changes of each query. The run is the same on both sides, so
every movement comes from the judgments; a query whose value moved although
its own judgments did not is listed apart (``moved_without_own_changes``):
that happens only through measures that read other queries' judgments
(``Hole@k``'s annotated corpus) or through the topic set (a query added to or
removed from the qrels).

Conventions: a grade is an integer, negative = in the pool but unjudged (it is
still a judgment line: going from -1 to 1 is a regrading). The topic sets are
each qrels' own (``convention`` and ``complete`` as in ``gpukit.evaluate``);
a query on one side only has NaN on the other and no per-query change.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import UsageTypeError
from gpukit.measures import MeasureLike, parse_measures
from gpukit.report import Report

#: What a judgment change is, per row of :func:`judgment_changes`.
KINDS = ("added", "removed", "regraded")


def _pairs(qrels: Qrels, grade_name: str) -> pa.Table:
    """(query_id, doc_id, grade) of every judgment, as strings and int64."""
    return pa.table({
        "query_id": qrels.query_ids.take(pa.array(qrels.query_codes)),
        "doc_id": qrels.doc_space.ids_of(qrels.doc_codes),
        grade_name: pa.array(qrels.grades, type=pa.int64()),
    })


def judgment_changes(old: Qrels, new: Qrels) -> pa.Table:
    """The judged pairs whose grade differs, as an Arrow table.

    Columns: ``query_id``, ``doc_id``, ``old_grade`` and ``new_grade`` (null
    where the pair is not judged on that side) and ``kind`` (``added``,
    ``removed``, ``regraded``); rows sorted by query id, then doc id
    (byte-wise). Pairs with the same grade on both sides are left out.
    """
    for name, value in (("old", old), ("new", new)):
        if not isinstance(value, Qrels):
            raise UsageTypeError(f"{name} must be a gpukit.Qrels, got {type(value).__name__}")
    joined = _pairs(old, "old_grade").join(_pairs(new, "new_grade"), keys=["query_id", "doc_id"], join_type="full outer")
    og, ng = joined["old_grade"], joined["new_grade"]
    differs = pc.fill_null(pc.not_equal(og, ng), True)  # a null on one side: added or removed
    changed = joined.filter(differs)
    og, ng = changed["old_grade"], changed["new_grade"]
    kind = pc.if_else(pc.is_null(og), "added", pc.if_else(pc.is_null(ng), "removed", "regraded"))
    changed = changed.append_column("kind", kind)
    # Arrow orders strings by their bytes: the byte-wise order of every other gpukit listing.
    return changed.sort_by([("query_id", "ascending"), ("doc_id", "ascending")]).select(
        ["query_id", "doc_id", "old_grade", "new_grade", "kind"]
    )


def _per_query_counts(changes: pa.Table) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for q, kind in zip(changes["query_id"].to_pylist(), changes["kind"].to_pylist()):
        out.setdefault(q, dict.fromkeys(KINDS, 0))[kind] += 1
    return out


@dataclass(frozen=True)
class MeasureShift:
    """One measure of one run under the old and the new judgments.

    ``per_query`` maps every query of either topic set to (old value, new
    value, new - old); NaN where the query is not evaluated on a side (not in
    that qrels, or omitted under the gpukit convention).
    """

    measure: str
    old_mean: float
    new_mean: float
    old_evaluated: int
    new_evaluated: int
    per_query: dict[str, tuple[float, float, float]]

    @property
    def delta(self) -> float:
        """new mean - old mean."""
        return self.new_mean - self.old_mean

    def changed_queries(self) -> list[str]:
        """Queries whose value differs (or is defined on one side only)."""
        return [q for q, (a, b, _) in self.per_query.items() if not (a == b or (math.isnan(a) and math.isnan(b)))]


@dataclass(frozen=True)
class QrelsDiff:
    """What :func:`qrels_diff` found: the judgment changes and, with a run, each measure's shift."""

    changes: pa.Table
    old_queries: list[str]
    new_queries: list[str]
    shifts: dict[str, MeasureShift]
    run_name: str | None = None

    @property
    def per_query_changes(self) -> dict[str, dict[str, int]]:
        """{query: {"added": n, "removed": n, "regraded": n}} for queries with a change."""
        return _per_query_counts(self.changes)

    def moved_without_own_changes(self, measure: str) -> list[str]:
        """Queries judged on both sides, with unchanged judgments, whose value moved anyway."""
        own = self.per_query_changes
        both = set(self.old_queries) & set(self.new_queries)
        return [q for q in self.shifts[measure].changed_queries() if q in both and q not in own]

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        totals = dict.fromkeys(KINDS, 0)
        for counts in self.per_query_changes.values():
            for k in KINDS:
                totals[k] += counts[k]
        old, new = set(self.old_queries), set(self.new_queries)
        out: dict[str, Any] = {
            "judgments": {
                **totals,
                "queries_changed": len(self.per_query_changes),
                "queries_added": sorted(new - old, key=str.encode),
                "queries_removed": sorted(old - new, key=str.encode),
            },
            "run": self.run_name,
            "measures": {},
        }
        if per_query:
            out["judgments"]["changes"] = [
                {k: row[k] for k in ("query_id", "doc_id", "old_grade", "new_grade", "kind")} for row in self.changes.to_pylist()
            ]
        for name, s in self.shifts.items():
            entry: dict[str, Any] = {
                "old_mean": _json(s.old_mean), "new_mean": _json(s.new_mean), "delta": _json(s.delta),
                "old_evaluated": s.old_evaluated, "new_evaluated": s.new_evaluated,
                "queries_moved": len(s.changed_queries()),
                "moved_without_own_changes": self.moved_without_own_changes(name),
            }
            if per_query:
                entry["per_query"] = {q: [_json(a), _json(b), _json(d)] for q, (a, b, d) in s.per_query.items()}
            out["measures"][name] = entry
        return out

    def to_text(self, per_query: bool = False) -> str:
        d = self.to_dict()
        j = d["judgments"]
        lines = [
            f"judgments: {j['added']} added, {j['removed']} removed, {j['regraded']} regraded, "
            f"in {j['queries_changed']} queries; queries added: {len(j['queries_added'])}, removed: {len(j['queries_removed'])}",
        ]
        if per_query:
            for row in self.changes.to_pylist():
                lines.append(f"  {row['query_id']}\t{row['doc_id']}\t{_grade(row['old_grade'])} -> {_grade(row['new_grade'])}\t{row['kind']}")
        if self.shifts:
            lines.append(f"run: {self.run_name} (the same run on both sides: every change below comes from the judgments)")
            lines.append(f"{'measure':<16}{'old':>9}{'new':>9}{'delta':>9}  queries moved (without own judgment changes)")
            for name, s in self.shifts.items():
                lonely = self.moved_without_own_changes(name)
                lines.append(
                    f"{name:<16}{s.old_mean:>9.4f}{s.new_mean:>9.4f}{s.delta:>+9.4f}  {len(s.changed_queries())} ({len(lonely)})"
                )
                if per_query:
                    for q in s.changed_queries():
                        a, b, delta = s.per_query[q]
                        lines.append(f"  {q}\t{a:.4f} -> {b:.4f}\t{delta:+.4f}")
        return "\n".join(lines)


def _grade(g: int | None) -> str:
    return "-" if g is None else str(g)


def _json(v: float) -> float | None:
    return None if math.isnan(v) else v


def _shift(name: str, old: Report, new: Report) -> MeasureShift:
    a, b = old[name], new[name]
    va = dict(zip(old.query_ids, a.per_query.tolist()))
    vb = dict(zip(new.query_ids, b.per_query.tolist()))
    nan = float("nan")
    queries = sorted(set(va) | set(vb), key=str.encode)
    per_query = {q: (va.get(q, nan), vb.get(q, nan), vb.get(q, nan) - va.get(q, nan)) for q in queries}
    return MeasureShift(name, a.mean, b.mean, a.evaluated, b.evaluated, per_query)


def qrels_diff(
    old: Qrels,
    new: Qrels,
    run: Run | None = None,
    measures: Iterable[MeasureLike] | MeasureLike = ("nDCG@10", "AP", "P@10", "R@100"),
    **evaluate_options: Any,
) -> QrelsDiff:
    """Compare two versions of the judgments, and with ``run`` what they do to its scores.

    Args:
        old, new: the two qrels.
        run: scored against both (``None``: the judgment changes only).
        measures: measure names (as ``gpukit.evaluate``).
        evaluate_options: ``convention``, ``complete``, ``max_depth``,
            ``relevance_level``, ``device``... passed to ``gpukit.evaluate``
            for both sides alike.

    Returns:
        A :class:`QrelsDiff`: ``changes`` (added / removed / regraded pairs),
        both topic sets, and per measure a :class:`MeasureShift`.
    """
    from gpukit.evaluation import evaluate

    changes = judgment_changes(old, new)
    shifts: dict[str, MeasureShift] = {}
    if run is not None:
        if not isinstance(run, Run):
            raise UsageTypeError(f"run must be a gpukit.Run, got {type(run).__name__}")
        parsed = parse_measures(measures, rel=evaluate_options.get("relevance_level"))
        old_report = evaluate(old, run, parsed, **evaluate_options)
        new_report = evaluate(new, run, parsed, **evaluate_options)
        shifts = {str(m): _shift(str(m), old_report, new_report) for m in parsed}
    return QrelsDiff(changes, old.query_id_list(), new.query_id_list(), shifts, None if run is None else run.name)
