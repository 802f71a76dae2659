"""pytrec_eval's API on gpukit's kernels (pytrec-eval-terrier 0.5.11).

``RelevanceEvaluator(qrels, measures, relevance_level=1,
judged_docs_only_flag=False).evaluate(run)`` returns what pytrec_eval returns:
``{qid: {"ndcg_cut_10": ..., "P_5": ..., "map": ...}}`` under trec_eval's
output names, for the same topics, at the same score precision. Every measure
comes from gpukit's registry (:mod:`gpukit.families`) through the trec_eval
layer (:mod:`gpukit.trec_eval`), so a newly registered trec_eval
family is accepted here without changes.

pytrec_eval's conventions, reproduced:

* Measures: trec_eval roots (``map``, ``P``, ``ndcg_cut``), with parameters
  after ``.`` or ``_`` (``P.5,10``, ``ndcg_cut_10``); names of one root are
  merged (``{"P_5", "P.10", "P"}`` is ``P.10,5``: a bare root adds nothing
  next to given cutoffs) and parameters are read as trec_eval reads them
  (``P.5.5`` is ``P_5``; text after the numbers is dropped; parameters of a
  measure that takes none are ignored). Nicknames (``official``, ``set``,
  ``all_trec``...) expand to trec_eval's lists; members gpukit does not
  implement are left out with a warning, while naming one directly is an
  error. ``supported_measures`` is trec_eval's ``all_trec`` (pytrec_eval's
  definition); prefs and judgment-group measures are refused by name, as
  pytrec_eval refuses them (a grade dict has no preferences or groups).
* Output names: ``root_K`` / ``root_%3.2f`` for cutoff and level lists
  (``P_5``, ``iprec_at_recall_0.10``), the bare root otherwise (``ndcg``,
  ``11pt_avg`` whatever their parameters). String measures (``runid``,
  ``relstring``) are 0.0; ``gm_*`` values are trec_eval's stored
  ``log(max(v, 1e-5))`` (``compute_aggregated_measure`` takes ``exp`` of the
  mean); ``num_*`` are summed by it.
* Topics: the run's queries that have judgments, in the run's order; a qrels
  query with an empty judgment dict is dropped (as the maintained fork does);
  a run query with an empty dict scores as an empty ranking.
* Scores are compared as float32 (trec_eval's ``float sim``): 0.3 + 2e-8 ties
  with 0.3; ties go by document id, descending.

``install()`` puts this module into ``sys.modules["pytrec_eval"]`` so that
code doing ``import pytrec_eval`` afterwards gets it; ``uninstall()`` undoes
that. Never on by default.
"""
from __future__ import annotations

import collections
import dataclasses
import re
import sys
import types
import warnings
from typing import Any, Callable, Dict, Iterable, List, Mapping, Set

import numpy as np

from gpukit.io.nested_mapping import FlatMapping, flatten
from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import InputDuplicateError, InputFormatError, MeasureError, TrecEvalError, UsageTypeError
from gpukit.families import name_index
from gpukit.trec_eval.evaluation import evaluate_qrels
from gpukit.trec_eval.measure_names import NICKNAMES, STRING_MEASURES, MeasureRequest, Output, init_outputs, measure_table
from gpukit.trec_eval.options import Options

__version__ = "0.5.11"  # the pytrec_eval release whose API this reproduces

__all__ = [
    "parse_run",
    "parse_qrel",
    "supported_measures",
    "supported_nicknames",
    "RelevanceEvaluator",
    "compute_aggregated_measure",
    "install",
    "uninstall",
]

#: Measures trec_eval 10.0 added after the trec_eval that pytrec-eval-terrier
#: bundles: its nicknames do not list them.
NEWER_THAN_PYTREC_EVAL = frozenset({"unj", "rbp", "rbp_resid"})

#: pytrec_eval's parameter syntax after a root: ``.5,10`` or ``_5,10`` (numbers only).
_RE_BASE = r"{}[\._]([0-9]+(\.[0-9]+)?(,[0-9]+(\.[0-9]+)?)*)"


#: Judgments a trec_eval family may need beyond a qrels dict's grades, and
#: trec_eval's ``-R`` format that supplies them.
_OTHER_JUDGMENTS = {"prefs": "preference judgments (trec_eval -R prefs or qrels_prefs)",
                    "judgment_groups": "judgment groups (trec_eval -R qrels_jg)"}


