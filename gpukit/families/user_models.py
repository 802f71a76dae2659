"""User-model families: ERR@k (expected reciprocal rank), as ir_measures' gdeval provider."""
from __future__ import annotations

from typing import Any

from gpukit.errors import MeasureError
from gpukit.families.common import always
from gpukit.families.registry import register
from gpukit.families.spec import Family, Param
from gpukit.metrics.user_models import expected_reciprocal_rank

#: gdeval's MAX_JUDGMENT: stop probabilities are (2^grade - 1) / 2^4.
GDEVAL_MAX_GRADE = 4


def _check_max_grade(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) and not (isinstance(value, float) and value.is_integer()):
        raise MeasureError(f"max_grade must be a positive integer grade, got {value!r}")
    if not 1 <= int(value) <= 60:
        raise MeasureError(f"max_grade must be between 1 and 60, got {value!r}")
    return int(value)


def _parse_max_grade(text: str) -> int:
    text = text.strip().strip("'\"")
    if not (text.isascii() and text.isdigit()):
        raise MeasureError(f"max_grade must be a positive integer grade, got {text!r}")
    return int(text)


MAX_GRADE = Param(
    name="max_grade",
    doc="the grade of certain satisfaction: stop probability (2^grade - 1) / 2^max_grade; higher grades count as "
    "max_grade (gdeval: 4)",
    default=GDEVAL_MAX_GRADE,
    parse=_parse_max_grade,
    check=_check_max_grade,
)


def _err(r, m, cuts):
    v = expected_reciprocal_rank(r.grades, m.param("max_grade"), cuts)
    return v, always(v)


ERR = register(Family(
    name="ERR",
    summary="expected reciprocal rank (cascade user model, graded)",
    definition="ERR@k = sum_{i<=k} R_i * prod_{j<i} (1 - R_j) / i, R_i = (2^g_i - 1) / 2^max_grade for grade g_i > 0 "
    "(capped at max_grade), 0 for grade <= 0 or unjudged (Chapelle et al. 2009; ir_measures' ERR, gdeval)",
    kernel=_err,
    cutoff="optional",
    params=(MAX_GRADE,),
    needs=frozenset({"grades"}),
    describe=lambda m: {"stop probability": f"(2^grade - 1) / 2^{m.param('max_grade')}, grade capped at "
                        f"{m.param('max_grade')}; grade <= 0 or unjudged: 0"},
    examples=("ERR@5", "ERR", "ERR@1", "ERR(max_grade=2)@10"),
))
