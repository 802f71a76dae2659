"""Reports: every score travels with the conventions that produced it."""
from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from gpukit.conventions import TIE_BREAK, Convention
from gpukit.errors import GpukitError, UsageError
from gpukit.measures import Measure, MeasureLike, parse_measure


#: describe_conventions' answers: every evaluation describes the same few
#: measures again, ~20 string operations each (a new dict is handed out per call).
_DESCRIBED: dict[tuple, dict[str, str]] = {}
_DESCRIBED_MAX = 1024


def describe_conventions(m: Measure, conv: Convention, *, max_depth: int | None, score_dtype: torch.dtype) -> dict[str, str]:
    """The conventions of one measure, in words, for the report (from its family record)."""
    key = (m, conv, max_depth, score_dtype)
    words = _DESCRIBED.get(key)
    if words is None:
        if len(_DESCRIBED) >= _DESCRIBED_MAX:
            _DESCRIBED.clear()
        words = _DESCRIBED[key] = _describe(m, conv, max_depth=max_depth, score_dtype=score_dtype)
    return dict(words)


def _describe(m: Measure, conv: Convention, *, max_depth: int | None, score_dtype: torch.dtype) -> dict[str, str]:
    """:func:`describe_conventions`, worded afresh."""
    fam = m.spec
    out: dict[str, str] = {"convention": conv.name, "definition": fam.definition}
    if fam.describe is not None:
        out.update(fam.describe(m))
    for p in fam.params:
        if p.name not in ("rel", "gain"):
            out[p.name] = f"{p.show(m.param(p.name))} ({p.doc})"
    if m.judged_only:
        out["judged_only"] = "unjudged documents (not in the qrels, or graded < 0) removed from each ranking first (trec_eval -J)"
    out["cutoff"] = str(m.cutoff) if m.cutoff is not None else "full ranking"
    if max_depth is not None:
        out["max_depth"] = str(max_depth)
    out["tie_break"] = TIE_BREAK
    out["topics"] = conv.topic_rule()
    out["defined_when"] = fam.defined_when or "always"
    out["zero_rule"] = conv.zero_rule() if fam.defined_when else "always defined"
    out["aggregation"] = AGGREGATION_WORDS[fam.aggregate_under(conv)]
    out["score_precision"] = str(score_dtype).replace("torch.", "")
    return out


#: The reported value of each aggregate, in words.
AGGREGATION_WORDS = {
    "mean": "unweighted mean over evaluated queries",
    "sum": "sum over queries (trec_eval count measure)",
    "gmean": "geometric mean over evaluated queries, values floored at 1e-5 (trec_eval gm_*)",
}

#: trec_eval's floor for geometric means (MIN_GEO_MEAN in trec_eval.h).
MIN_GEO_MEAN = 1e-5


def require_pandas(who: str) -> Any:
    """pandas, imported on demand (an optional dependency: ``pip install 'gpukit[pandas]'``)."""
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - exercised with pandas hidden
        raise GpukitError(f"{who} needs pandas: pip install 'gpukit[pandas]'") from exc
    return pandas


class Summary(NamedTuple):
    """One measure's reported value: ``mean`` is the aggregate (a sum for counts)."""

    name: str
    mean: float
    evaluated: int
    omitted: int
    aggregate: str
    conventions: dict[str, str]


#: Measures shown by ``repr`` before "+N more".
_REPR_MEASURES = 6


