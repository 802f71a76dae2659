"""Plain-Python reference for the diversity (intent-aware) families.

Written from ndeval.c's definitions (TREC Web track, version 4.5), one query
at a time, with lists and dicts: no torch, no numpy. These families read
judgments per subtopic, not ordinary qrels, so the registry-wide reference
test cannot drive them; their records are registered in :mod:`reference`
with a value function that refuses to run there, and
:func:`reference_diversity_evaluate` is driven by tests/families/test_diversity.py.

Definitions (per query):

* ranking: score descending, ties by docno descending; ``max_depth`` cuts
  after sorting; ``judged_only`` then drops docs judged for no subtopic.
* rel_s(d): the doc's grade for subtopic s is >= rel. n_sub: subtopics with
  at least one such doc; R_s: docs relevant to s.
* gain at rank i: g_i = sum_s rel_s(d_i) * (1 - alpha)^(docs relevant to s above i).
* ideal: greedy -- repeatedly the unpicked judged doc of largest gain given
  the picks so far, ties by the largest docno.
* alpha-DCG@k / ERR-IA@k: sum_{i<=k} g_i * w_i over n_sub * sum_{i<=k}
  (1-alpha)^(i-1) w_i, w_i = 1/log2(i+1) or 1/i; at k = 1 just g_1.
* alpha-nDCG@k / nERR-IA@k: sum_{i<=k} g_i w_i over the same for the ideal
  (0 when the run's sum is 0).
* NRBP: (1 - (1-alpha) beta) / n_sub * sum_i g_i beta^(i-1); nNRBP: over
  the ideal's NRBP.
* P-IA@k: sum_{i<=k} sum_s rel_s(d_i) / (k n_sub); StRecall@k: subtopics
  covered by the top k / n_sub; AP-IA: mean over subtopics with R_s > 0 of
  AP_s, divided by n_sub.
* n_sub = 0: undefined (gpukit convention: omitted), 0 under trec_eval's.
"""
from __future__ import annotations

import math

import reference
from reference import RefFamily

_CUT = ("ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG", "P_IA", "StRecall")
_PARAMS = {
    "alpha_nDCG": (("alpha", 0.5), ("judged_only", False)),
    "alpha_DCG": (("alpha", 0.5), ("judged_only", False)),
    "ERR_IA": (("alpha", 0.5), ("judged_only", False)),
    "nERR_IA": (("alpha", 0.5), ("judged_only", False)),
    "NRBP": (("alpha", 0.5), ("beta", 0.5)),
    "nNRBP": (("alpha", 0.5), ("beta", 0.5)),
    "P_IA": (("judged_only", False),),
    "AP_IA": (("judged_only", False),),
    "StRecall": (),
}
DIVERSITY_FAMILIES = tuple(_PARAMS)


def _elsewhere(m, grades, judgments):
    raise AssertionError(f"{m.family} is not evaluated from ordinary qrels; see tests/families/test_diversity.py")


for _name, _params in _PARAMS.items():
    reference.register(_name, RefFamily(_elsewhere, "required" if _name in _CUT else "none", binary=True,
                                        params=_params))


def _gains(rels: list[set[str]], alpha: float) -> list[float]:
    """g_i for docs given as the sets of subtopics they are relevant to."""
    seen: dict[str, int] = {}
    out = []
    for subs in rels:
        g = 0.0
        for s in sorted(subs):
            g += (1.0 - alpha) ** seen.get(s, 0)
        for s in subs:
            seen[s] = seen.get(s, 0) + 1
        out.append(g)
    return out


def _ideal(doc_subs: dict[str, set[str]], alpha: float) -> list[float]:
    left = {d: s for d, s in doc_subs.items() if s}
    seen: dict[str, int] = {}
    out = []
    while left:
        def gain(d: str) -> float:
            return sum((1.0 - alpha) ** seen.get(s, 0) for s in sorted(left[d]))

        best = max(left, key=lambda d: (gain(d), d.encode("utf-8")))
        out.append(gain(best))
        for s in left.pop(best):
            seen[s] = seen.get(s, 0) + 1
    return out