def _implemented() -> set[str]:
    return set(name_index().trec) | set(STRING_MEASURES)


def _needs_other_judgments() -> dict[str, str]:
    """{root: what it needs} for the roots a ``{qid: {docno: grade}}`` dict cannot feed.

    trec_eval computes them only from a prefs or qrels_jg file (form_prefs_counts.c
    and form_res_rels_jg.c refuse a plain qrels); pytrec_eval, which builds its
    judgments from the dict, has no such input and rejects their names.
    """
    out = {}
    for root, (family, _) in name_index().trec.items():
        other = sorted(set(family.needs) & set(_OTHER_JUDGMENTS))
        if other:
            out[root] = _OTHER_JUDGMENTS[other[0]]
    return out


#: pytrec_eval's ``supported_measures`` is the ``all_trec`` nickname of the
#: trec_eval it is built on (pytrec_eval.cpp reads that list): every measure a
#: ``{qid: {docno: grade}}`` dict can feed. gpukit follows trec_eval 10.0, whose
#: ``all_trec`` also has ``rbp``, ``rbp_resid`` and ``unj``; the prefs and
#: judgment-group measures are not in it (they need other judgments) and are
#: refused by name, as pytrec_eval does. So ``RelevanceEvaluator(qrels,
#: supported_measures)`` evaluates them all.
_IMPLEMENTED = _implemented()
supported_measures: Set[str] = set(NICKNAMES["all_trec"]) & _IMPLEMENTED

#: pytrec_eval's nicknames, each restricted to the roots this build implements.
#: As in pytrec_eval, ``prefs``, ``all_prefs`` and ``qrels_jg`` list measures a
#: qrels dict cannot feed: naming them is an error.
supported_nicknames: Dict[str, Set[str]] = {
    name: {r for r in roots if r in _IMPLEMENTED and r not in NEWER_THAN_PYTREC_EVAL}
    for name, roots in NICKNAMES.items()
}


def _parse(lines: Iterable[str], source: str, layout: str, value_at: int, convert: Callable[[str], Any],
           kind: str, verb: str) -> dict:
    """``{qid: {docno: convert(field)}}`` from whitespace-separated lines of ``layout``."""
    fields = len(layout.split())
    out: dict = collections.defaultdict(dict)
    for number, line in enumerate(lines, 1):
        parts = line.strip().split()
        if len(parts) != fields:
            raise InputFormatError(source, number, f"expected {fields} fields ({layout}), got {len(parts)}")
        query_id, object_id, value = parts[0], parts[2], parts[value_at]
        if object_id in out[query_id]:
            raise InputDuplicateError(source, number, f"document {object_id!r} {verb} twice for query {query_id!r}")
        try:
            out[query_id][object_id] = convert(value)
        except ValueError:
            raise InputFormatError(source, number, f"{kind} {value!r} is not a number") from None
    return out


def parse_run(f_run: Iterable[str]) -> Dict[str, Dict[str, float]]:
    """``{qid: {docno: score}}`` from lines ``qid Q0 docno rank score tag``.

    As pytrec_eval: every line must have six fields; a repeated document is
    an error (here :class:`InputDuplicateError`, an AssertionError).
    """
    return _parse(f_run, getattr(f_run, "name", "<run>"), "qid Q0 docno rank score tag", 4, float, "score", "retrieved")


def parse_qrel(f_qrel: Iterable[str]) -> Dict[str, Dict[str, int]]:
    """``{qid: {docno: grade}}`` from lines ``qid 0 docno grade`` (integer grades).

    As pytrec_eval: four fields a line; a repeated document is an error
    (:class:`InputDuplicateError`, an AssertionError).
    """
    return _parse(f_qrel, getattr(f_qrel, "name", "<qrels>"), "qid 0 docno grade", 3, int, "grade", "judged")


def compute_aggregated_measure(measure: str, values: List[float]) -> float:
    """pytrec_eval's summary of per-query values: sum for ``num_*``, ``exp`` of
    the mean for ``gm_*`` (the values are logarithms), else the mean."""
    if measure.startswith("num_"):
        agg_fun: Callable[[List[float]], float] = np.sum
    elif measure.startswith("gm_"):

        def agg_fun(values: List[float]) -> float:
            return np.exp(np.sum(values) / len(values))
    else:
        agg_fun = np.mean
    return float(agg_fun(values))


