"""Every name ir_measures' parser accepts gives ir_measures' value in gpukit, or a one-line error.

The sweep walks ``ir_measures.measures.registry`` (aliases included: MAP,
MRR, NDCG, BPref, RPrec, Precision, Recall, SetRelP, NumRelRet, α_nDCG ...)
and, for each measure, its SUPPORTED_PARAMS: the defaults, then each
parameter with a few values, with and without a cutoff. Each name is parsed
by ``ir_measures.parse_measure`` and by gpukit, and computed by ir_measures'
default pipeline (``ir_measures.iter_calc``: the first provider that supports
it) and by ``gpukit.evaluate`` (trec_eval convention: queries of both the run
and the qrels; an undefined value scores 0, as the providers score it), and
per-query values are compared to 1e-9 (gdeval, ir_measures' provider of ERR@k
and nDCG(dcg='exp-log2')@k, prints 5 decimals: 5.1e-6 there). The
registered compat provider (gpukit.compat.ir_measures) must give the same.

Inputs: trec_eval's test fixtures (qrels.test, binary, and qrels.rel_level,
grades -1..4, with results.test) and a random graded collection (negative
grades, R = 0 queries, unjudged retrieved documents, qrels queries the run
lacks, a run query without judgments). The providers break score ties in
different ways (pytrec_eval as trec_eval, by doc id descending like gpukit;
cwl_eval, accuracy and the judged provider in input or id-ascending order),
so every run is handed over in gpukit's ranking order with distinct scores.

Names a default provider cannot compute (ERR or RBP without rel, whose
providers are gdeval with a cutoff and trectools, outside the default
pipeline) are only required to parse in gpukit. The diversity measures need
subtopic qrels (``query subtopic doc grade``): gpukit.evaluate on ordinary
qrels refuses them with an error naming the input they need; they are
compared against pyndeval in test_pyndeval_diversity, and here only their
names are required to parse.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest
from fixture_paths import TESTS
from random_collections import random_graded_collection
from reference import rank

import gpukit
from gpukit.errors import MeasureError

ir_measures = pytest.importorskip("ir_measures")
from ir_measures.measures.base import _NOT_PROVIDED  # noqa: E402

logging.getLogger("ir_measures").setLevel(logging.ERROR)
logging.getLogger("ir_measures.cwl_eval").setLevel(logging.ERROR)

DATA = TESTS / "data" / "trec_eval"
TOL = 1e-9
GDEVAL_TOL = 5.1e-6  # gdeval prints %.5f

#: A few values of every parameter ir_measures documents (None: leave it out).
VALUES = {
    "cutoff": [None, 1, 20], "rel": [None, 0, 2], "judged_only": [None, False, True],
    "dcg": [None, "exp-log2"], "gains": [None, {0: 0, 1: 1, 2: 3, 3: 7}],
    "p": [None, 0.5, 0.99], "normalize": [None, False], "recall": [0.0, 0.3, 1.0],
    "beta": [None, 2.0], "relative": [None, True], "T": [None, 2.0], "min_rel": [None, 1],
    "max_rel": [2, 4], "alpha": [None, 0.3],
}
#: Values ir_measures' required parameters take when another one is varied.
REQUIRED = {"cutoff": 5, "recall": 0.3, "max_rel": 3}
#: Measures read from subtopic judgments (ndeval's qrels): compared in test_pyndeval_diversity.
SUBTOPIC = {"alpha_nDCG", "alpha_DCG", "α_nDCG", "α_DCG", "ERR_IA", "nERR_IA", "P_IA", "AP_IA", "MAP_IA", "NRBP",
            "nNRBP", "StRecall"}
DIVERSITY_VALUES = {"beta": [None, 0.3]}  # ndeval's beta is a persistence in [0, 1]


def _literal(value) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{v}" for k, v in value.items()) + "}"
    return repr(value)


def _name(key: str, args: dict) -> str:
    args = dict(args)
    at = args.pop("cutoff", None) if "cutoff" in args else args.pop("recall", None)
    text = key + ("(" + ",".join(f"{k}={_literal(v)}" for k, v in args.items()) + ")" if args else "")
    return text if at is None else f"{text}@{at}"


def sweep_names(key: str) -> list[str]:
    """The measure with its defaults, then each parameter varied alone, with and without a cutoff."""
    params = ir_measures.measures.registry[key].SUPPORTED_PARAMS
    values = {**VALUES, **(DIVERSITY_VALUES if key in SUBTOPIC else {})}
    required = {p: REQUIRED[p] for p, info in params.items() if info.required}
    out = set()
    for varied in [None, *params]:
        for value in values[varied] if varied else [None]:
            for cut in ([None, 5] if "cutoff" in params and varied != "cutoff" else [None]):
                args = dict(required)
                if cut is not None:
                    args["cutoff"] = cut
                if value is not None:
                    args[varied] = value
                elif varied in args and not params[varied].required:
                    del args[varied]
                out.add(_name(key, args))
    return sorted(out)


#: Spellings ir_measures' parser (Python's ast) accepts besides the plain ones.
SPELLINGS = ["nDCG @ 10", "P(rel=2) @ 5", 'nDCG(dcg="exp-log2")@10', "AP(rel=2, judged_only=False)",
             "SetF( beta = 0.5 )", "RBP(rel=1, p=0.8)", "α_nDCG@5", "NumRet(rel=1)"]
NAMES = sorted({n for key in ir_measures.measures.registry for n in sweep_names(key)} | set(SPELLINGS))


def _family_key(name: str) -> str:
    return ir_measures.parse_measure(name).NAME


# ------------------------------------------------------------- collections
def _read_qrels(path: Path) -> dict:
    out: dict = {}
    for line in path.read_text().splitlines():
        q, _, d, g = line.split()
        out.setdefault(q, {})[d] = int(g)
    return out


def _read_run(path: Path) -> dict:
    out: dict = {}
    for line in path.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        out.setdefault(q, {})[d] = float(s)
    return out


def _in_gpukit_order(run: dict) -> dict:
    """Distinct scores in gpukit's ranking order (score descending, doc id descending)."""
    return {q: {d: float(100_000 - i) for i, d in enumerate(rank(docs))} for q, docs in run.items()}


