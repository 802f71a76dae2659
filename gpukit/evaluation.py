"""``gpukit.evaluate``: form the ranking once, reduce it for every measure.

One entry point for every kind of judgments: the judgments form their own
ranking (:mod:`gpukit.judgments`), the kernels reduce it.

Measures are grouped by (family, relevance level, gain) so that all cutoffs
of a group come from one cumulative sum; every kernel works on the whole
(T, K) batch. Only the final means are read back to the host.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence, Union

import torch

from gpukit.conventions import Convention, get_convention
from gpukit.data.run import Run
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import MeasureError, UsageError, UsageTypeError
from gpukit.judgments import KINDS, check_kind
from gpukit.measures import Measure, MeasureLike, parse_measures
from gpukit.ranking import RankedJudgments, RankingParts
from gpukit.report import MeasureResult, Report, describe_conventions

if TYPE_CHECKING:
    from gpukit.judgments.judgment_groups import JudgmentGroups
    from gpukit.judgments.prefs import Prefs
    from gpukit.judgments.qrels import Qrels
    from gpukit.judgments.subtopics import SubtopicQrels

#: Judgments of any kind (see :mod:`gpukit.judgments`).
Judgments = Union["Qrels", "Prefs", "JudgmentGroups", "SubtopicQrels"]

def compute_measures(ranking: RankedJudgments | RankingParts, measures: Sequence[Measure]) -> dict[Measure, tuple[torch.Tensor, torch.Tensor]]:
    """Per-query values and "defined" masks, each (T,), for every measure.

    One kernel call per (kernel, rel, gain, params), for all the cutoffs
    asked of it (one cumulative sum answers every cutoff of a group), so
    families that share a kernel share its call too: GMAP is AP per query,
    GMBpref is bpref (only their aggregates differ). A kernel's result must
    depend on the ranking, ``rel``, ``gain``, ``params`` and the cutoffs
    only, never on which family asked (tests/test_kernel_sharing.py checks
    every shared kernel). A ranking in parts
    (:class:`~gpukit.ranking.RankingParts`) is reduced part by part and each
    part's values are placed at its topics' positions: measures are
    per-topic, so this is exact.
    """
    if any(m.judged_only for m in measures):
        return _compute_judged_only(ranking, measures)
    if isinstance(ranking, RankingParts):
        return _compute_in_parts(ranking, measures)
    groups: dict[tuple, list[Measure]] = defaultdict(list)
    for m in measures:
        groups[(m.spec.kernel, m.rel, m.gain, m.params)].append(m)
    out: dict[Measure, tuple[torch.Tensor, torch.Tensor]] = {}
    # Kernels that form a shared table (the running hits) first, so that the
    # measures reading it find it formed; the order changes no value.
    for members in sorted(groups.values(), key=lambda ms: not ms[0].spec.forms_running_hits):
        cutoffs = list(dict.fromkeys(m.cutoff for m in members))  # distinct, in order
        values, defined = members[0].spec.kernel(ranking, members[0], cutoffs)
        for m in members:
            c = min(cutoffs.index(m.cutoff), values.shape[1] - 1)  # cutoff-free families return one column
            out[m] = (values[:, c], defined[:, c])
    return out


def _compute_judged_only(ranking, measures: Sequence[Measure]) -> dict[Measure, tuple[torch.Tensor, torch.Tensor]]:
    """Measures with ``judged_only`` computed on the ranking without its unjudged documents (gpukit.judged_only)."""
    from gpukit.judged_only import judged_only_parts

    if not isinstance(ranking, (RankedJudgments, RankingParts)):
        raise MeasureError(f"{next(m for m in measures if m.judged_only)}: judged_only applies to measures on qrels (gpukit.evaluate)")
    judged = [m for m in measures if m.judged_only]
    out = compute_measures(ranking, [m for m in measures if not m.judged_only])
    plain = [m.with_judged_only(False) for m in judged]
    values = compute_measures(judged_only_parts(ranking), plain)
    out.update({m: values[p] for m, p in zip(judged, plain)})
    return out


def _compute_in_parts(ranking: RankingParts, measures: Sequence[Measure]) -> dict[Measure, tuple[torch.Tensor, torch.Tensor]]:
    if len(ranking.parts) == 1 and ranking.parts[0][0] is None:  # one part of every topic, in order
        return compute_measures(ranking.parts[0][1], measures)
    out: dict[Measure, tuple[torch.Tensor, torch.Tensor]] = {}
    for positions, part in ranking.parts:
        for m, (values, defined) in compute_measures(part, measures).items():
            if m not in out:
                out[m] = (values.new_zeros(ranking.num_topics), defined.new_zeros(ranking.num_topics))
            out[m][0].index_copy_(0, positions, values)
            out[m][1].index_copy_(0, positions, defined)
    return out


def evaluate(
    judgments: Judgments,
    run: Run,
    measures: Iterable[MeasureLike] | MeasureLike | None = None,
    *,
    device: DeviceLike = None,
    convention: str | Convention | None = None,
    complete: bool | None = None,
    max_depth: int | None = None,
    relevance_level: int | None = None,
    score_dtype: torch.dtype = torch.float64,
    judged_only: bool = False,
) -> Report:
    """Evaluate one run against judgments of any kind.

    Args:
        judgments: :class:`~gpukit.Qrels` (ordinary graded judgments),
            :class:`~gpukit.Prefs` (preferences: ``trec_eval -R prefs`` /
            ``qrels_prefs``), :class:`~gpukit.JudgmentGroups` (``-R
            qrels_jg``) or :class:`~gpukit.SubtopicQrels` (ndeval's
            diversity judgments). The ranking is formed by the judgments'
            own kind (:mod:`gpukit.judgments`); a measure that reads another
            kind is an error naming it.
        run: the run to score.
        measures: names (``"nDCG@10"``, ``"P(rel=2)@5"``, ``"ndcg_cut.10"``,
            ``"map"``, ``"alpha_nDCG@20"``, ``"prefs_simp"``...),
            ``Measure`` values, or the kind's nicknames (``"all_prefs"``,
            ``"qrels_jg"``, ``"ndeval"``). Default: the kind's own set
            (required for qrels).
        device: where to compute. ``None`` uses the run's device (no copy);
            ``"auto"`` picks CUDA when present. A run on another device is
            copied there once, explicitly, as asked.
        convention: ``"gpukit"`` or ``"trec_eval"`` (see
            :mod:`gpukit.conventions`); default: the kind's
            (``"trec_eval"`` for preferences and judgment groups, whose
            measures trec_eval defines; ``"gpukit"`` otherwise).
        complete: override the convention's topic set (``True`` = all judged
            queries, as ``trec_eval -c`` / ``ndeval -c``).
        max_depth: only the top ``max_depth`` documents of each ranking count
            (``trec_eval -M``), applied after sorting.
        relevance_level: grade counted as relevant by binary measures that do
            not state ``rel=`` themselves (``trec_eval -l``). Default 1.
        score_dtype: precision in which scores are compared for sorting.
        judged_only: compute every measure on the judged documents only
            (trec_eval ``-J``; per measure: ``nDCG(judged_only=True)@10``,
            see :mod:`gpukit.judged_only`).

    Returns:
        A :class:`~gpukit.report.Report` with per-query values, means, the
        evaluated and omitted counts, and the conventions of every measure.
    """
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or not 1 <= max_depth < 2**63):
        # Depths are compared with int64 tensors: a larger one cannot be represented.
        raise UsageError(f"max_depth must be a positive integer below 2**63, got {max_depth!r}")
    kind = getattr(type(judgments), "kind", None)
    if kind not in KINDS:
        raise UsageTypeError(
            f"evaluate() takes judgments (gpukit.Qrels, Prefs, JudgmentGroups or SubtopicQrels), got {type(judgments).__name__}"
        )
    if measures is None:
        if judgments.default_measures is None:
            raise MeasureError("evaluate() against qrels needs measures, e.g. ['nDCG@10', 'AP']")
        measures = judgments.default_measures
    conv = resolve_convention(judgments.default_convention if convention is None else convention, complete)
    parsed = parse_measures(expand_nicknames(measures, judgments.nicknames()), rel=relevance_level)
    if judged_only:
        parsed = list(dict.fromkeys(m.with_judged_only() for m in parsed))
    check_kind(parsed, kind)
    run, target = place_run(run, device)
    ranking = judgments.form_ranking(run, complete=conv.complete, max_depth=max_depth, score_dtype=score_dtype)
    return report_of(ranking, parsed, conv, run.name, target, max_depth=max_depth, score_dtype=score_dtype)


def resolve_convention(convention: str | Convention, complete: bool | None) -> Convention:
    """The convention named (or given); ``complete``, when set, overrides its topic set."""
    if isinstance(convention, Convention):
        return convention if complete is None else Convention(convention.name, complete, convention.omit_undefined)
    return get_convention(convention, complete)


def place_run(run: Run, device: DeviceLike) -> tuple[Run, torch.device]:
    """The run on ``device`` (``None``: where it is; copied once otherwise) and that device."""
    target = resolve_device(device, run.device)
    return (run if run.device == target else run.to(target)), target


def expand_nicknames(measures: Iterable[MeasureLike] | MeasureLike, expansions: Mapping[str, Sequence[str]]) -> list[MeasureLike]:
    """Measures with each nickname (``"all_prefs"``, ``"ndeval"``...) replaced by its measures, in order."""
    items = [measures] if isinstance(measures, (str, Measure)) else list(measures)
    out: list[MeasureLike] = []
    for item in items:
        out.extend(expansions[item] if isinstance(item, str) and item in expansions else [item])
    return out


def report_of(ranking, parsed: Sequence[Measure], conv: Convention, run_name: str, device: torch.device, *,
              max_depth: int | None, score_dtype: torch.dtype) -> Report:
    """The Report of ``parsed`` over a formed ranking (any ranking form whose
    families' kernels read it: RankedJudgments, PrefsRanking...)."""
    values = compute_measures(ranking, parsed)
    if conv.omit_undefined or not parsed:
        masks = [values[m][1] for m in parsed]
    else:  # every query counts: one all-True mask serves every measure
        masks = [torch.ones_like(values[parsed[0]][1])] * len(parsed)
    built = MeasureResult.build_all(
        parsed,
        [values[m][0] for m in parsed],
        masks,
        [describe_conventions(m, conv, max_depth=max_depth, score_dtype=score_dtype) for m in parsed],
        [m.spec.aggregate_under(conv) for m in parsed],
    )
    results: dict[Measure, MeasureResult] = dict(zip(parsed, built))
    return Report(
        run_name=run_name,
        query_ids=ranking.query_ids,
        results=results,
        convention=conv,
        queries_not_in_run=ranking.in_run.numel() - int(ranking.in_run.sum()),
        run_queries_not_in_qrels=ranking.run_queries_not_in_qrels,
        device=str(device),
    )
