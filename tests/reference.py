"""A plain-Python reference for gpukit's measures (dicts, lists, math.log2).

Written from the trec_eval definitions, independently of gpukit's tensor code:
no torch, no numpy, one query at a time, the slowest obvious way. The parity
tests compare ``gpukit.evaluate`` against :func:`reference_evaluate`.

Definitions (per query):

* ranking: retrieved docs sorted by score descending, ties by doc id
  descending (Python ``str`` order, which is byte order for UTF-8 ids);
  ``max_depth`` truncates after sorting.
* grade of a ranked doc: its qrels grade, or ``None`` when absent from the
  qrels. judged = in qrels with grade >= 0; relevant(level) = judged and
  grade >= level. Negative grades are "in the pool but unjudged".
* R = qrels docs with grade >= level (retrieved or not); N = qrels docs with
  0 <= grade < level.
* P@k, R@k, R, Success@k, RR, RR@k, AP, AP@k, Rprec, Bpref, Judged@k, DCG,
  nDCG, NumRet, NumRel, NumRelRet as in trec_eval, Hits@k and F@k as ranx
  (see each function); nDCG and DCG with ``min_grade=N`` give grades below N
  gain 0 (ranx's -lN);
  further families in the ``reference_*.py`` modules imported at the end,
  each registered with :func:`register`.

Conventions:

* ``trec_eval``: topics = queries in run and qrels (``complete=True``: all
  qrels queries). Every topic enters the mean; zero denominators give 0.
  Count measures (NumRet, NumRel, NumRelRet) aggregate as a sum.
* ``gpukit``: topics = all qrels queries (``complete`` defaults to True).
  R = 0 omits R, R@k, AP, AP@k, Rprec and Bpref; IDCG = 0 omits nDCG. The
  mean is over evaluated queries (NaN if none).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

@dataclass(frozen=True)
class RefFamily:
    """What the reference knows of a family, independently of gpukit's registry.

    ``value(m, grades, judgments) -> (value, defined)`` computes one query;
    ``binary``: has a relevance level ``rel`` (default 1, or the evaluation's
    relevance_level); ``graded``: has ``gain``; ``params``: other parameters
    with their defaults; ``aggregate``: per convention, "mean" (default),
    "sum" or "gmean" (trec_eval: exp of the mean of log(max(v, 1e-5)))."""

    value: object
    cutoff: str = "none"  # "required", "optional", "none"
    binary: bool = False
    graded: bool = False
    params: tuple = ()
    aggregate: tuple = ()


FAMILIES: dict[str, RefFamily] = {}


def register(name: str, family: RefFamily) -> None:
    """Add a family's reference (modules reference_*.py call this)."""
    assert name not in FAMILIES, name
    FAMILIES[name] = family


_NAME_RE = re.compile(r"^(?P<family>[A-Za-z][A-Za-z0-9_]*)(?:\((?P<params>[^()]*)\))?(?:@(?P<cut>[0-9.]+))?$")


@dataclass(frozen=True)
class RefMeasure:
    family: str
    cutoff: object  # int rank cutoff, float level, or None
    rel: int | None  # binary relevance level (binary measures only)
    gain: object  # "linear", "exp" or {grade: gain} (graded measures only)
    params: tuple = ()  # other parameters, ((name, value), ...)

    def param(self, name: str):
        return dict(self.params)[name]