class ResultSet:
    """What every gpukit report shares: :class:`Report` (one run) and the
    streaming evaluator's report.

    Subclasses give :meth:`_header` (run, convention, topic counts) and
    :meth:`summaries`; this class turns them into the common JSON object
    (:meth:`to_dict`, identical keys for every report; NaN is written as
    null, so the JSON is valid), ``means()``, ``float(report)`` for a
    one-measure report, a short ``repr``, an HTML table for notebooks and a
    pandas DataFrame.
    """

    def _header(self) -> dict[str, Any]:
        raise NotImplementedError

    def summaries(self) -> list[Summary]:
        """Every measure's value, counts, aggregate and conventions, in order."""
        raise NotImplementedError

    def _per_query_dict(self) -> dict[str, dict[str, float]]:
        raise UsageError(f"{type(self).__name__} keeps aggregates only, no per-query values")

    def means(self) -> dict[str, float]:
        return {s.name: s.mean for s in self.summaries()}

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        """The ``--format json`` object: ``run``, ``convention``, ``topics``,
        ``queries_not_in_run``, ``run_queries_not_in_qrels``, ``measures``
        (name -> mean, evaluated, omitted, aggregate, conventions) and, with
        ``per_query``, ``per_query`` ({query: {measure: value}})."""
        out = dict(self._header())
        out["measures"] = {
            s.name: {
                "mean": _json_float(s.mean),
                "evaluated": s.evaluated,
                "omitted": s.omitted,
                "aggregate": s.aggregate,
                "conventions": s.conventions,
            }
            for s in self.summaries()
        }
        if per_query:
            out["per_query"] = self._per_query_dict()
        return out

    def to_json(self, per_query: bool = False) -> str:
        return json.dumps(self.to_dict(per_query), indent=2, allow_nan=False)

    def to_markdown(self, per_query: bool = False, digits: int = 4) -> str:
        """A GFM pipe table (run, then a column per measure) and the conventions;
        ``per_query`` adds a table of per-query values. See :mod:`gpukit.report_markup`."""
        from gpukit.report_markup import reports_markdown

        return reports_markdown([self], per_query, digits)

    def to_latex(self, per_query: bool = False, digits: int = 4) -> str:
        """:meth:`to_markdown`'s tables as booktabs ``tabular`` environments, names escaped."""
        from gpukit.report_markup import reports_latex

        return reports_latex([self], per_query, digits)

    def __float__(self) -> float:
        rows = self.summaries()
        if len(rows) != 1:
            raise UsageError(f"float() needs a report of one measure, this one has {len(rows)}: index it first (report['AP'])")
        return float(rows[0].mean)

    def __repr__(self) -> str:
        head = self._header()
        fields = [f"{k}={head[k]!r}" for k in ("run", "convention", "topics") if head.get(k) is not None]
        rows = self.summaries()
        fields += [f"{s.name}={_fmt(s.mean)}" for s in rows[:_REPR_MEASURES]]
        if len(rows) > _REPR_MEASURES:
            fields.append(f"+{len(rows) - _REPR_MEASURES} more")
        return f"{type(self).__name__}({', '.join(fields)})"

    def _repr_html_(self) -> str:
        head = self._header()
        caption = ", ".join(f"{k}: {head[k]}" for k in ("run", "convention", "topics") if head.get(k) is not None)
        cells = "".join(
            f"<tr><td>{html.escape(s.name)}</td><td>{_fmt(s.mean)}</td><td>{s.evaluated}</td><td>{s.omitted}</td>"
            f"<td>{html.escape(s.aggregate)}</td></tr>"
            for s in self.summaries()
        )
        return (
            f"<table><caption>{html.escape(caption)}</caption><thead><tr><th>measure</th><th>value</th>"
            f"<th>evaluated</th><th>omitted</th><th>aggregate</th></tr></thead><tbody>{cells}</tbody></table>"
        )

    def to_dataframe(self, per_query: bool = False):
        """A pandas DataFrame (pandas is imported here only).

        ``per_query=False``: one row per measure, indexed by measure name, with
        columns ``run``, ``value`` (the reported mean, or sum for counts),
        ``evaluated``, ``omitted``, ``aggregate``. ``per_query=True``: one row
        per query (index ``query_id``), one column per measure, NaN where the
        query was omitted from that measure.
        """
        pd = require_pandas(f"{type(self).__name__}.to_dataframe")
        if per_query:
            return self._per_query_frame(pd)
        rows = self.summaries()
        run = self._header().get("run")
        frame = pd.DataFrame(
            {
                "run": [run] * len(rows),
                "value": [s.mean for s in rows],
                "evaluated": [s.evaluated for s in rows],
                "omitted": [s.omitted for s in rows],
                "aggregate": [s.aggregate for s in rows],
            },
            index=pd.Index([s.name for s in rows], name="measure"),
        )
        return frame

    def _per_query_frame(self, pd: Any):
        raise UsageError(f"{type(self).__name__} keeps aggregates only, no per-query values")


