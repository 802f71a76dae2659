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
  nDCG, NumRet, NumRel, NumRelRet as in trec_eval (see each function).

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

# family -> (requires cutoff, accepts cutoff, binary (rel level), graded (gain))
FAMILIES = {
    "P": (True, True, True, False),
    "R": (False, True, True, False),
    "Rprec": (False, False, True, False),
    "RR": (False, True, True, False),
    "Success": (True, True, True, False),
    "AP": (False, True, True, False),
    "Bpref": (False, False, True, False),
    "nDCG": (False, True, False, True),
    "DCG": (False, True, False, True),
    "Judged": (True, True, False, False),
    "NumRet": (False, False, False, False),
    "NumRel": (False, False, True, False),
    "NumRelRet": (False, False, True, False),
}
COUNT_FAMILIES = {"NumRet", "NumRel", "NumRelRet"}
# Omitted (gpukit convention) when R = 0 ...
NEEDS_R = {"R", "AP", "Rprec", "Bpref"}
# ... or when IDCG = 0.
NEEDS_IDCG = {"nDCG"}

_NAME_RE = re.compile(r"^(?P<family>[A-Za-z]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<cut>\d+))?$")


@dataclass(frozen=True)
class RefMeasure:
    family: str
    cutoff: int | None
    rel: int | None  # binary relevance level (binary measures only)
    gain: object  # "linear", "exp" or {grade: gain} (graded measures only)


def parse(name: str, relevance_level: int | None = None) -> RefMeasure:
    """Parse the canonical names used by the tests (``nDCG(gains={1:3,2:9})@10``...)."""
    m = _NAME_RE.match(name.replace(" ", ""))
    if not m:
        raise ValueError(f"reference cannot parse {name!r}")
    family = m.group("family")
    if family not in FAMILIES:
        raise ValueError(f"unknown family in {name!r}")
    _, _, binary, graded = FAMILIES[family]
    rel = None
    gain: object = None
    if m.group("params"):
        params = m.group("params")
        gm = re.match(r"^gains=\{(.*)\}$", params)
        if gm:
            gain = {}
            for pair in gm.group(1).split(","):
                k, v = pair.split(":")
                gain[int(k)] = float(v)
        else:
            for item in params.split(","):
                key, value = item.split("=")
                if key == "rel":
                    rel = int(value)
                elif key == "gain":
                    gain = value
                elif key == "dcg":
                    gain = {"log2": "linear", "exp-log2": "exp"}[value]
                else:
                    raise ValueError(f"unknown parameter in {name!r}")
    if binary and rel is None:
        rel = 1 if relevance_level is None else relevance_level
    if graded and gain is None:
        gain = "linear"
    cutoff = int(m.group("cut")) if m.group("cut") else None
    return RefMeasure(family, cutoff, rel, gain)


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


def query_value(m: RefMeasure, grades: list[int | None], judgments: dict[str, int]) -> tuple[float, bool]:
    """(value, defined) of one measure for one query.

    ``grades``: grade of each ranked doc (None = not in qrels), in rank order.
    ``judgments``: the query's qrels ({doc: grade}), possibly empty.
    ``defined`` is False where the gpukit convention omits the query.
    """
    k = m.cutoff
    n = len(grades)
    fam = m.family
    if fam in FAMILIES and FAMILIES[fam][2]:
        level = m.rel
        rel = [g is not None and g >= 0 and g >= level for g in grades]
        R = sum(1 for g in judgments.values() if g >= level)
        N = sum(1 for g in judgments.values() if 0 <= g < level)
    if fam == "P":
        return sum(rel[:k]) / k, True
    if fam == "R":
        hits = sum(rel[:k]) if k is not None else sum(rel)
        return (hits / R if R else 0.0), R > 0
    if fam == "Success":
        return (1.0 if any(rel[:k]) else 0.0), True
    if fam == "RR":
        for i, r in enumerate(rel, start=1):
            if r:
                return (1.0 / i if k is None or i <= k else 0.0), True
        return 0.0, True
    if fam == "AP":
        total, hits = 0.0, 0
        for i, r in enumerate(rel, start=1):
            if k is not None and i > k:
                break
            if r:
                hits += 1
                total += hits / i
        return (total / R if R else 0.0), R > 0
    if fam == "Rprec":
        return (sum(rel[:R]) / R if R else 0.0), R > 0
    if fam == "Bpref":
        if not R:
            return 0.0, False
        total, nonrel_above = 0.0, 0
        for g, r in zip(grades, rel):
            if r:
                if nonrel_above == 0:
                    total += 1.0
                else:
                    total += 1.0 - min(nonrel_above, R) / min(N, R)
            elif g is not None and g >= 0:  # judged non-relevant
                nonrel_above += 1
        return total / R, True
    if fam == "Judged":
        return sum(1 for g in grades[:k] if g is not None and g >= 0) / k, True
    if fam == "NumRet":
        return float(n), True
    if fam == "NumRel":
        return float(R), True
    if fam == "NumRelRet":
        return float(sum(rel)), True
    if fam in ("DCG", "nDCG"):
        dcg = _dcg([_gain(g, m.gain) for g in grades], k)
        if fam == "DCG":
            return dcg, True
        ideal = sorted((_gain(g, m.gain) for g in judgments.values() if g >= 0), reverse=True)
        ideal = [g for g in ideal if g > 0]
        idcg = _dcg(ideal, k)
        return (dcg / idcg if idcg > 0 else 0.0), idcg > 0
    raise ValueError(fam)


# ------------------------------------------------------------------- driver
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
    for q in qids:
        judg = qrels.get(q, {})
        ranked = rank(run.get(q, {}), max_depth, score_key)
        rankings[q] = [judg.get(d) for d in ranked]
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
        if convention == "trec_eval" and m.family in COUNT_FAMILIES:
            mean = float(sum(kept))
        else:
            mean = sum(kept) / len(kept) if kept else float("nan")
        out["measures"][name] = {
            "per_query": per_query,
            "mean": mean,
            "evaluated": len(kept),
            "omitted": len(qids) - len(kept),
        }
    return out
