"""``RetrievalEvaluator``: streaming retrieval measures for training loops.

Dense layout (torchmetrics' ``preds``/``target`` without ``indexes``): each
``update(scores, targets)`` brings B *new* queries, row b scoring N candidates
(``scores[b, j]``) with integer grades ``targets[b, j]`` (0 = judged not
relevant, > 0 relevant, < 0 = candidate without judgment, which counts as
non-relevant and stays out of the ideal ranking and of R). Every candidate is
"retrieved": a query's ranking is its N candidates sorted by score.

Ties: (score descending, candidate index ascending): the column index is the
document id of the dense layout, and the smaller column wins. (One-shot
:func:`gpukit.evaluate` on a :class:`~gpukit.Run` breaks ties by doc id
*descending*, trec_eval's rule; give column j the id ``f"{N-1-j:0{w}d}"`` to
get the same ranking there.) ``update_run(run, qrels)`` goes through the
standard :func:`gpukit.ranking.form_ranking`, with trec_eval's tie rule.

Per update, on the inputs' device and without any host synchronisation
(no ``.item()``, ``.cpu()``, Python truth values of tensors or data-dependent
shapes): top-k with k = the largest cutoff (all N when a measure has no
cutoff), the ideal grades by a top-k of the targets, R per relevance level by
a row sum, then the :mod:`gpukit.metrics` kernels via
:func:`gpukit.evaluation.compute_measures`.

State is fixed-size: per measure, the sum of the per-query values as an
exact fixed-point number in four int64 limbs, the count of evaluated queries
and the count of omitted ones (gpukit convention: R = 0 or IDCG = 0 leaves a
query out of that measure's mean). Each value v is written as
``v = l0 + l1 2^-32 + l2 2^-64 + l3 2^-96 (+ r)`` with ``l0 = floor(v)`` and
``l1..l3`` in [0, 2^32), ``0 <= r < 2^-96`` dropped. Every float64 with
magnitude in [2^-43, 2^53) is represented with r = 0, i.e. exactly; smaller
values are rounded down by less than 2^-96. Limbs are summed as int64
(limbs 1-3 overflow only after 2^31 queries). Integer addition is associative,
so the state is the same for *any* split of the queries into batches, any
order, and any distribution over processes: ``compute()`` under
``torch.distributed`` all_reduces the int64 state and returns exactly what one
process fed all batches would return. The mean is then the exact rational
``sum / evaluated`` rounded once to float64 (it may differ from
:func:`gpukit.evaluate`'s float64 running sum in the last bits).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable, Sequence

import torch

from gpukit.conventions import TIE_BREAK, Convention, get_convention
from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import DeviceError, GpukitError
from gpukit.evaluation import compute_measures
from gpukit.index.topk import block_topk, sort_by_score_then_index
from gpukit.measures import Measure, MeasureLike, parse_measure, parse_measures
from gpukit.ranking import RankedJudgments, form_ranking_parts
from gpukit.report import ResultSet, Summary, describe_conventions

LIMBS = 4
LIMB_BITS = 32
# Columns of the per-measure state: the fixed-point limbs, evaluated, omitted.
STATE_COLUMNS = LIMBS + 2


# ------------------------------------------------------------------ kernels
def ranked_positions(scores: torch.Tensor, k: int) -> torch.Tensor:
    """(B, k) column positions of each row's top k, by (score desc, column asc).

    :func:`~gpukit.index.topk.block_topk` picks the top k with ties at the
    cut resolved toward smaller columns (fixed shapes, no host sync); then
    they are ordered by (score desc, column asc).
    """
    if k >= scores.shape[1]:
        return torch.sort(scores, dim=1, descending=True, stable=True).indices
    values, chosen = block_topk(scores, k)
    return sort_by_score_then_index(values, chosen)[1]


def to_fixed_point(values: torch.Tensor) -> torch.Tensor:
    """float64 (...) -> int64 (..., 4) limbs ``floor`` of ``v * 2^96`` split by 32 bits.

    Each step is exact in float64: ``v - floor(v)`` and multiplication by
    2^32 lose nothing for |v| < 2^53.
    """
    whole = torch.floor(values)
    rest = values - whole
    limbs = [whole]
    for _ in range(LIMBS - 1):
        rest = rest * float(2**LIMB_BITS)
        part = torch.floor(rest)
        limbs.append(part)
        rest = rest - part
    return torch.stack(limbs, dim=-1).to(torch.int64)


def from_fixed_point(limbs: Sequence[int]) -> Fraction:
    """The exact rational value of summed limbs."""
    return sum((Fraction(int(l), 2 ** (LIMB_BITS * i)) for i, l in enumerate(limbs)), Fraction(0))


def _count_at_least(targets: torch.Tensor, level: int) -> torch.Tensor:
    """(B,) int64 number of candidates with grade >= ``level``.

    Summing the comparison as uint8 into int32 is about 1.6x faster on CPU
    than summing a bool tensor (which widens every element to int64).
    """
    hits = (targets >= level).view(torch.uint8)
    wide = torch.int32 if targets.shape[1] < 2**31 else torch.int64
    return hits.sum(1, dtype=wide).to(torch.int64)


@dataclass(frozen=True)
class _DenseRanking(RankedJudgments):
    """A ranking whose R and judged counts come from all N candidates.

    ``ideal`` is truncated to the top k grades (enough for IDCG@k), so the
    counts that need every candidate are taken from ``targets``, once per
    level and only when a measure asks (each is a pass over (B, N)).
    """

    targets: torch.Tensor | None = None
    _dense_counts: dict = field(default_factory=dict, repr=False, compare=False)

    def num_relevant(self, rel: int) -> torch.Tensor:
        if rel not in self._dense_counts:
            self._dense_counts[rel] = _count_at_least(self.targets, rel)  # type: ignore[arg-type]
        return self._dense_counts[rel]

    def num_judged(self) -> torch.Tensor:
        return self.num_relevant(0)


def check_streamable(measures: Sequence[Measure]) -> None:
    """Refuse, up front, every measure whose family the stream cannot compute exactly.

    A family is streamable when its record says so: its kernel reads only
    what a dense (B, N) batch provides (ranked grades, counts over all
    candidates, the ideal grades) and it aggregates by a sum of per-query
    values (means and sums; not geometric means, whose fixed-point state
    would have to hold logarithms).
    """
    for m in measures:
        fam = m.spec
        reason = None if fam.streamable is True else str(fam.streamable)
        if reason is None and any(agg not in ("mean", "sum") for _, agg in fam.aggregate):
            reason = "its aggregate is not a sum of per-query values"
        if reason is None and not fam.needs <= STREAM_INPUTS:
            reason = f"it needs {', '.join(sorted(fam.needs - STREAM_INPUTS))}, which a dense batch does not have"
        if reason is not None:
            raise GpukitError(f"RetrievalEvaluator cannot compute {m}: {reason}; use gpukit.evaluate")


#: What a dense (B, N) batch provides to the kernels.
STREAM_INPUTS = frozenset({"grades", "ideal", "num_ret"})


def _needs_full_ranking(measures: Sequence[Measure]) -> bool:
    return any(m.cutoff is None for m in measures)


def dense_ranking(scores: torch.Tensor, targets: torch.Tensor, measures: Sequence[Measure]) -> RankedJudgments:
    """The judged top-k of a dense (B, N) batch, as the metric kernels expect it."""
    rows, n = scores.shape
    k = n if _needs_full_ranking(measures) else min(n, max(int(m.cutoff) for m in measures))  # type: ignore[arg-type]
    positions = ranked_positions(scores, k)
    grades = targets.gather(1, positions).to(torch.int32)
    # R and judged counts come from counts over the targets, so only families
    # that need the ideal ranking itself (graded ones: IDCG) read ideal grades,
    # and IDCG@c needs only the c best grades: sort all N only for a measure
    # without a cutoff, or custom gains (which need not grow with the grade).
    # (Families that read the ideal grades themselves, e.g. Compat, say so in their record.)
    ndcg = [m for m in measures if "ideal" in m.spec.needs and (m.is_graded or m.spec.reads_ideal_grades)]
    ndcg_cuts = [m.cutoff for m in ndcg]
    if not ndcg:
        ideal = torch.full((rows, 1), -1, dtype=torch.int32, device=scores.device)
    elif None in ndcg_cuts or max(ndcg_cuts) >= n or any(isinstance(m.gain, tuple) for m in ndcg):  # type: ignore[type-var]
        ideal = torch.sort(targets, dim=1, descending=True).values
    else:
        ideal = torch.topk(targets, max(ndcg_cuts), dim=1, sorted=True).values  # type: ignore[type-var]
    # Judged grades only (>= 0), padded with -1 as form_ranking does.
    ideal = ideal.to(torch.int32).clamp(min=-1)
    device = scores.device
    return _DenseRanking(
        query_ids=[""] * rows,  # unused by the kernels; rows are anonymous here
        grades=grades,
        num_ret=torch.full((rows,), n, dtype=torch.int64, device=device),
        ideal=ideal,
        in_run=torch.ones(rows, dtype=torch.bool, device=device),
        run_queries_not_in_qrels=0,
        targets=targets,
    )


def state_increment(ranking: RankedJudgments, measures: Sequence[Measure], convention: Convention) -> torch.Tensor:
    """(M, 6) int64: per measure the fixed-point sum, evaluated and omitted counts of a batch."""
    computed = compute_measures(ranking, measures)
    values = torch.stack([computed[m][0] for m in measures])  # (M, B)
    defined = torch.stack([computed[m][1] for m in measures])
    mask = defined if convention.omit_undefined else torch.ones_like(defined)
    limbs = to_fixed_point(torch.where(mask, values, torch.zeros_like(values))).sum(1)  # (M, 4)
    evaluated = mask.sum(1, dtype=torch.int64)
    omitted = (~mask).sum(1, dtype=torch.int64)
    return torch.cat([limbs, evaluated[:, None], omitted[:, None]], dim=1)


# --------------------------------------------------------------- results
@dataclass(frozen=True)
class StreamingResult:
    """One measure's aggregate: mean (sum for trec_eval count measures), counts."""

    name: str
    mean: float
    evaluated: int
    omitted: int
    aggregate: str = "mean"


