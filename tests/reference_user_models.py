"""Plain-Python reference for user-model measures: ERR@k (gdeval's definition).

The user reads down the ranking and stops at rank i with probability
R_i = (2^g - 1) / 2^max_grade (grade g > 0, capped at max_grade; else 0);
ERR is the expected reciprocal of the stopping rank.
"""
from __future__ import annotations

from reference import RefFamily, register


def err(m, grades, judgments):
    top = m.param("max_grade")
    score, still_reading = 0.0, 1.0
    for i, g in enumerate(grades if m.cutoff is None else grades[: m.cutoff], start=1):
        stop = (2 ** min(g, top) - 1) / 2**top if g is not None and g > 0 else 0.0
        score += stop * still_reading / i
        still_reading *= 1 - stop
    return score, True


register("ERR", RefFamily(err, "optional", params=(("max_grade", 4),)))
