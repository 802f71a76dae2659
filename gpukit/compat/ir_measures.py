"""An ir_measures provider named ``gpukit`` (extra ``ir-measures``).

Opt-in::

    import ir_measures
    from gpukit.compat.ir_measures import register
    register()                      # ir_measures.gpukit, and first in the default pipeline
    ir_measures.gpukit.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.AP], qrels, run)
    ir_measures.calc_aggregate(...)  # gpukit answers what it supports, the rest falls through

Supported measures come from gpukit's registry, not a list: an ir_measures
measure is supported when its ``NAME`` resolves (canonical name or alias,
:func:`gpukit.families.name_index`) to a gpukit family that reads ordinary
qrels, and each of its parameters maps onto that family's: ``cutoff`` under
the family's cutoff rule, ``rel`` and other same-named parameters as they
are, ``gains`` -> ``gain``, ``recall`` (a recall level) -> the cutoff, ``dcg='exp-log2'`` -> ``gain=exp`` (gdeval's
2^g - 1), ``judged_only`` -> :attr:`gpukit.Measure.judged_only` (the ranking without its unjudged
documents, as ir_measures' pytrec_eval provider passes it to trec_eval's ``-J``); a parameter ir_measures requires
(cwl_eval's ``max_rel``) is required here too. Where ir_measures names a measure
differently, :data:`RENAMED` says so (``NumRet(rel=r)`` is trec_eval's
num_rel_ret). Families whose ir_measures definition differs from gpukit's
are left to the other providers (:data:`DIFFERENT`).

Values follow ir_measures' conventions: gpukit's ``convention="trec_eval"``
(R = 0 scores 0 and counts; ties by doc id descending) on the queries of both
the run and the qrels; ir_measures' Evaluator then gives every qrels query
the run lacks the measure's DEFAULT (0), as for its other providers (so
NumQ and NumRel count only answered queries, unlike ``trec_eval -c``); run
queries without judgments are ignored.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator

import ir_measures
from ir_measures import Metric, providers
from ir_measures.providers.base import Any as AnyValue, Choices, NOT_PROVIDED

from gpukit.errors import GpukitError, MeasureError
from gpukit.judgments import KINDS
from gpukit.families import name_index
from gpukit.families.spec import Family
from gpukit.measures import Measure

__all__ = ["GpukitProvider", "register", "to_gpukit"]

#: ir_measures names whose meaning depends on a parameter: (NAME, param provided) -> gpukit family.
RENAMED = {("NumRet", "rel"): "NumRelRet"}

#: gpukit families whose definition differs from the measure ir_measures means by that name. IPrec@l:
#: gpukit follows trec_eval 10.0 (lround(l * R) relevant documents), pytrec_eval's bundled
#: trec_eval 9 takes (long)(l * R + 0.9). Compat: ir_measures' compat provider breaks score ties
#: by doc id ascending and orders an ideal grade's documents by score (0.0 for those the run
#: lacks), gpukit by its ranking (gpukit/families/compat.py).
DIFFERENT = frozenset({"IPrec", "Compat"})

_CUTOFF_SPEC = {"required": AnyValue(required=True), "optional": AnyValue(), "none": Choices(NOT_PROVIDED)}


def _family_of(measure: Any) -> Family | None:
    for (name, param), target in RENAMED.items():
        if measure.NAME == name and measure.params.get(param, NOT_PROVIDED) is not NOT_PROVIDED:
            return name_index().canonical[target]
    found = name_index().lookup(measure.NAME)
    # Families that read another kind of judgments (preferences, judgment
    # groups, subtopics) are left to the providers that read them.
    if found is None or found[0].name in DIFFERENT or found[0].needs & (KINDS.keys() - {"qrels"}):
        return None
    return found[0]


def to_gpukit(measure: Any) -> Measure:
    """The gpukit :class:`~gpukit.Measure` an ir_measures measure means (MeasureError if none)."""
    fam = _family_of(measure)
    if fam is None:
        raise MeasureError(f"gpukit provides no measure for ir_measures' {measure}")
    given = {k: v for k, v in measure.params.items() if v is not NOT_PROVIDED}
    cutoff = given.pop("cutoff", given.pop("recall", None))  # IPrec's recall level is gpukit's cutoff
    judged_only = given.pop("judged_only", False)
    if not isinstance(judged_only, bool):
        raise MeasureError(f"{measure}: judged_only must be True or False, got {judged_only!r}")
    dcg = given.pop("dcg", "log2")
    if dcg not in ("log2", "exp-log2") or (dcg == "exp-log2" and "gains" in given):
        raise MeasureError(f"{measure}: dcg={dcg!r} is not a gpukit gain")
    if dcg == "exp-log2":
        given["gain"] = "exp"
    if "gains" in given:
        given["gain"] = tuple(sorted((int(g), float(v)) for g, v in given.pop("gains").items()))
    rel, gain = given.pop("rel", None), given.pop("gain", None)
    unknown = [k for k in given if fam.param(k) is None]
    if unknown or (rel is not None and fam.param("rel") is None) or (gain is not None and fam.param("gain") is None):
        raise MeasureError(f"{measure}: gpukit's {fam.name} has no parameter {(unknown or ['rel' if rel is not None else 'gain'])[0]!r}")
    # ir_measures' defaults where gpukit's differ (e.g. SetR's absent cutoff is gpukit R without one).
    for p in fam.params:
        info = measure.SUPPORTED_PARAMS.get("gains" if p.name == "gain" else p.name)
        if p.name not in ("rel", "gain") and p.name not in given and info is not None and info.default is not NOT_PROVIDED:
            given[p.name] = info.default
    return Measure(fam.name, cutoff=cutoff, rel=rel, gain=gain, params=tuple(given.items()), judged_only=judged_only)


def _prototypes() -> list:
    """SUPPORTED_MEASURES: one prototype per ir_measures measure a gpukit family answers."""
    out = []
    for name, cls in sorted(ir_measures.measures.registry.items()):
        fam = _family_of(cls)
        if fam is None:
            continue
        spec = {}
        for param, info in cls.SUPPORTED_PARAMS.items():
            if param in ("cutoff", "recall"):
                # Required where either library requires it (ir_measures' ERR does).
                spec[param] = _CUTOFF_SPEC["required" if info.required and fam.cutoff != "none" else fam.cutoff]
            elif param == "judged_only":
                spec[param] = Choices(False, True)
            elif param == "dcg":
                spec[param] = Choices("log2", "exp-log2") if fam.param("gain") else Choices("log2")
            elif name == "RBP" and param == "rel":
                # Graded RBP: ir_measures' is trectools' (outside its default pipeline), gpukit's trec_eval's.
                spec[param] = AnyValue(required=True)
            elif fam.param("gain" if param == "gains" else param) is not None:
                spec[param] = AnyValue(required=info.required)  # cwl_eval's max_rel has no default
            else:
                spec[param] = Choices(NOT_PROVIDED)
        out.append(cls(**spec))
    return out


#: Families whose ir_measures provider reports no value for a query where it is
#: undefined (the accuracy provider), where the others score such a query 0 as
#: trec_eval does: evaluated under gpukit's convention, the undefined ones left out.
_LEAVES_OUT_UNDEFINED = frozenset({"Accuracy"})


class GpukitEvaluator(providers.Evaluator):
    """Qrels converted once; each run evaluated by :func:`gpukit.evaluate` (all measures in one pass).

    Qrels and runs of any ir_measures form are read as dict-of-dicts, the
    form the pytrec_eval provider reads (so a document given twice for a
    query keeps its last value, as there), then built by
    :meth:`gpukit.Qrels.from_dict` / :meth:`gpukit.Run.from_dict` in one pass;
    dicts are read as they are.
    """

    def __init__(self, measures: Iterable[Any], qrels: Any, device: Any = None) -> None:
        import gpukit

        judgments = ir_measures.util.QrelsConverter(qrels).as_dict_of_dict()
        self.qrels = gpukit.Qrels.from_dict(judgments, source="<ir_measures qrels>")
        self.pairs = [(m, to_gpukit(m)) for m in measures]
        self.device = device
        super().__init__([m for m, _ in self.pairs], set(map(str, judgments)))

    def iter_calc(self, run: Any) -> Iterator[Metric]:
        """ir_measures' rule (a qrels query without a value gets the measure's
        DEFAULT), except for the families whose provider leaves them out."""
        filled = [m for m, g in self.pairs if g.family not in _LEAVES_OUT_UNDEFINED]
        expected = set(itertools.product(filled, self.qrel_qids))
        for metric in self._iter_calc(run):
            expected.discard((metric.measure, metric.query_id))
            yield metric
        for measure, query_id in sorted(expected, key=lambda x: (str(x[0]), x[1])):
            yield Metric(query_id=query_id, measure=measure, value=measure.DEFAULT)

    def _iter_calc(self, run: Any) -> Iterator[Metric]:
        import gpukit

        gk_run = gpukit.Run.from_dict(ir_measures.util.RunConverter(run).as_dict_of_dict(), name="<ir_measures run>")
        for convention in ("trec_eval", "gpukit"):
            pairs = [(m, g) for m, g in self.pairs if (g.family in _LEAVES_OUT_UNDEFINED) == (convention == "gpukit")]
            if not pairs:
                continue
            report = gpukit.evaluate(self.qrels, gk_run, [g for _, g in pairs], convention=convention, complete=False,
                                     device=self.device)
            for measure, gk in pairs:
                result = report[gk]
                for qid, value, defined in zip(report.query_ids, result.per_query.tolist(), result.mask.tolist()):
                    if defined:
                        yield Metric(query_id=qid, measure=measure, value=value)


class GpukitProvider(providers.Provider):
    """gpukit: batched tensor evaluation (CPU or CUDA) of every registry family ir_measures names."""

    NAME = "gpukit"

    def __init__(self, device: Any = None) -> None:
        super().__init__()
        self.device = device
        self.SUPPORTED_MEASURES = _prototypes()

    def supports(self, measure: Any) -> bool:
        if not super().supports(measure):
            return False
        try:
            to_gpukit(measure)
        except GpukitError:
            return False
        return True

    def _evaluator(self, measures: Iterable[Any], qrels: Any) -> GpukitEvaluator:
        return GpukitEvaluator(measures, qrels, self.device)


def register(first: bool = True, device: Any = None) -> GpukitProvider:
    """Add the provider to ``ir_measures.providers.registry`` as ``ir_measures.gpukit``;
    ``first=True`` also puts it at the head of ``ir_measures.DefaultPipeline``.
    Calling it again replaces the earlier registration."""
    provider = GpukitProvider(device)
    providers.registry[provider.NAME] = provider
    ir_measures.gpukit = provider
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) != provider.NAME]
    if first:
        pipeline.insert(0, provider)
    return provider