#: How the streaming evaluator ranks, in words (its report's tie_break).
STREAM_TIE_BREAK = (
    "update(): score descending, then candidate column ascending; update_run(): " + TIE_BREAK
)


@dataclass(frozen=True, repr=False)
class StreamingReport(ResultSet):
    """What :meth:`RetrievalEvaluator.compute_report` returns: the same report
    type as :class:`~gpukit.report.Report` (same ``to_dict`` keys, valid JSON,
    ``to_dataframe``, ``float()``), with aggregates only (no per-query values).

    ``queries`` is every query fed to the evaluator (all processes when
    ``synced``); it is the JSON's ``topics``.
    """

    results: dict[str, StreamingResult]
    queries: int
    convention: str
    synced: bool

    def summaries(self) -> list[Summary]:
        conv = get_convention(self.convention)
        topics = "every query given to update()/update_run()" + (
            ", on every process (all_reduce)" if self.synced else ", on this process"
        )
        out = []
        for name, r in self.results.items():
            conventions = describe_conventions(parse_measure(name), conv, max_depth=None, score_dtype=torch.float64)
            conventions.update(tie_break=STREAM_TIE_BREAK, topics=topics)
            del conventions["score_precision"]  # the inputs' own dtype
            out.append(Summary(name, r.mean, r.evaluated, r.omitted, r.aggregate, conventions))
        return out

    def _header(self) -> dict:
        # Dense batches have no run file and no qrels: nothing is missing on either side.
        return {"run": None, "convention": self.convention, "topics": self.queries, "queries_not_in_run": 0,
                "run_queries_not_in_qrels": 0}

    def to_table(self) -> str:
        width = max([len(n) for n in self.results] + [7])
        lines = [f"queries: {self.queries}    convention: {self.convention}"]
        lines.append(f"{'measure':<{width}}  {'value':>8}  {'evaluated':>9}  {'omitted':>7}")
        for name, r in self.results.items():
            lines.append(f"{name:<{width}}  {r.mean:8.4f}  {r.evaluated:>9}  {r.omitted:>7}")
        return "\n".join(lines)


