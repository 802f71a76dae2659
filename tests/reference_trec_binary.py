"""Plain-Python references for trec_eval's further binary families (one query at a time).

Written from trec_eval 10.0's definitions (its m_*.c files' descriptions and
formulas), without torch or numpy: GMAP, GMBpref, IPrec, IPrecAvg,
RelativeP, RprecMult, infAP, SetP, SetAP, SetF, NumNonRelJudgedRet, Utility,
NumQ. ``grades``: the ranked documents' qrels grades (None = not in the
qrels, i.e. not pooled; negative = pooled but unjudged); ``judgments``: the
query's {doc: grade}.
"""
from __future__ import annotations

import math

from reference import RefFamily, counts, register, relevant

_GMEAN = (("gpukit", "gmean"), ("trec_eval", "gmean"))
_ELEVEN = tuple(i / 10 for i in range(11))


def _as_numbers(value) -> tuple[float, ...]:
    """A list parameter: the tuple default, or the text of a name (``0.25;0.5``)."""
    if isinstance(value, (int, float)):
        return (float(value),)
    if isinstance(value, str):
        return tuple(float(v) for v in value.split(";"))
    return tuple(float(v) for v in value)


def _c_lround(x: float) -> int:
    """C's lround for x >= 0: halves go up."""
    whole = math.floor(x)
    return whole + (1 if x - whole >= 0.5 else 0)


def _precision_at(rel: list[bool], j: int) -> float:
    return sum(rel[:j]) / j


def _ap_value(m, grades, judgments) -> tuple[float, bool]:
    R, _ = counts(judgments, m.rel)
    total, hits = 0.0, 0
    for i, r in enumerate(relevant(grades, m.rel), start=1):
        if r:
            hits += 1
            total += hits / i
    return (total / R if R else 0.0), R > 0


def _bpref_value(m, grades, judgments) -> tuple[float, bool]:
    R, N = counts(judgments, m.rel)
    total, nonrel_above = 0.0, 0
    for g in grades:
        if g is None or g < 0:
            continue  # not pooled, or pooled but unjudged
        if g >= m.rel:
            total += 1.0 if nonrel_above == 0 else 1.0 - min(nonrel_above, R) / min(N, R)
        else:
            nonrel_above += 1
    return (total / R if R else 0.0), R > 0


def _iprec_at(rel: list[bool], R: int, level: float) -> float:
    """Interpolated precision at recall level ``level``: the highest P@j over
    ranks j at or after the rank where the lround(level * R)-th relevant
    document is found (rank 1 when that number is 0); 0 if the ranking does
    not hold that many relevant documents."""
    wanted = _c_lround(level * R)
    if wanted > sum(rel) or not rel:
        return 0.0
    start, seen = 1, 0
    for rank, r in enumerate(rel, start=1):
        if seen >= wanted:
            break
        if r:
            seen += 1
            start = rank
    return max(_precision_at(rel, j) for j in range(start, len(rel) + 1))


def _iprec(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    return _iprec_at(relevant(grades, m.rel), R, float(m.cutoff)), R > 0


def _iprec_avg(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    levels = _as_numbers(m.param("levels"))
    values = [_iprec_at(relevant(grades, m.rel), R, level) for level in levels]
    return sum(values) / len(values), R > 0


def _relative_p(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    if not R:
        return 0.0, False
    return sum(relevant(grades, m.rel)[: m.cutoff]) / min(m.cutoff, R), True


def _rprec_mult(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    n = int(float(m.param("mult")) * R + 0.9)  # trec_eval's (long)(x * R + 0.9)
    if n == 0:
        return 0.0, R > 0
    return sum(relevant(grades, m.rel)[:n]) / n, R > 0


def _infap(m, grades, judgments):
    """trec_eval's infAP: at each relevant document, the expected precision
    above it estimated from the judged documents above (pooled-unjudged ones
    counted as pooled, unpooled ones as non-relevant), averaged over R."""
    R, _ = counts(judgments, m.rel)
    eps = 0.00001
    total = 0.0
    rel_above = nonrel_above = unjudged_above = 0
    for j, g in enumerate(grades):
        if g is None:
            continue
        if g < 0:
            unjudged_above += 1
        elif g < m.rel:
            nonrel_above += 1
        else:
            if j == 0:
                total += 1.0
            else:
                pooled_share = (rel_above + nonrel_above + unjudged_above) / j
                rel_share = (rel_above + eps) / (rel_above + nonrel_above + 2 * eps)
                total += 1.0 / (j + 1.0) + (j / (j + 1.0)) * pooled_share * rel_share
            rel_above += 1
    return (total / R if R else 0.0), R > 0


def _flag(value) -> bool:
    return value in (True, "True", "true", 1)


def _set_p(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    found, ret = sum(relevant(grades, m.rel)), len(grades)
    if _flag(m.param("relative")):
        ok = ret > 0 and R > 0
        return (found / min(ret, R) if ok else 0.0), ok
    return (found / ret if ret else 0.0), ret > 0


def _set_ap(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    found, ret = sum(relevant(grades, m.rel)), len(grades)
    return (found * found / (ret * R) if ret and R else 0.0), R > 0


def _set_f(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    found, ret = sum(relevant(grades, m.rel)), len(grades)
    if not found:
        return 0.0, R > 0
    x = float(m.param("beta"))
    p, r = found / ret, found / R
    return (x + 1) * p * r / (x * p + r), True


def _num_nonrel_judged_ret(m, grades, judgments):
    return float(sum(1 for g in grades if g is not None and 0 <= g < m.rel)), True


def _utility(m, grades, judgments):
    """a, b, c, d: relevant retrieved, other retrieved, relevant missed, others
    missed (of num_docs). A topic the run does not answer gets trec_eval -c's
    stand-in ranking, one document not in the qrels, and trec_eval.c resets
    the measure printed as plain "utility" (default weights) to 0."""
    weights = _as_numbers(m.param("weights"))
    if not grades:
        if weights == (1.0, -1.0, 0.0, 0.0):
            return 0.0, True
        grades = [None]
    R, _ = counts(judgments, m.rel)
    w1, w2, w3, w4 = weights
    a = sum(relevant(grades, m.rel))
    b = len(grades) - a
    c = R - a
    d = int(m.param("num_docs")) - a - b - c
    return w1 * a + w2 * b + w3 * c + w4 * d, True


register("GMAP", RefFamily(_ap_value, binary=True, aggregate=_GMEAN))
register("GMBpref", RefFamily(_bpref_value, binary=True, aggregate=_GMEAN))
register("IPrec", RefFamily(_iprec, "required", binary=True))
register("IPrecAvg", RefFamily(_iprec_avg, binary=True, params=(("levels", _ELEVEN),)))
register("RelativeP", RefFamily(_relative_p, "required", binary=True))
register("RprecMult", RefFamily(_rprec_mult, binary=True, params=(("mult", 1.0),)))
register("infAP", RefFamily(_infap, binary=True))
register("SetP", RefFamily(_set_p, binary=True, params=(("relative", False),)))
register("SetAP", RefFamily(_set_ap, binary=True))
register("SetF", RefFamily(_set_f, binary=True, params=(("beta", 1.0),)))
register("NumNonRelJudgedRet", RefFamily(_num_nonrel_judged_ret, binary=True, aggregate=(("trec_eval", "sum"),)))
register("Utility", RefFamily(_utility, binary=True, params=(("weights", (1.0, -1.0, 0.0, 0.0)), ("num_docs", 0))))
register("NumQ", RefFamily(lambda m, g, j: (1.0, True), aggregate=(("gpukit", "sum"), ("trec_eval", "sum"))))