@dataclass(frozen=True)
class MeasureResult:
    """One measure over one run.

    ``per_query`` is float64 (T,) aligned with the report's ``query_ids``,
    NaN where the query was omitted; ``mask`` is True where evaluated.
    """

    measure: Measure
    per_query: torch.Tensor
    mask: torch.Tensor
    mean: float
    evaluated: int
    omitted: int
    conventions: dict[str, str] = field(default_factory=dict)
    aggregate: str = "mean"

    @classmethod
    def build(cls, measure: Measure, values: torch.Tensor, mask: torch.Tensor, conventions: dict[str, str], aggregate: str = "mean") -> "MeasureResult":
        return cls.build_all([measure], [values], [mask], [conventions], [aggregate])[0]

    @classmethod
    def build_all(
        cls,
        measures: list[Measure],
        values: list[torch.Tensor],
        masks: list[torch.Tensor],
        conventions: list[dict[str, str]],
        aggregates: list[str],
    ) -> list["MeasureResult"]:
        """Results of several measures with one device-to-host transfer.

        Means are summed on the host in one fixed order, so a CUDA run
        reports the same means as a CPU run (device reductions add in a
        different order); geometric means take their logarithms there too.
        """
        if not measures:
            return []
        stacked, stacked_mask = torch.stack(values), torch.stack(masks)
        per_query = torch.where(stacked_mask, stacked, float("nan"))
        host = torch.cat([stacked, stacked_mask.to(stacked.dtype)]).cpu()  # the one transfer
        host_values, host_mask = host[: len(measures)], host[len(measures):].bool()
        totals, counts = _row_totals(host_values, host_mask, aggregates)
        # Each measure's row as a view, by one op per table rather than one per row.
        rows, row_masks = per_query.unbind(0), stacked_mask.unbind(0)
        out = []
        for i, (m, conv, aggregate) in enumerate(zip(measures, conventions, aggregates)):
            evaluated, total = counts[i], totals[i]
            if aggregate == "sum":
                value = total
            else:
                value = total / evaluated if evaluated else float("nan")
                if aggregate == "gmean" and evaluated:
                    value = math.exp(value)
            out.append(cls(m, rows[i], row_masks[i], value, evaluated, host_values.shape[1] - evaluated, conv, aggregate))
        return out

    @property
    def name(self) -> str:
        return str(self.measure)


def _row_totals(values: torch.Tensor, mask: torch.Tensor, aggregates: list[str]) -> tuple[list[float], list[int]]:
    """Per row of the host (M, T) ``values``: the sum over ``mask`` (of the
    logarithms, floored at MIN_GEO_MEAN, for a ``gmean`` row) and the count.

    Each row is summed alone, so a total does not depend on the other
    measures evaluated beside it."""
    if "gmean" in aggregates:
        logs = values.clamp(min=MIN_GEO_MEAN).log()
        geo = torch.tensor([a == "gmean" for a in aggregates])[:, None]  # host tensors: no device copy
        values = torch.where(geo, logs, values)
    kept = torch.where(mask, values, 0.0)
    return [float(row.sum()) for row in kept], mask.sum(1).tolist()