def _value(text: str):
    text = text.strip().strip("'\"")
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse(name: str, relevance_level: int | None = None) -> RefMeasure:
    """Parse the canonical names used by the tests (``nDCG(gains={1:3,2:9})@10``, ``RBP(p=0.5)``...)."""
    m = _NAME_RE.match(name.replace(" ", ""))
    if not m:
        raise ValueError(f"reference cannot parse {name!r}")
    family = m.group("family")
    if family not in FAMILIES:
        raise ValueError(f"unknown family in {name!r}")
    fam = FAMILIES[family]
    rel = None
    gain: object = None
    params = dict(fam.params)
    if m.group("params"):
        # gains={1:3,2:9} may sit among other parameters: split at the commas outside braces.
        for item in re.findall(r"[^,{]+(?:\{[^}]*\})?", m.group("params")):
            key, value = item.split("=", 1)
            gm = re.match(r"^\{(.*)\}$", value)
            if key == "gains" and gm:
                gain = {}
                for pair in gm.group(1).split(","):
                    k, v = pair.split(":")
                    gain[int(k)] = float(v)
            else:
                if key == "rel":
                    rel = int(value)
                elif key == "gain":
                    gain = value
                elif key == "dcg":
                    gain = {"log2": "linear", "exp-log2": "exp"}[value]
                elif key in params:
                    params[key] = _value(value)
                else:
                    raise ValueError(f"unknown parameter in {name!r}")
    if fam.binary and rel is None:
        rel = 1 if relevance_level is None else relevance_level
    if fam.graded and gain is None:
        gain = "linear"
    cut = m.group("cut")
    cutoff = None if cut is None else (int(cut) if cut.isdigit() else float(cut))
    return RefMeasure(family, cutoff, rel, gain, tuple(params.items()))


# ----------------------------------------------------------------- per query
def rank(docs: dict[str, float], max_depth: int | None = None, score_key=float) -> list[str]:
    """Doc ids by score descending, then doc id descending; cut at max_depth.

    ``score_key`` maps a score to the value compared (e.g. a float32 rounding).
    """
    # Two stable sorts: id descending first, then score descending.
    ids = sorted(docs, reverse=True)
    ids = sorted(ids, key=lambda d: score_key(docs[d]), reverse=True)
    if max_depth is not None:
        ids = ids[:max_depth]
    return ids


def _gain(grade: int | None, gain: object) -> float:
    if grade is None or grade < 0:
        return 0.0
    if isinstance(gain, dict) and grade in gain:
        return float(gain[grade])
    if gain == "exp":
        return float(2**grade - 1) if grade > 0 else 0.0
    return float(grade) if grade > 0 else 0.0


def _dcg(gains: list[float], k: int | None) -> float:
    total = 0.0
    for i, g in enumerate(gains[:k] if k is not None else gains, start=1):
        total += g / math.log2(i + 1)
    return total


def relevant(grades: list[int | None], level: int) -> list[bool]:
    """Ranked docs judged with grade >= level."""
    return [g is not None and g >= 0 and g >= level for g in grades]


def counts(judgments: dict[str, int], level: int) -> tuple[int, int]:
    """(R, N): judged docs with grade >= level, and with 0 <= grade < level."""
    R = sum(1 for g in judgments.values() if g >= level)
    N = sum(1 for g in judgments.values() if 0 <= g < level)
    return R, N


def _p(m, grades, judgments):
    return sum(relevant(grades, m.rel)[: m.cutoff]) / m.cutoff, True