COLLECTIONS = {
    "trec_eval binary": lambda: (_read_qrels(DATA / "qrels.test"), _read_run(DATA / "results.test")),
    "trec_eval graded": lambda: (_read_qrels(DATA / "qrels.rel_level"), _read_run(DATA / "results.test")),
    "random graded": random_graded_collection,
}


# ---------------------------------------------------------------- anchors
def _supports(provider, measure) -> bool:
    try:
        return provider.is_available() and provider.supports(measure)
    except AssertionError:  # ir_measures' validate_params: a value its definition refuses (SDCG's dcg='exp-log2')
        return False


def _provider_of(measure):
    for provider in ir_measures.DefaultPipeline.providers:
        # gpukit's own provider is no anchor (another test may have registered it first).
        if getattr(provider, "NAME", None) != "gpukit" and _supports(provider, measure):
            return provider
    return None


def _ir_measures_values(measure, qrels, run):
    """Per-query values from the default pipeline, or None where it computes nothing."""
    provider = _provider_of(measure)
    if provider is None:
        return None, None
    try:
        if provider.NAME == "accuracy":
            return _accuracy_values(provider, measure, qrels, run), provider.NAME
        return {m.query_id: float(m.value) for m in provider.iter_calc([measure], qrels, run)}, provider.NAME
    except Exception:  # noqa: BLE001 - e.g. pytrec_eval refuses relevance_level=0: ir_measures gives no value
        return None, provider.NAME