# ----------------------------------------------------------------- measures
def _combine_measures(measures: Iterable[str]) -> tuple[dict[str, set[str]], list[str]]:
    """pytrec_eval's _expand_nicknames + _combine_measures: {root: parameter texts},
    and the nickname members this build does not compute (left out)."""
    table = measure_table()
    known = set(table)
    param_meas: dict[str, set[str]] = collections.defaultdict(set)
    named: set[str] = set()  # roots named directly, not through a nickname
    for measure in measures:
        if not isinstance(measure, str):
            raise UsageTypeError(f"a measure is a string, got {type(measure).__name__}")
        if measure in NICKNAMES:
            for root in NICKNAMES[measure]:
                if root not in NEWER_THAN_PYTREC_EVAL:
                    param_meas.setdefault(root, set())
            continue
        if measure in known:
            root = measure
        else:
            root = next((r for r in table if re.match(_RE_BASE.format(re.escape(r)), measure)), "")
            if not root:
                raise MeasureError(f"unsupported measure {measure}")
            param_meas[root].update(re.match(_RE_BASE.format(re.escape(root)), measure).group(1).split(","))
        param_meas.setdefault(root, set())
        named.add(root)
    other = _needs_other_judgments()
    refused = next((root for root in table if root in param_meas and root in other), None)
    if refused is not None:
        # pytrec_eval: ValueError "unsupported measure" (its supported_measures lacks them).
        raise MeasureError(f"unsupported measure {refused}: it needs {other[refused]}, "
                           "which a {qid: {docno: grade}} qrels dict does not carry "
                           "(gpukit.evaluate_prefs / gpukit.evaluate_judgment_groups compute it)")
    implemented = _implemented()
    missing = [root for root in table if root in param_meas and root not in implemented]
    direct = [root for root in missing if root in named]
    if direct:
        raise MeasureError(f"measure {direct[0]!r} is a trec_eval measure that gpukit does not implement yet")
    for root in missing:
        del param_meas[root]
    return param_meas, missing


def _outputs(param_meas: dict[str, set[str]], relevance_level: int) -> list[tuple[str, Output]]:
    """(pytrec_eval key, trec_eval output) per value, in trec_eval's table order."""
    index = name_index()
    out = []
    for root in measure_table():
        if root not in param_meas:
            continue
        params = {root: ",".join(sorted(param_meas[root]))} if param_meas[root] else {}
        try:
            outputs = init_outputs(MeasureRequest((root,), params), relevance_level)
        except TrecEvalError as exc:
            raise MeasureError(f"{root}: " + "; ".join(exc.lines)) from None
        listed = root in index.trec and index.trec[root][1].kind in ("cutoffs", "levels")
        # pytrec_eval names list measures by value (P_5), the others by root (ndcg, whatever the gains).
        out.extend((o.name if listed else root, o) for o in outputs)
    return out


# ------------------------------------------------------------------- inputs
def _flat(mapping: Mapping, what: str, grades: bool = False) -> FlatMapping:
    """pytrec_eval's input rules: string query and document ids, number values."""
    if not isinstance(mapping, Mapping):
        raise UsageTypeError(f"Argument {what} should be of type dictionary.")
    return flatten(mapping, what, strict=True, grades=grades)


