"""Plain-Python reference for trec_eval's experimental graded measures.

binG, G, ndcg_rel, Rndcg, rbp, rbp_resid and unj, one query at a time,
written from the definitions in trec_eval 10.0's help texts and formulas
(no torch, no numpy). ``grades``: the ranked documents' qrels grades (None =
not in the qrels, negative = in the pool but unjudged); ``judgments``: the
query's {doc: grade}.

Gain table of a query (trec_eval's gain_init.c): grades 0..(highest judged
grade), each gaining its default gain (linear: the grade; exp: 2^grade - 1)
unless a custom pair ``grade: gain`` overrides it, plus every custom pair.
The ideal list: gains of the judged documents, highest first, positive only.
"""
from __future__ import annotations

import math

from reference import RefFamily, _gain, counts, register


def gain_of(m, grade) -> float:
    """Gain of a ranked document (0 when unjudged; a custom pair wins over the default gain)."""
    return _gain(grade, m.gain)


def ideal_list(m, judgments) -> list[float]:
    gains = sorted((gain_of(m, g) for g in judgments.values() if g >= 0), reverse=True)
    return [g for g in gains if g > 0]


def gain_table(m, judgments) -> dict[int, float]:
    judged = [g for g in judgments.values() if g >= 0]
    table = {}
    if judged:
        for level in range(max(judged) + 1):
            table[level] = gain_of(m, level)
    if isinstance(m.gain, dict):
        table.update({int(k): float(v) for k, v in m.gain.items()})
    return table


def dcg_at(gains: list[float], k: int) -> float:
    """sum_{i <= k} gains_i / log2(i + 1); ranks past the list add nothing."""
    return sum(g / math.log2(i + 1) for i, g in enumerate(gains[:k], start=1))


def bin_g(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    total, nonrel_above = 0.0, 0
    for g in grades:
        if g is not None and g >= 0 and g >= m.rel:
            total += 1.0 / math.log2(2 + nonrel_above)
        else:
            nonrel_above += 1
    return (total / R if R else 0.0), R > 0


def normalized_g(m, grades, judgments):
    ideal = ideal_list(m, judgments)
    total_ideal = sum(ideal)
    value, got, cost = 0.0, 0.0, 0.0
    for i, grade in enumerate(grades):
        g = gain_of(m, grade)
        got += g
        cost += max(ideal[i] if i < len(ideal) else 0.0, 1.0)
        if g != 0:
            value += g / math.log2(2 + cost - got)
    if total_ideal <= 0:
        return 0.0, False
    return value / total_ideal, True


def ndcg_rel(m, grades, judgments):
    ideal = ideal_list(m, judgments)
    M = len(ideal)
    if M == 0:
        return 0.0, False
    gains = [gain_of(m, g) for g in grades]
    total, retrieved = 0.0, 0
    for i, g in enumerate(gains, start=1):
        if g > 0:
            total += dcg_at(gains, i) / dcg_at(ideal, i)
            retrieved += 1
    total += (M - retrieved) * dcg_at(gains, len(gains)) / dcg_at(ideal, M)
    return (total / M if total > 0 else 0.0), True


def r_ndcg(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    ideal = ideal_list(m, judgments)
    M, n = len(ideal), len(grades)
    if R == 0 or M == 0:
        return 0.0, False
    gains = [gain_of(m, g) for g in grades]
    # R levels: the ends of each run of equal ideal gains.
    points = [k for k in range(1, M + 1) if k == M or ideal[k - 1] != ideal[k]]
    values = [dcg_at(gains, k) / dcg_at(ideal, k) for k in points]
    if n >= M + 2:  # the implied level change at the end of the ranking
        values.append(dcg_at(gains, n) / dcg_at(ideal, M))
    return sum(values) / len(values), True


def rbp(m, grades, judgments):
    p = m.param("p")
    if m.rel is not None:
        # Binary RBP as cwl_eval: a judged grade (negatives as 0) >= rel gains 1; ranks 1..1000,
        # weights p^(i-1) divided by their sum over the 1000 ranks.
        padded = (list(grades) + [None] * 1000)[:1000]
        weights = [p ** i for i in range(1000)]
        hits = [1.0 if g is not None and max(g, 0) >= m.rel else 0.0 for g in padded]
        return sum(w * h for w, h in zip(weights, hits)) / sum(weights), True
    params = dict(m.params)  # (RefMeasures built by hand may leave scale and min_grade out)
    if params.get("scale", True) in (False, "False", "false", 0):
        # ranx's rbp: raw gains over the whole ranking, grades below min_grade gaining 0.
        total, weight = 0.0, 1.0
        for grade in grades:
            if grade is not None and grade >= int(params.get("min_grade", 0)):
                total += gain_of(m, grade) * weight
            weight *= p
        return (1.0 - p) * total, True
    table = gain_table(m, judgments)
    if table and (min(table.values()) < 0 or max(table.values()) > 1):
        low, high = min(table.values()), max(table.values())
        table = {k: ((v - low) / (high - low) if high > low else 0.0) for k, v in table.items()}
    total, weight = 0.0, 1.0
    for grade in grades:
        if grade is not None and grade >= 0:
            total += table[grade] * weight
        weight *= p
    return (1.0 - p) * total, True


def rbp_resid(m, grades, judgments):
    p = m.param("p")
    spread, weight, unjudged = 0.0, 1.0, 0
    for grade in grades:
        if grade is None or grade < 0:
            unjudged += 1
            spread += weight
        weight *= p
    return ((weight + (1.0 - p) * spread) if unjudged else 0.0), True


def unjudged_at(m, grades, judgments):
    return sum(1 for g in grades[: m.cutoff] if g is None or g < 0) / m.cutoff, True


_P = (("p", 0.8),)
register("BinG", RefFamily(bin_g, binary=True))
register("G", RefFamily(normalized_g, graded=True))
register("nDCGRel", RefFamily(ndcg_rel, graded=True))
register("RnDCG", RefFamily(r_ndcg, binary=True, graded=True))
register("RBP", RefFamily(rbp, graded=True, params=_P + (("scale", True), ("min_grade", 0))))
register("RBPResid", RefFamily(rbp_resid, params=_P))
register("Unjudged", RefFamily(unjudged_at, "required"))