def _accuracy_values(provider, measure, qrels, run):
    """The accuracy provider divides by zero on a query whose top k holds no non-relevant document;
    such a query has no value (and none without a relevant one): one query at a time."""
    out = {}
    for q in run:
        try:
            out.update({m.query_id: float(m.value) for m in provider.iter_calc([measure], qrels, {q: run[q]})})
        except ZeroDivisionError:
            pass
    return out


def _gpukit_values(name, collection, convention="trec_eval"):
    qrels, run = collection.gpukit
    report = gpukit.evaluate(qrels, run, [name], convention=convention)
    (measure,) = report.results
    return dict(zip(report.query_ids, report[measure].per_query.tolist()))


class Collection(tuple):
    """(qrels, run) dicts, with their gpukit objects built once."""

    gpukit: tuple


@pytest.fixture(scope="module", params=sorted(COLLECTIONS))
def collection(request):
    qrels, run = COLLECTIONS[request.param]()
    out = Collection((qrels, _in_gpukit_order(run)))
    out.gpukit = (gpukit.Qrels.from_dict(out[0]), gpukit.Run.from_dict(out[1]))
    return out


#: Names ir_measures computes that gpukit refuses, with the alternative its error must name.
REFUSED = {"judged_only=True": "gpukit trec_eval -J"}
#: Known gaps, each a strict xfail (it fails the suite once fixed, so the mark goes with the fix).
GAPS: dict[str, str] = {}


def _same_iprec_count(measure, qrels: dict, q: str) -> bool:
    """A known gap: gpukit's IPrec@r follows trec_eval 10.0, lround(r * R) relevant documents, ir_measures'
    pytrec_eval provider bundles trec_eval 9, floor(r * R + 0.9); compared where both counts agree."""
    rel = measure["rel"] if measure["rel"] is not _NOT_PROVIDED else 1
    x = measure["recall"] * sum(1 for g in qrels.get(q, {}).values() if g >= rel)
    return math.floor(x + 0.9) == math.floor(x) + (x - math.floor(x) >= 0.5)


def _compare(name, want, got, tol, queries):
    assert queries, name
    for q in queries:
        assert abs(got[q] - want[q]) <= tol, f"{name} query {q}: ir_measures {want[q]!r}, gpukit {got[q]!r}"


def test_sweep_covers_every_registered_measure_and_parameter():
    keys = {_family_key(n) for n in NAMES}
    assert {m.NAME for m in ir_measures.measures.registry.values()} <= keys
    for key, measure in ir_measures.measures.registry.items():
        for param in measure.SUPPORTED_PARAMS:
            assert any(f"{param}=" in n or (param in ("cutoff", "recall") and "@" in n)
                       for n in sweep_names(key)), (key, param)


def _params(names):
    """Names as parameters, the known gaps (GAPS) marked as strict xfails."""
    out = []
    for n in names:
        key = _family_key(n)
        gap = GAPS.get(key) if "judged_only=True" not in n else None
        out.append(pytest.param(n, marks=pytest.mark.xfail(reason=gap, strict=True)) if gap else n)
    return out


@pytest.mark.parametrize("name", _params(n for n in NAMES if _family_key(n) not in SUBTOPIC))
def test_name_gives_ir_measures_value(name, collection):
    qrels, run = collection
    measure = ir_measures.parse_measure(name)
    want, provider = _ir_measures_values(measure, qrels, run)
    try:
        got = _gpukit_values(name, collection)
    except MeasureError as exc:
        assert "\n" not in str(exc)
        refused = [alt for flag, alt in REFUSED.items() if flag in name.replace(" ", "")]
        if refused:
            assert refused[0] in str(exc), f"{name}: the error does not name {refused[0]!r}: {exc}"
            return
        assert want is None, f"{name}: ir_measures ({provider}) computes it, gpukit refuses it: {exc}"
        return
    if want is None:
        return  # no default provider computes it; gpukit's value is checked by its own tests
    tol = GDEVAL_TOL if provider == "gdeval" else TOL
    if provider == "accuracy":
        # ir_measures leaves out the queries without a value; gpukit omits them under its convention.
        defined = _gpukit_values(name, collection, convention="gpukit")
        assert {q for q, v in defined.items() if not math.isnan(v)} == set(want), name
        if want:  # Accuracy@1 has no value anywhere: a top 1 holds no pair
            _compare(name, want, defined, tol, sorted(want))
        return
    queries = sorted(set(qrels) & set(run))
    if provider == "pytrec_eval" and measure.NAME == "IPrec":
        queries = [q for q in queries if _same_iprec_count(measure, qrels, q)]
    _compare(name, want, got, tol, queries)
    # Under gpukit's convention a query's value is the same wherever it is defined.
    for q, v in _gpukit_values(name, collection, convention="gpukit").items():
        if q in queries and not math.isnan(v):
            assert abs(v - want[q]) <= tol, f"{name} query {q} (gpukit convention)"