def _weight(kind: str, i: int) -> float:
    return 1.0 / math.log2(i + 1) if kind == "dcg" else 1.0 / i


def _cum(gains: list[float], k: int, kind: str) -> float:
    return sum(g * _weight(kind, i) for i, g in enumerate(gains[:k], start=1))


def _value(m, ranked: list[str], subtopics: dict[str, dict[str, int]]) -> tuple[float, bool]:
    rel = m.rel
    doc_subs: dict[str, set[str]] = {}
    for s, docs in subtopics.items():
        for d, g in docs.items():
            doc_subs.setdefault(d, set())
            if g >= rel:
                doc_subs[d].add(s)
    r_s = {s: sum(1 for g in docs.values() if g >= rel) for s, docs in subtopics.items()}
    n_sub = sum(1 for v in r_s.values() if v > 0)
    params = dict(m.params)
    if params.get("judged_only") in (True, "True", "true", 1):
        ranked = [d for d in ranked if d in doc_subs]
    rels = [doc_subs.get(d, set()) for d in ranked]
    if n_sub == 0:
        return 0.0, False
    alpha = float(params.get("alpha", 0.5))
    fam, k = m.family, m.cutoff
    if fam in ("alpha_DCG", "ERR_IA"):
        kind = "dcg" if fam == "alpha_DCG" else "err"
        num = _cum(_gains(rels, alpha), k, kind)
        if k == 1:
            return num, True
        return num / (n_sub * sum((1.0 - alpha) ** (i - 1) * _weight(kind, i) for i in range(1, k + 1))), True
    if fam in ("alpha_nDCG", "nERR_IA"):
        kind = "dcg" if fam == "alpha_nDCG" else "err"
        num = _cum(_gains(rels, alpha), k, kind)
        return (num / _cum(_ideal(doc_subs, alpha), k, kind) if num else 0.0), True
    if fam in ("NRBP", "nNRBP"):
        beta = float(params["beta"])

        def nrbp(gains: list[float]) -> float:
            return (1 - (1 - alpha) * beta) / n_sub * sum(g * beta ** (i - 1) for i, g in enumerate(gains, start=1))

        v = nrbp(_gains(rels, alpha))
        return ((v / nrbp(_ideal(doc_subs, alpha)) if v else 0.0) if fam == "nNRBP" else v), True
    if fam == "P_IA":
        return sum(len(s) for s in rels[:k]) / (k * n_sub), True
    if fam == "StRecall":
        return len(set().union(*rels[:k])) / n_sub, True
    if fam == "AP_IA":
        total = 0.0
        for s, big_r in r_s.items():
            if big_r:
                hits, ap = 0, 0.0
                for i, subs in enumerate(rels, start=1):
                    if s in subs:
                        hits += 1
                        ap += hits / i
                total += ap / big_r
        return total / n_sub, True
    raise ValueError(fam)


def reference_diversity_evaluate(qrels: dict, run: dict, measure_names: list[str], convention: str = "gpukit",
                                 complete: bool | None = None, max_depth: int | None = None,
                                 relevance_level: int | None = None) -> dict:
    """``qrels``: {query: {subtopic: {doc: grade}}}; ``run``: {query: {doc: score}}.

    Returns {"query_ids": [...], "measures": {name: {"per_query": {q: value or
    None (omitted)}, "mean": float}}}."""
    qids = reference.topics(qrels, run, convention, complete)
    out = {"query_ids": qids, "measures": {}}
    for name in measure_names:
        m = reference.parse(name, relevance_level)
        per_query = {}
        for q in qids:
            v, defined = _value(m, reference.rank(run.get(q, {}), max_depth), qrels[q])
            per_query[q] = None if convention == "gpukit" and not defined else v
        kept = [v for v in per_query.values() if v is not None]
        out["measures"][name] = {"per_query": per_query, "mean": sum(kept) / len(kept) if kept else math.nan}
    return out
