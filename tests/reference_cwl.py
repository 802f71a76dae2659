"""Plain-Python reference for the C/W/L families (SDCG, NERR8-11, INST, INSQ, BPM).

Straight from the C/W/L framework, one rank at a time: the user reads rank 1
and goes on from rank i with probability c_i; the measure is the expected
utility per document, sum_i C_i g_i / sum_i C_i with C_i = c_1 ... c_(i-1),
over ranks 1..1000 (cwl_eval's depth; zero gain past the ranking). Gains as
ir_measures' cwl_eval provider makes them: a negative grade counts as 0, an
unjudged document gains 0, g = (clip(grade, min_rel, max_rel) - min_rel) /
(max_rel - min_rel). No closed forms: every rank up to 1000 is visited.
"""
from __future__ import annotations

from math import log2

from reference import RefFamily, register

DEPTH = 1000


def _gains(m, grades) -> list[float]:
    lo, hi = m.param("min_rel"), m.param("max_rel")
    out = []
    for g in list(grades)[:DEPTH]:
        g = 0 if g is None else max(g, 0)
        out.append((min(max(g, lo), hi) - lo) / (hi - lo))
    return out + [0.0] * (DEPTH - len(out))


def _expected_utility(m, grades, continuation) -> tuple[float, bool]:
    """continuation(rank i, gain g_i, gain sum through i) -> c_i."""
    numerator = denominator = seen = 0.0
    reach = 1.0
    for i, g in enumerate(_gains(m, grades), start=1):
        numerator += reach * g
        denominator += reach
        seen += g
        reach *= continuation(i, g, seen)
    return numerator / denominator, True


def sdcg(m, grades, judgments):
    return _expected_utility(m, grades, lambda i, g, s: log2(i + 1) / log2(i + 2) if i < m.cutoff else 0.0)


def nerr8(m, grades, judgments):
    return _expected_utility(m, grades, lambda i, g, s: 1.0 - g if i < m.cutoff else 0.0)


def nerr9(m, grades, judgments):
    return _expected_utility(m, grades, lambda i, g, s: i / (i + 1) * (1.0 - g) if i < m.cutoff else 0.0)


def nerr10(m, grades, judgments):
    p = m.param("p")
    return _expected_utility(m, grades, lambda i, g, s: p * (1.0 - g))


def _insq_step(i: int, T: float) -> float:
    return ((i + 2 * T - 1) / (i + 2 * T)) ** 2


def nerr11(m, grades, judgments):
    T = m.param("T")
    return _expected_utility(m, grades, lambda i, g, s: _insq_step(i, T) * (1.0 - g))


def insq(m, grades, judgments):
    T = m.param("T")
    return _expected_utility(m, grades, lambda i, g, s: _insq_step(i, T))


def inst(m, grades, judgments):
    T = m.param("T")

    def c(i, g, seen):
        wanted = T - seen  # T_i: gain still missing after rank i
        return ((i + T + wanted - 1) / (i + T + wanted)) ** 2

    return _expected_utility(m, grades, c)


def bpm(m, grades, judgments):
    T = m.param("T")
    return _expected_utility(m, grades, lambda i, g, seen: 1.0 if seen < T and i < m.cutoff else 0.0)


SCALE = (("min_rel", 0), ("max_rel", None))
register("SDCG", RefFamily(sdcg, "required", params=SCALE))
register("NERR8", RefFamily(nerr8, "required", params=SCALE))
register("NERR9", RefFamily(nerr9, "required", params=SCALE))
register("NERR10", RefFamily(nerr10, params=SCALE + (("p", 0.9),)))
register("NERR11", RefFamily(nerr11, params=SCALE + (("T", 1.0),)))
register("INST", RefFamily(inst, params=SCALE + (("T", 1.0),)))
register("INSQ", RefFamily(insq, params=SCALE + (("T", 1.0),)))
register("BPM", RefFamily(bpm, "required", params=SCALE + (("T", 1.0),)))