def _r(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    rel = relevant(grades, m.rel)
    hits = sum(rel[: m.cutoff]) if m.cutoff is not None else sum(rel)
    return (hits / R if R else 0.0), R > 0


def _success(m, grades, judgments):
    return (1.0 if any(relevant(grades, m.rel)[: m.cutoff]) else 0.0), True


def _rr(m, grades, judgments):
    for i, r in enumerate(relevant(grades, m.rel), start=1):
        if r:
            return (1.0 / i if m.cutoff is None or i <= m.cutoff else 0.0), True
    return 0.0, True


def _ap(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    total, hits = 0.0, 0
    for i, r in enumerate(relevant(grades, m.rel), start=1):
        if m.cutoff is not None and i > m.cutoff:
            break
        if r:
            hits += 1
            total += hits / i
    return (total / R if R else 0.0), R > 0


def _rprec(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    return (sum(relevant(grades, m.rel)[:R]) / R if R else 0.0), R > 0


def _bpref(m, grades, judgments):
    R, N = counts(judgments, m.rel)
    if not R:
        return 0.0, False
    total, nonrel_above = 0.0, 0
    for g, r in zip(grades, relevant(grades, m.rel)):
        if r:
            if nonrel_above == 0:
                total += 1.0
            else:
                total += 1.0 - min(nonrel_above, R) / min(N, R)
        elif g is not None and g >= 0:  # judged non-relevant
            nonrel_above += 1
    return total / R, True


def _judged(m, grades, judgments):
    """ir_measures' Judged@k: documents in the qrels (any grade) over min(k, |ranking|); 0 for no ranking."""
    read = grades[: m.cutoff]
    return (sum(1 for g in read if g is not None) / len(read) if read else 0.0), True


def _leveled_gain(m, grade: int | None) -> float:
    """The gain of a grade where grades below ``min_grade`` (ranx's -l) gain 0."""
    return 0.0 if grade is not None and grade < int(m.param("min_grade")) else _gain(grade, m.gain)


def _hits(m, grades, judgments):
    return float(sum(relevant(grades, m.rel)[: m.cutoff])), True


def _f(m, grades, judgments):
    """F@k: the weighted harmonic mean of P@k (hits / k) and R@k (hits / R)."""
    R, _ = counts(judgments, m.rel)
    hits = sum(relevant(grades, m.rel)[: m.cutoff])
    if not R or not hits:
        return 0.0, R > 0
    p, r, beta = hits / m.cutoff, hits / R, float(m.param("beta"))
    return (beta + 1) * p * r / (beta * p + r), True


def _ndcg(m, grades, judgments):
    dcg = _dcg([_leveled_gain(m, g) for g in grades], m.cutoff)
    ideal = sorted((_leveled_gain(m, g) for g in judgments.values() if g >= 0), reverse=True)
    ideal = [g for g in ideal if g > 0]
    idcg = _dcg(ideal, m.cutoff)
    return (dcg / idcg if idcg > 0 else 0.0), idcg > 0


def _accuracy(m, grades, judgments):
    """ir_measures' Accuracy@k: over the (relevant, non-relevant) pairs of the top k, the share ranked
    relevant first; an unjudged document has grade 0 (so with rel <= 0 it is relevant). Defined where
    the top k holds both kinds."""
    top = [0 if g is None else g for g in grades[: m.cutoff]]
    relevant_docs = [i for i, g in enumerate(top) if g >= m.rel]
    nonrel = [i for i, g in enumerate(top) if g < m.rel]
    pairs = [(r, n) for r in relevant_docs for n in nonrel]
    if not pairs:
        return 0.0, False
    return sum(1 for r, n in pairs if r < n) / len(pairs), True


_SUM = (("trec_eval", "sum"),)
register("Accuracy", RefFamily(_accuracy, "optional", binary=True))
register("P", RefFamily(_p, "required", binary=True))
register("R", RefFamily(_r, "optional", binary=True))
register("Rprec", RefFamily(_rprec, binary=True))
register("RR", RefFamily(_rr, "optional", binary=True))
register("Success", RefFamily(_success, "required", binary=True))
register("AP", RefFamily(_ap, "optional", binary=True))
register("Bpref", RefFamily(_bpref, binary=True))
register("Hits", RefFamily(_hits, "optional", binary=True))
register("F", RefFamily(_f, "required", binary=True, params=(("beta", 1.0),)))
_MIN_GRADE = (("min_grade", 0),)
register("nDCG", RefFamily(_ndcg, "optional", graded=True, params=_MIN_GRADE))
register("DCG", RefFamily(lambda m, g, j: (_dcg([_leveled_gain(m, x) for x in g], m.cutoff), True), "optional",
                          graded=True, params=_MIN_GRADE))
register("Judged", RefFamily(_judged, "optional"))
register("NumRet", RefFamily(lambda m, g, j: (float(len(g)), True), aggregate=_SUM))
register("NumRel", RefFamily(lambda m, g, j: (float(counts(j, m.rel)[0]), True), binary=True, aggregate=_SUM))
register("NumRelRet", RefFamily(lambda m, g, j: (float(sum(relevant(g, m.rel))), True), binary=True, aggregate=_SUM))


def query_value(m: RefMeasure, grades: list[int | None], judgments: dict[str, int]) -> tuple[float, bool]:
    """(value, defined) of one measure for one query.

    ``grades``: grade of each ranked doc (None = not in qrels), in rank order.
    ``judgments``: the query's qrels ({doc: grade}), possibly empty.
    ``defined`` is False where the gpukit convention omits the query.
    """
    return FAMILIES[m.family].value(m, grades, judgments)


def aggregate(m: RefMeasure, kept: list[float], convention: str) -> float:
    how = dict(FAMILIES[m.family].aggregate).get(convention, "mean")
    if how == "sum":
        return float(sum(kept))
    if not kept:
        return float("nan")
    if how == "gmean":
        return math.exp(sum(math.log(max(v, 1e-5)) for v in kept) / len(kept))
    return sum(kept) / len(kept)


# ------------------------------------------------------------------- driver
class Ranked(list):
    """The ranked docs' grades (a plain list to every family), also holding the docs
    and every doc judged for any query (BEIR's annotated corpus, read by Hole@k)."""

    def __init__(self, grades: list, docs: list[str], annotated: frozenset[str]):
        super().__init__(grades)
        self.docs, self.annotated = docs, annotated


def topics(qrels: dict, run: dict, convention: str, complete: bool | None) -> list[str]:
    if complete is None:
        complete = convention == "gpukit"
    qs = set(qrels) if complete else set(qrels) & set(run)
    return sorted(qs, key=lambda q: q.encode("utf-8"))


def reference_evaluate(
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    measure_names: list[str],
    convention: str = "gpukit",
    complete: bool | None = None,
    max_depth: int | None = None,
    relevance_level: int | None = None,
    score_key=float,
) -> dict:
    """Evaluate like ``gpukit.evaluate`` but slowly and obviously.

    Returns ``{"query_ids": [...], "measures": {name: {"per_query": {qid:
    value or None (omitted)}, "mean": float, "evaluated": int, "omitted":
    int}}}``.
    """
    assert convention in ("gpukit", "trec_eval")
    qids = topics(qrels, run, convention, complete)
    rankings = {}
    annotated = frozenset(d for judged in qrels.values() for d in judged)
    for q in qids:
        judg = qrels.get(q, {})
        ranked = rank(run.get(q, {}), max_depth, score_key)
        rankings[q] = Ranked([judg.get(d) for d in ranked], docs=ranked, annotated=annotated)
    out = {"query_ids": qids, "measures": {}}
    for name in measure_names:
        m = parse(name, relevance_level)
        per_query: dict[str, float | None] = {}
        for q in qids:
            value, defined = query_value(m, rankings[q], qrels.get(q, {}))
            if convention == "gpukit" and not defined:
                per_query[q] = None
            else:
                per_query[q] = value
        kept = [v for v in per_query.values() if v is not None]
        mean = aggregate(m, kept, convention)
        out["measures"][name] = {
            "per_query": per_query,
            "mean": mean,
            "evaluated": len(kept),
            "omitted": len(qids) - len(kept),
        }
    return out


# Further families' references register themselves here (one module per group).
import reference_trec_binary  # noqa: E402,F401
import reference_trec_graded  # noqa: E402,F401
import reference_user_models  # noqa: E402,F401
import reference_prefs  # noqa: E402,F401
import reference_evidence  # noqa: E402,F401
import reference_diversity  # noqa: E402,F401
import reference_compat  # noqa: E402,F401
import reference_cwl  # noqa: E402,F401
