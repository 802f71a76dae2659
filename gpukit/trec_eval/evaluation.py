"""trec_eval's evaluation loop on gpukit's kernels: the qrels topics, ``-c``,
``-M``, ``-J``, ``-D.qid``, per-query stored values (log values for ``gm_*``,
z-scores for ``-Z``) and their summaries; ``-R prefs/qrels_jg`` through the
preference and judgment-group API."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import GpukitError, TrecEvalError
from gpukit.evaluation import compute_measures
from gpukit.judged_only import judged_only_ranking, keep_ranked
from gpukit.ranking import NOT_JUDGED, RankedJudgments, RankingParts, form_ranking_parts
from gpukit.report import MIN_GEO_MEAN
from gpukit.trec_eval.inputs import read_run, zscore
from gpukit.trec_eval.measure_names import Output
from gpukit.trec_eval.options import Options

#: trec_eval -J: unjudged documents (absent from the qrels, or negative
#: grades) removed from each ranking, the others keeping their order.
judged_only = judged_only_ranking
_keep = keep_ranked


def relstring(grades: Sequence[int]) -> str:
    """trec_eval's relstring of ranked grades: the digit of grades 0-9, '>'
    above, '-' not in the qrels, '.' in the pool but unjudged (negative)."""
    chars = []
    for g in grades:
        if g == NOT_JUDGED:
            chars.append("-")
        elif g < 0:
            chars.append(".")
        else:
            chars.append(">" if g > 9 else str(g))
    return "".join(chars)


@dataclass
class Evaluated:
    """Per-query stored values (trec_eval's q_eval) and summaries of one evaluation."""

    query_ids: list[str]
    run_id: str
    outputs: list[Output]
    per_query: dict[str, list[float]]  # output name -> stored value per query
    summary: dict[str, float]
    relstrings: dict[str, list[str]]


#: Ranking inputs of families evaluated from other rel_info formats, and the -R that provides each.
_FORMAT_OF = {"prefs": "prefs", "judgment_groups": "qrels_jg"}
_OTHER_JUDGMENTS = frozenset(_FORMAT_OF)


def evaluate_qrels(opts: Options, qrels: Qrels, run: Run, tag: str, outputs: list[Output],
                   zscores: dict[str, dict[str, tuple[float, float]]] | None) -> Evaluated:
    """trec_eval's evaluation loop over the qrels queries, on the registry's kernels."""
    for o in outputs:
        other = o.measure is not None and sorted(set(o.measure.spec.needs) & _OTHER_JUDGMENTS)
        if other:  # trec_eval: a prefs / judgment-group measure on a qrels file cannot be calculated
            raise TrecEvalError([f"gpukit trec_eval: {o.name} needs {other[0]} judgments (-R {_FORMAT_OF[other[0]]})",
                                 f"trec_eval: Can't calculate measure '{o.name}'"], 4)
    depth = opts.max_depth
    # In parts of similar depth (memory bounded by the input, however lopsided).
    parts = form_ranking_parts(qrels, run, complete=True, max_depth=depth if depth is not None and depth > 0 else None)

    def adjusted(ranking: RankedJudgments) -> RankedJudgments:
        if depth is not None and depth <= 0:  # trec_eval keeps min(num_ret, M) documents: none
            ranking = _keep(ranking, torch.zeros_like(ranking.grades, dtype=torch.bool))
        return judged_only(ranking) if opts.judged_only else ranking

    parts = RankingParts(parts.query_ids, parts.in_run, parts.run_queries_not_in_qrels,
                         tuple((positions, adjusted(r)) for positions, r in parts.parts))
    if not opts.complete:
        missing = [q for q, present in zip(parts.query_ids, parts.in_run.tolist()) if not present]
        missing = [q for q in missing if opts.debug_query in (None, q)]
        if missing:
            raise TrecEvalError([f"trec_eval: result qid '{missing[0]}' not found in qrels"], 4)
    rows = [i for i, q in enumerate(parts.query_ids) if opts.debug_query in (None, q)]
    if not rows:
        raise TrecEvalError(["trec_eval: No queries with both results and relevance info"], 7)
    qids = [parts.query_ids[i] for i in rows]
    values = compute_measures(parts, [o.measure for o in outputs if o.measure is not None])
    per_query: dict[str, list[float]] = {}
    summary: dict[str, float] = {}
    relstrings: dict[str, list[str]] = {}
    for o in outputs:
        if o.kind == "relstring":
            strings = _relstrings(parts, o.relstring_len)
            relstrings[o.name] = [strings[i] for i in rows]
        if o.measure is None:
            continue
        column = values[o.measure][0].cpu().tolist()
        stored = [float(column[i]) for i in rows]
        if o.aggregate == "gmean":  # trec_eval stores log(max(v, 1e-5)) per query for gm_*
            stored = [math.log(max(v, MIN_GEO_MEAN)) for v in stored]
        if zscores is not None:
            stored = [zscore(v, zscores.get(q, {}).get(o.name)) for q, v in zip(qids, stored)]
        per_query[o.name] = stored
        summary[o.name] = _aggregate(o, stored, len(qids))
    return Evaluated(qids, tag, outputs, per_query, summary, relstrings)


def _relstrings(parts: RankingParts, length: int) -> list[str]:
    """relstring of every topic (in topic order), part by part."""
    out = [""] * parts.num_topics
    for positions, ranking in parts.parts:
        width = max(0, min(length, ranking.grades.shape[1]))
        grades = ranking.grades[:, :width].cpu().tolist()
        lengths = ranking.num_ret.clamp(max=width).cpu().tolist()
        where = range(ranking.num_topics) if positions is None else positions.cpu().tolist()
        for i, topic in enumerate(where):
            out[topic] = relstring(grades[i][: lengths[i]])
    return out


def _aggregate(o: Output, stored: list[float], num_q: int) -> float:
    if o.name == "num_q":
        return float(num_q)  # trec_eval sets it to the number of topics, z-scores or not
    total = 0.0
    for v in stored:  # trec_eval's accumulation order: query by query
        total += v
    if o.aggregate == "sum":
        return total
    if o.aggregate == "first":
        return stored[0]
    mean = total / num_q
    return math.exp(mean) if o.aggregate == "gmean" else mean


def evaluate_other_format(opts: Options, outputs: list[Output]) -> Evaluated:
    """-R prefs / qrels_prefs / qrels_jg: evaluated by gpukit's preference and
    judgment-group API when this build has it."""
    from gpukit.judgments.prefs import Prefs
    from gpukit.judgments.judgment_groups import JudgmentGroups
    from gpukit.evaluation import evaluate

    fmt = opts.rel_info_format
    run, tag = read_run(opts.results_file)
    # num_q counts the topics whatever the judgments are; the rest need the other format's ranking form.
    measures = [o.measure for o in outputs if o.measure is not None and o.measure.family != "NumQ"]
    common = {"convention": "trec_eval", "complete": opts.complete, "max_depth": opts.max_depth}
    try:
        if fmt == "qrels_jg":
            groups = JudgmentGroups.from_trec(opts.rel_info_file)
            report = evaluate(groups, run, measures, relevance_level=opts.relevance_level, **common)
        else:
            prefs = Prefs.from_trec(opts.rel_info_file) if fmt == "prefs" else Prefs.from_qrels_file(opts.rel_info_file)
            report = evaluate(prefs, run, measures, **common)
    except GpukitError as exc:
        raise TrecEvalError([f"gpukit trec_eval: {exc}", "trec_eval: Can't calculate measure"], 4) from None
    qids = list(report.query_ids)
    per_query = {
        o.name: [1.0] * len(qids) if o.measure.family == "NumQ" else [float(v) for v in report[o.measure].per_query.tolist()]
        for o in outputs
        if o.measure is not None
    }
    summary = {o.name: _aggregate(o, per_query[o.name], len(qids)) for o in outputs if o.measure is not None}
    return Evaluated(qids, tag, outputs, per_query, summary, {o.name: [""] * len(qids) for o in outputs if o.kind == "relstring"})