@dataclass(frozen=True, repr=False)
class Report(ResultSet):
    """Scores of one run: per measure a :class:`MeasureResult`.

    ``report["AP"]`` is a :class:`MeasureResult` (its ``per_query`` is a
    tensor aligned with ``query_ids``); ``report.by_query()`` is
    ``{query_id: {measure: value}}`` (``report.per_query()`` is the same
    method under its older name).
    """

    run_name: str
    query_ids: list[str]
    results: dict[Measure, MeasureResult]
    convention: Convention
    queries_not_in_run: int = 0
    run_queries_not_in_qrels: int = 0
    device: str = "cpu"

    def __getitem__(self, key: MeasureLike) -> MeasureResult:
        measure = key if isinstance(key, Measure) else parse_measure(key)
        try:
            return self.results[measure]
        except KeyError:
            known = ", ".join(str(m) for m in self.results)
            raise KeyError(f"{key!r} was not evaluated; this report has: {known}") from None

    @property
    def measures(self) -> list[Measure]:
        return list(self.results)

    def summaries(self) -> list[Summary]:
        return [Summary(str(m), r.mean, r.evaluated, r.omitted, r.aggregate, r.conventions) for m, r in self.results.items()]

    def _header(self) -> dict[str, Any]:
        return {
            "run": self.run_name,
            "convention": self.convention.name,
            "topics": len(self.query_ids),
            "queries_not_in_run": self.queries_not_in_run,
            "run_queries_not_in_qrels": self.run_queries_not_in_qrels,
        }

    def by_query(self) -> dict[str, dict[str, float]]:
        """{query_id: {measure: value}}; omitted queries are left out."""
        out: dict[str, dict[str, float]] = {q: {} for q in self.query_ids}
        for m, r in self.results.items():
            for q, v, keep in zip(self.query_ids, r.per_query.tolist(), r.mask.tolist()):
                if keep:
                    out[q][str(m)] = v
        return out

    #: The older name of :meth:`by_query`, kept (not deprecated).
    per_query = by_query

    def _per_query_dict(self) -> dict[str, dict[str, float]]:
        return self.by_query()

    def _per_query_frame(self, pd: Any):
        columns = {str(m): r.per_query.cpu().tolist() for m, r in self.results.items()}  # NaN where omitted
        return pd.DataFrame(columns, index=pd.Index(self.query_ids, name="query_id"))

    # -------------------------------------------------------------- formats
    def to_table(self, per_query: bool = False) -> str:
        """A human-readable table with evaluated/omitted counts and a legend."""
        lines = [f"run: {self.run_name}    convention: {self.convention.name}    device: {self.device}"]
        lines.append(
            f"topics: {len(self.query_ids)} ({self.convention.topic_rule()}); "
            f"qrels queries missing from run: {self.queries_not_in_run}; run queries without judgments (ignored): {self.run_queries_not_in_qrels}"
        )
        width = max([len(str(m)) for m in self.results] + [7])
        lines.append(f"{'measure':<{width}}  {'value':>8}  {'evaluated':>9}  {'omitted':>7}  conventions")
        for m, r in self.results.items():
            c = r.conventions
            note = "; ".join(v for k, v in c.items() if k in ("relevance", "gain") and v)
            if r.aggregate != "mean":
                note = "; ".join(filter(None, [note, c.get("aggregation", r.aggregate)]))
            lines.append(f"{str(m):<{width}}  {_fmt(r.mean):>8}  {r.evaluated:>9}  {r.omitted:>7}  {note}")
        lines.append(f"zero rule: {self.convention.zero_rule()}")
        lines.append(f"ties: {next(iter(self.results.values())).conventions['tie_break'] if self.results else ''}; discount (DCG family): 1/log2(rank+1); aggregation: unweighted mean unless stated")
        if per_query:
            lines.append("")
            for q, values in self.by_query().items():
                lines.append(q + "  " + "  ".join(f"{k}={_fmt(v)}" for k, v in values.items()))
        return "\n".join(lines)

    def to_trec(self, per_query: bool = False, rel: int = 1, judged_only: bool = False) -> str:
        """trec_eval's three-column layout ``measure <tab> qid|all <tab> value``;
        ``rel`` is the relevance level trec_eval's names stand for (its -l),
        ``judged_only`` whether they stand for judged-only values (its -J)."""
        lines = []
        if per_query:
            for m, r in self.results.items():
                if not m.spec.trec_per_query:
                    continue  # trec_eval prints only the summary (gm_bpref)
                for q, v, keep in zip(self.query_ids, r.per_query.tolist(), r.mask.tolist()):
                    if keep:
                        lines.append(f"{trec_name(m, rel, judged_only):<22}\t{q}\t{_trec_value(m, v)}")
        lines.append(f"{'runid':<22}\tall\t{self.run_name}")
        if not any(m.family == "NumQ" for m in self.results):  # else printed as the measure itself
            lines.append(f"{'num_q':<22}\tall\t{len(self.query_ids)}")
        for m, r in self.results.items():
            lines.append(f"{trec_name(m, rel, judged_only):<22}\tall\t{_trec_value(m, r.mean)}")
        return "\n".join(lines)


def trec_name(m: Measure, rel: int = 1, judged_only: bool = False) -> str:
    """trec_eval's output name (``P_10``, ``ndcg_cut_10``) where the family has one,
    the measure's relevance level is ``rel`` (trec_eval's -l) and its
    ``judged_only`` is ``judged_only`` (trec_eval's -J); else the canonical name."""
    fam = m.spec
    name = fam.trec_name(m) if fam.trec_name is not None else None
    if name is None or (m.rel is not None and m.rel != rel) or m.judged_only != judged_only:
        return str(m)
    return name


def _trec_value(m: Measure, v: float) -> str:
    if m.spec.trec_format == "int":
        return str(int(round(v)))
    return f"{v:.4f}"


def _fmt(v: float) -> str:
    return "nan" if math.isnan(v) else f"{v:.4f}"


def _json_float(v: float) -> float | None:
    return None if math.isnan(v) else v