class RelevanceEvaluator:
    """pytrec_eval's evaluator: judgments and measures fixed, any number of runs.

    Args:
        query_relevance: ``{qid: {docno: grade}}``; integer grades, negative
            = in the pool but unjudged; queries with no judgments are dropped.
        measures: trec_eval names, parameterised names and nicknames.
        relevance_level: minimum grade counted as relevant (>= 1).
        judged_docs_only_flag: trec_eval -J: documents without a judgment
            (absent, or a negative grade) are removed from each ranking first.
    """

    def __init__(
        self,
        query_relevance: Mapping[str, Mapping[str, int]],
        measures: Iterable[str],
        relevance_level: int = 1,
        judged_docs_only_flag: bool = False,
    ) -> None:
        if not isinstance(query_relevance, Mapping):
            raise UsageTypeError("Argument query_relevance should be of type dictionary.")
        if isinstance(relevance_level, bool) or not isinstance(relevance_level, int) or relevance_level < 1:
            raise UsageTypeError(f"Argument relevance_level should be positive, got {relevance_level!r}.")
        param_meas, skipped = _combine_measures(measures)
        if skipped:
            warnings.warn(
                f"gpukit does not implement {', '.join(skipped)} yet; left out of the nickname's measures",
                UserWarning,
                stacklevel=2,
            )
        self._keys = _outputs(param_meas, relevance_level)
        self._options = Options(complete=True, judged_only=bool(judged_docs_only_flag), relevance_level=relevance_level)
        flat = _flat(query_relevance, "query_relevance", grades=True)
        if flat.values.dtype.kind not in "biu":
            raise UsageTypeError(f"query_relevance: expected integer values, got {flat.values.dtype} ones")
        # Queries without judgments are dropped (pytrec_eval issue 57): flatten leaves them out.
        self._qrels: Qrels | None = None
        self._row: dict[str, int] = {}
        if len(flat.values):
            self._qrels = Qrels.from_flat_mapping(flat, source="<pytrec_eval qrels>")
            self._row = {q: i for i, q in enumerate(self._qrels.query_ids.to_pylist())}

    def evaluate(self, scores: Mapping[str, Mapping[str, float]]) -> Dict[str, Dict[str, float]]:
        """``{qid: {output name: value}}`` for the run's queries that have judgments.

        Only those queries' rankings are read (the others are ignored, as
        pytrec_eval does); their ids and scores must be strings and numbers.
        A NaN score is an error (trec_eval's order of NaN scores is that of
        its qsort on an inconsistent comparison: no defined ranking).
        """
        if not scores:
            return {}
        if not isinstance(scores, Mapping):
            raise UsageTypeError("Argument object scores should be of type dictionary.")
        bad = next((q for q in scores if not isinstance(q, str)), None)
        if bad is not None:
            raise UsageTypeError(f"run: expected string as key, got {type(bad).__name__}")
        row = self._row
        judged = {q: docs for q, docs in scores.items() if q in row}
        if not judged or not self._keys:
            return {q: {} for q in judged}
        assert self._qrels is not None
        flat = _flat(judged, "run")
        outputs = [o for _, o in self._keys]
        run = self._run(flat)
        try:
            ev = evaluate_qrels(self._options, self._qrels, run, "", outputs, None)
        except TrecEvalError as exc:
            raise MeasureError("; ".join(exc.lines)) from None
        # String measures (runid, relstring) have no number: pytrec_eval reports 0.0.
        zeros = [0.0] * len(ev.query_ids)
        columns = [(key, ev.per_query.get(o.name, zeros)) for key, o in self._keys]
        return {q: {key: column[row[q]] for key, column in columns} for q in judged}

    def _run(self, flat: FlatMapping) -> Run:
        if not len(flat.values):
            # Every ranking is empty: one placeholder row under a query the qrels lack (ignored).
            return Run.from_arrays([_absent_query(self._row)], ["-"], [0.0], name="<pytrec_eval run>")
        # float32 first: trec_eval keeps scores as float, so its ties are float32 ties
        # (a score past float32's range is its infinity there too: no warning).
        with np.errstate(over="ignore"):
            scores = flat.values.astype(np.float32).astype(np.float64)
        flat = dataclasses.replace(flat, values=scores)
        return Run.from_flat_mapping(flat, name="<pytrec_eval run>")


def _absent_query(known: Mapping[str, int]) -> str:
    name = "\x00gpukit-empty"
    while name in known:
        name += "\x00"
    return name


# ------------------------------------------------------------------ install
_saved: list[types.ModuleType | None] = []


def install() -> types.ModuleType:
    """Make ``import pytrec_eval`` return this module (until :func:`uninstall`).

    Call it before importing the code that imports pytrec_eval (a module that
    has already bound the real one keeps it). Returns this module.
    """
    this = sys.modules[__name__]
    current = sys.modules.get("pytrec_eval")
    if current is not this:
        _saved.append(current)
        sys.modules["pytrec_eval"] = this
    return this


def uninstall() -> None:
    """Undo :func:`install`: ``import pytrec_eval`` finds the real package again."""
    if sys.modules.get("pytrec_eval") is not sys.modules[__name__] or not _saved:
        return
    previous = _saved.pop()
    if previous is None:
        del sys.modules["pytrec_eval"]
    else:
        sys.modules["pytrec_eval"] = previous
