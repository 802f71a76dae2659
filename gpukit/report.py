"""Reports: every score travels with the conventions that produced it."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import torch

from gpukit.conventions import TIE_BREAK, Convention
from gpukit.measures import Measure, MeasureLike, parse_measure


def describe_conventions(m: Measure, conv: Convention, *, max_depth: int | None, score_dtype: torch.dtype) -> dict[str, str]:
    """The conventions of one measure, in words, for the report (from its family record)."""
    fam = m.spec
    out: dict[str, str] = {"convention": conv.name, "definition": fam.definition}
    if fam.describe is not None:
        out.update(fam.describe(m))
    for p in fam.params:
        if p.name not in ("rel", "gain"):
            out[p.name] = f"{p.show(m.param(p.name))} ({p.doc})"
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
        per_query = torch.where(stacked_mask, stacked, torch.full_like(stacked, float("nan")))
        host = torch.cat([stacked, stacked_mask.to(stacked.dtype)]).cpu()  # the one transfer
        host_values, host_mask = host[: len(measures)], host[len(measures):].bool()
        out = []
        for i, (m, conv, aggregate) in enumerate(zip(measures, conventions, aggregates)):
            row, keep = host_values[i], host_mask[i]
            evaluated = int(keep.sum())
            if aggregate == "gmean":
                row = row.clamp(min=MIN_GEO_MEAN).log()
            total = float(row.masked_fill(~keep, 0.0).sum())
            if aggregate == "sum":
                value = total
            else:
                value = total / evaluated if evaluated else float("nan")
                if aggregate == "gmean" and evaluated:
                    value = math.exp(value)
            out.append(cls(m, per_query[i], stacked_mask[i], value, evaluated, int(keep.numel()) - evaluated, conv, aggregate))
        return out

    @property
    def name(self) -> str:
        return str(self.measure)


@dataclass(frozen=True)
class Report:
    """Scores of one run: per measure a :class:`MeasureResult`."""

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

    def means(self) -> dict[str, float]:
        return {str(m): r.mean for m, r in self.results.items()}

    def per_query(self) -> dict[str, dict[str, float]]:
        """{query_id: {measure: value}}; omitted queries are left out."""
        out: dict[str, dict[str, float]] = {q: {} for q in self.query_ids}
        for m, r in self.results.items():
            for q, v, keep in zip(self.query_ids, r.per_query.tolist(), r.mask.tolist()):
                if keep:
                    out[q][str(m)] = v
        return out

    # -------------------------------------------------------------- formats
    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        """The ``--format json`` object for this run."""
        out: dict[str, Any] = {
            "run": self.run_name,
            "convention": self.convention.name,
            "topics": len(self.query_ids),
            "queries_not_in_run": self.queries_not_in_run,
            "run_queries_not_in_qrels": self.run_queries_not_in_qrels,
            "measures": {
                str(m): {
                    "mean": _json_float(r.mean),
                    "evaluated": r.evaluated,
                    "omitted": r.omitted,
                    "conventions": r.conventions,
                }
                for m, r in self.results.items()
            },
        }
        if per_query:
            out["per_query"] = self.per_query()
        return out

    def to_json(self, per_query: bool = False) -> str:
        return json.dumps(self.to_dict(per_query), indent=2)

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
            for q, values in self.per_query().items():
                lines.append(q + "  " + "  ".join(f"{k}={_fmt(v)}" for k, v in values.items()))
        return "\n".join(lines)

    def to_trec(self, per_query: bool = False, rel: int = 1) -> str:
        """trec_eval's three-column layout ``measure <tab> qid|all <tab> value``;
        ``rel`` is the relevance level trec_eval's names stand for (its -l)."""
        lines = []
        if per_query:
            for m, r in self.results.items():
                if not m.spec.trec_per_query:
                    continue  # trec_eval prints only the summary (gm_bpref)
                for q, v, keep in zip(self.query_ids, r.per_query.tolist(), r.mask.tolist()):
                    if keep:
                        lines.append(f"{trec_name(m, rel):<22}\t{q}\t{_trec_value(m, v)}")
        lines.append(f"{'runid':<22}\tall\t{self.run_name}")
        if not any(m.family == "NumQ" for m in self.results):  # else printed as the measure itself
            lines.append(f"{'num_q':<22}\tall\t{len(self.query_ids)}")
        for m, r in self.results.items():
            lines.append(f"{trec_name(m, rel):<22}\tall\t{_trec_value(m, r.mean)}")
        return "\n".join(lines)


def trec_name(m: Measure, rel: int = 1) -> str:
    """trec_eval's output name (``P_10``, ``ndcg_cut_10``) where the family has one
    and the measure's relevance level is ``rel`` (trec_eval's -l); else the canonical name."""
    fam = m.spec
    name = fam.trec_name(m) if fam.trec_name is not None else None
    if name is None or (m.rel is not None and m.rel != rel):
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