# ------------------------------------------------------------- evaluator
class RetrievalEvaluator:
    """Accumulate retrieval measures over batches (see the module docstring).

    Args:
        measures: measure names or :class:`~gpukit.Measure` values.
        device: where the state lives; ``None`` adopts the device of the first
            update. Inputs on another device raise DeviceError (no silent copy).
        convention: ``"gpukit"`` (omit undefined queries from a mean) or
            ``"trec_eval"`` (they score 0 and count).
        relevance_level: grade counted as relevant by binary measures that do
            not state ``rel=`` (default 1).

    Example::

        ev = gpukit.RetrievalEvaluator(["nDCG@10", "R@100"], device="cuda")
        for batch in loader:
            ev.update(model(batch).scores, batch.grades)   # (B, N), (B, N)
        print(ev.compute())                               # {"nDCG@10": ..., "R@100": ...}
    """

    def __init__(
        self,
        measures: Iterable[MeasureLike] | MeasureLike,
        *,
        device: DeviceLike = None,
        convention: str | Convention = "gpukit",
        relevance_level: int | None = None,
    ) -> None:
        self.measures = parse_measures(measures, rel=relevance_level)
        check_streamable(self.measures)
        self.convention = convention if isinstance(convention, Convention) else get_convention(convention, False)
        self.device: torch.device | None = None if device is None else resolve_device(device)
        self._state: torch.Tensor | None = None
        self._queries: torch.Tensor | None = None
        # Grades a dense update could not hold in int32, counted on the device
        # (checking them at update time would need a host sync).
        self._bad_grades: torch.Tensor | None = None
        # Query ids fed through update_run: a query must come once.
        self._seen_queries: set[str] = set()
        self.run_queries_not_in_qrels = 0
        if self.device is not None:
            self._allocate(self.device)

    # ----------------------------------------------------------- state
    def _allocate(self, device: torch.device) -> None:
        self.device = device
        self._state = torch.zeros((len(self.measures), STATE_COLUMNS), dtype=torch.int64, device=device)
        self._queries = torch.zeros((), dtype=torch.int64, device=device)
        self._bad_grades = torch.zeros((), dtype=torch.int64, device=device)

    def _check_device(self, tensor: torch.Tensor, name: str) -> None:
        if self.device is None:
            self._allocate(tensor.device)
        elif tensor.device != self.device:
            raise DeviceError(f"{name} is on {tensor.device} but the evaluator's state is on {self.device}; move it explicitly")

    def reset(self) -> None:
        """Zero the state in place (tensor addresses stay, as CUDA graphs need)."""
        if self._state is not None:
            self._state.zero_()
            self._queries.zero_()  # type: ignore[union-attr]
            self._bad_grades.zero_()  # type: ignore[union-attr]
        self._seen_queries.clear()
        self.run_queries_not_in_qrels = 0

    @property
    def state(self) -> torch.Tensor | None:
        """(M, 6) int64 device tensor: 4 fixed-point limbs, evaluated, omitted per measure."""
        return self._state

    # ---------------------------------------------------------- updates
    def update(self, scores: torch.Tensor, targets: torch.Tensor) -> None:
        """Add B new queries: ``scores`` (B, N) float, ``targets`` (B, N) integer grades.

        No host synchronisation: shapes and dtypes are checked from metadata
        only. NaN scores rank as -inf (after every other score; NaNs among
        themselves by column ascending), so a diverging model gives low,
        deterministic scores instead of a crash. int64 grades outside int32
        are counted on the device and refused by :meth:`compute`.
        """
        if scores.dim() != 2 or targets.shape != scores.shape:
            raise GpukitError(f"scores {tuple(scores.shape)} and targets {tuple(targets.shape)} must be the same (B, N) shape")
        if scores.shape[1] == 0:
            raise GpukitError("no candidates: N = 0")
        if not scores.is_floating_point():
            raise GpukitError(f"scores must be floating point, got {scores.dtype}")
        if targets.is_floating_point() or targets.is_complex():
            raise GpukitError(f"targets must be integer grades (or bool), got {targets.dtype}")
        self._check_device(scores, "scores")
        self._check_device(targets, "targets")
        if targets.dtype == torch.bool:
            targets = targets.to(torch.int32)
        elif targets.dtype == torch.int64:
            out_of_range = (targets > 2**31 - 1) | (targets < -(2**31))
            self._bad_grades.add_(out_of_range.sum())  # type: ignore[union-attr]
        scores = torch.where(torch.isnan(scores), torch.full_like(scores, -math.inf), scores)
        ranking = dense_ranking(scores, targets, self.measures)
        self._state.add_(state_increment(ranking, self.measures, self.convention))  # type: ignore[union-attr]
        self._queries.add_(scores.shape[0])  # type: ignore[union-attr]

    def update_run(self, run: Run, qrels: Qrels, *, score_dtype: torch.dtype = torch.float64) -> None:
        """Add the queries of a run batch that have judgments in ``qrels``.

        The ranking is :func:`~gpukit.ranking.form_ranking` (trec_eval's tie
        rule, doc id descending). Run queries without judgments are counted in
        ``run_queries_not_in_qrels`` and ignored. Unlike one-shot
        :func:`gpukit.evaluate` under the gpukit convention, qrels queries that
        no batch contains are *not* scored (a stream cannot know they are
        missing). This path reads the Run's Arrow ids on the host, so it is
        not free of synchronisation the way :meth:`update` is.
        """
        self._check_device(run.row_blocks()[0].doc_codes, "run")  # not run.doc_codes: it pads a run in blocks
        ranking = form_ranking_parts(qrels, run, complete=False, score_dtype=score_dtype)  # memory bounded by the run
        again = [q for q in ranking.query_ids if q in self._seen_queries]
        if again:
            shown = ", ".join(repr(q) for q in again[:5]) + (f" and {len(again) - 5} more" if len(again) > 5 else "")
            raise GpukitError(
                f"update_run: quer{'ies' if len(again) > 1 else 'y'} {shown} already came in an earlier update; "
                "each query's ranking must come whole, in one update (reset() starts over)"
            )
        self._seen_queries.update(ranking.query_ids)
        self.run_queries_not_in_qrels += ranking.run_queries_not_in_qrels
        if ranking.num_topics == 0:
            return
        self._state.add_(state_increment(ranking, self.measures, self.convention))  # type: ignore[union-attr]
        self._queries.add_(ranking.num_topics)  # type: ignore[union-attr]

    # ---------------------------------------------------------- results
    def _layout_signature(self) -> int:
        """A 62-bit digest of what the state means: measures, convention, layout."""
        text = repr(([str(m) for m in self.measures], self.convention, STATE_COLUMNS, LIMBS, LIMB_BITS))
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 2

    def _check_ranks_agree(self, group) -> None:
        """Refuse to add up states of evaluators that differ (before any sum).

        One MAX all_reduce of (signature, -signature, queries fed by update_run):
        equal signatures on every rank iff max == -max(-signature). Then, if
        any rank used update_run, the query ids are gathered to find queries
        fed on more than one rank.
        """
        import torch.distributed as dist

        sig = self._layout_signature()
        probe = torch.tensor([sig, -sig, len(self._seen_queries)], dtype=torch.int64, device=self._state.device)  # type: ignore[union-attr]
        dist.all_reduce(probe, op=dist.ReduceOp.MAX, group=group)
        top, neg_bottom, seen = probe.tolist()
        if top != -neg_bottom:
            raise GpukitError(
                "RetrievalEvaluator.compute: the processes' evaluators differ (measures, their order, convention "
                f"or state layout; this rank has {[str(m) for m in self.measures]} under {self.convention.name!r}); "
                "every rank must build the same evaluator"
            )
        if seen:
            gathered: list = [None] * dist.get_world_size(group)
            dist.all_gather_object(gathered, sorted(self._seen_queries), group=group)
            owners: dict[str, int] = {}
            for rank, qids in enumerate(gathered):
                for q in qids:
                    if q in owners:
                        raise GpukitError(
                            f"RetrievalEvaluator.compute: query {q!r} was fed on ranks {owners[q]} and {rank}; "
                            "shard queries so that each comes to one rank once"
                        )
                    owners[q] = rank

    def _gathered_state(self, sync: bool | None, group) -> tuple[list[list[int]], int, bool]:
        import torch.distributed as dist

        if sync is None:
            sync = dist.is_available() and dist.is_initialized()
        if self._state is None:
            if not sync:
                return [[0] * STATE_COLUMNS for _ in self.measures], 0, False
            # This rank saw no batch but must still join the collective: zeros
            # on the device the backend needs.
            nccl = dist.get_backend(group) == "nccl"
            self._allocate(torch.device("cuda", torch.cuda.current_device()) if nccl else torch.device("cpu"))
        flat = torch.cat([self._state.flatten(), self._queries.view(1), self._bad_grades.view(1)])  # type: ignore[union-attr]
        if sync:
            self._check_ranks_agree(group)
            # int64 sums: exact and independent of the reduction order.
            flat = flat.clone()
            dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=group)
        values = flat.cpu().tolist()
        bad_grades = values.pop()
        if bad_grades:
            raise GpukitError(
                f"RetrievalEvaluator: {bad_grades} target grade(s) outside int32 were given to update(); "
                "grades must be int32 values (as in qrels files)"
            )
        queries = values.pop()
        rows = [values[i * STATE_COLUMNS : (i + 1) * STATE_COLUMNS] for i in range(len(self.measures))]
        return rows, queries, bool(sync)

    def compute_report(self, *, sync: bool | None = None, group=None) -> StreamingReport:
        """Means with evaluated/omitted counts.

        ``sync=None`` all_reduces across the default (or given) process group
        when ``torch.distributed`` is initialised; every rank must call it.
        The local state is left unchanged.
        """
        rows, queries, synced = self._gathered_state(sync, group)
        results = {}
        for m, row in zip(self.measures, rows):
            total = from_fixed_point(row[:LIMBS])
            evaluated, omitted = row[LIMBS], row[LIMBS + 1]
            aggregate = m.spec.aggregate_under(self.convention)
            if aggregate == "sum":
                value = float(total)
            else:
                value = float(total / evaluated) if evaluated else float("nan")
            results[str(m)] = StreamingResult(str(m), value, evaluated, omitted, aggregate)
        return StreamingReport(results, queries, self.convention.name, synced)

    def compute(self, *, sync: bool | None = None, group=None) -> dict[str, float]:
        """``{measure name: mean}`` over every query seen (all ranks when synced)."""
        return self.compute_report(sync=sync, group=group).means()

    def __repr__(self) -> str:
        return f"RetrievalEvaluator({[str(m) for m in self.measures]}, device={self.device}, convention={self.convention.name!r})"