@pytest.mark.parametrize("name", [n for n in NAMES if _family_key(n) not in SUBTOPIC])
def test_compat_provider_gives_ir_measures_value(name, collection):
    from gpukit.compat.ir_measures import GpukitProvider

    qrels, run = collection
    measure = ir_measures.parse_measure(name)
    ours = GpukitProvider()
    if not _supports(ours, measure):
        pytest.skip(f"the compat provider leaves {name} to the other providers")
    want, provider = _ir_measures_values(measure, qrels, run)
    if want is None:
        pytest.skip(f"no default provider computes {name}")
    got = {m.query_id: float(m.value) for m in ours.iter_calc([measure], qrels, run)}
    tol = GDEVAL_TOL if provider == "gdeval" else TOL
    if provider == "accuracy":
        assert set(got) == set(want), name  # the queries without a value are left out, as the provider does
        if not want:
            return  # Accuracy@1: a top 1 holds no pair
    _compare(name, want, got, tol, sorted(want))


@pytest.mark.parametrize("name", [n for n in NAMES if _family_key(n) in SUBTOPIC])
def test_subtopic_measure_names_parse(name):
    """Diversity measures need subtopic qrels (compared with pyndeval in test_pyndeval_diversity):
    every name ir_measures can compute parses in gpukit to the same family and parameters."""
    measure = ir_measures.parse_measure(name)
    if "cutoff" in measure.SUPPORTED_PARAMS and measure.params.get("cutoff", _NOT_PROVIDED) is _NOT_PROVIDED:
        # pyndeval has no uncut alpha-nDCG, ERR-IA, P-IA, StRecall (int(NOT_PROVIDED) fails): gpukit asks for a cutoff.
        with pytest.raises(MeasureError, match="needs a cutoff"):
            gpukit.parse_measures([name])
        return
    (parsed,) = gpukit.parse_measures([name])
    for param, value in measure.params.items():
        if param == "cutoff":
            assert parsed.cutoff == value, name
        elif param != "judged_only" or value:
            assert parsed.param(param) == pytest.approx(value), (name, param)


def test_cli_takes_binary_rbp(capsys):
    """``gpukit eval -m 'RBP(p=0.8,rel=1)'``: ir_measures' binary RBP (cwl_eval), on trec_eval's fixture."""
    import json

    from gpukit.cli import main

    qrels, run = _read_qrels(DATA / "qrels.test"), _read_run(DATA / "results.test")
    want = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.parse_measure("RBP(p=0.8,rel=1)")], qrels,
                                                                 _in_gpukit_order(run))}
    assert main(["eval", str(DATA / "qrels.test"), str(DATA / "results.test"), "-m", "RBP(p=0.8,rel=1)", "--per-query",
                 "--format", "json", "--convention", "trec_eval"]) == 0
    (out,) = json.loads(capsys.readouterr().out)
    got = {q: values["RBP(p=0.8,rel=1)"] for q, values in out["per_query"].items()}
    assert sorted(got) == sorted(want) and all(abs(got[q] - want[q]) <= TOL for q in want), (got, want)
    assert max(want.values()) > 0
