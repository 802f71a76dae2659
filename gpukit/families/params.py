"""Parameter specs shared by several families, and builders for new ones."""
from __future__ import annotations

import ast
import math
from typing import Any

from gpukit.errors import MeasureError
from gpukit.families.spec import Param


def _strip_quotes(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]  # ir_measures quotes string values: dcg='exp-log2'
    return text


def _int_grade(value: Any, what: str) -> int:
    """An integer grade; 2.0 is accepted, 1.5, NaN, True and "1" are not."""
    ok = (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and value == int(value)
        and abs(value) < 2**31
    )
    if not ok:
        raise MeasureError(f"{what} must be an integer grade (32-bit), got {value!r}")
    return int(value)


def _check_rel(value: Any) -> int:
    rel = _int_grade(value, "rel")
    if rel < 0:
        raise MeasureError(f"rel must be a non-negative integer grade, got {value!r}")
    return rel


def _parse_rel(text: str) -> int:
    text = _strip_quotes(text)
    if not text.lstrip("-").isdigit() or not text.isascii():
        raise MeasureError(f"rel must be an integer grade, got {text!r}")
    return int(text)


REL = Param(
    name="rel",
    doc="minimum grade counted as relevant (rel=2: grades >= 2 are relevant; trec_eval -l)",
    default=1,
    parse=_parse_rel,
    check=_check_rel,
)


def _finite(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MeasureError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise MeasureError(f"{what} must be finite, got {value!r}")
    return float(value)


def check_gains(pairs: Any) -> tuple[tuple[int, float], ...]:
    """Validate a custom {grade: gain} mapping (or (grade, gain) pairs)."""
    items = list(pairs.items()) if isinstance(pairs, dict) else list(pairs)
    if not items:
        raise MeasureError("gains must be a non-empty {grade: gain} mapping")
    out: dict[int, float] = {}
    for grade, value in items:
        g = _int_grade(grade, "a gains key")
        if g in out:
            raise MeasureError(f"grade {g} is given two gains")
        out[g] = _finite(value, f"the gain of grade {g}")
    return tuple(sorted(out.items()))


def _check_gain(value: Any) -> Any:
    if value in ("linear", "exp"):
        return value
    if isinstance(value, (dict, tuple, list)):
        return check_gains(value)
    raise MeasureError(f"gain must be 'linear', 'exp' or a {{grade: gain}} mapping, got {value!r}")


def parse_gains_literal(text: str) -> tuple[tuple[int, float], ...]:
    """``{1:3,2:9}``: a dict literal, duplicates rejected (a Python dict would keep the last)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise MeasureError(f"gains must look like {{1:3,2:9}}, got {text!r}") from None
    if not isinstance(node, ast.Dict) or any(k is None for k in node.keys):
        raise MeasureError(f"gains must look like {{1:3,2:9}}, got {text!r}")
    try:
        pairs = [(ast.literal_eval(k), ast.literal_eval(v)) for k, v in zip(node.keys, node.values)]
    except ValueError:
        raise MeasureError(f"gains must map integer grades to numbers, got {text!r}") from None
    return check_gains(pairs)


def parse_trec_gains(text: str) -> tuple[tuple[int, float], ...]:
    """trec_eval's ``ndcg.1=3,2=9,4=4.5``: level=gain pairs."""
    pairs = []
    for item in text.split(","):
        level, sep, gain = item.partition("=")
        try:
            if not sep:
                raise ValueError
            pairs.append((int(level), float(gain)))
        except ValueError:
            raise MeasureError(f"expected level=gain pairs, got {item!r}") from None
    return check_gains(pairs)


def _parse_gain(text: str) -> Any:
    text = _strip_quotes(text)
    if text not in ("linear", "exp"):
        raise MeasureError(f"gain must be 'linear' or 'exp', got {text!r}")
    return text


def _show_gain(value: Any) -> str:
    if isinstance(value, tuple):
        return "{" + ",".join(f"{g}:{v:g}" for g, v in value) + "}"
    return str(value)


GAIN = Param(
    name="gain",
    doc="'linear' (gain = grade), 'exp' (2^grade - 1) or gains={grade: gain} (trec_eval ndcg.1=3,2=9; "
    "unlisted grades keep gain = grade)",
    default="linear",
    parse=_parse_gain,
    check=_check_gain,
    show=_show_gain,
    spellings=("gains", "dcg"),
)


def parse_gain_spelling(key: str, text: str) -> Any:
    """The value of ``gain=``, ``gains=`` or ir_measures' ``dcg=`` (log2 / exp-log2)."""
    if key == "gains":
        return parse_gains_literal(text)
    if key == "dcg":
        mapping = {"log2": "linear", "exp-log2": "exp"}
        value = _strip_quotes(text)
        if value not in mapping:
            raise MeasureError(f"dcg must be 'log2' or 'exp-log2', got {value!r}")
        return mapping[value]
    return _parse_gain(text)


def number(name: str, doc: str, default: float, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False) -> Param:
    """A float parameter within [low, high] (open ends where asked)."""

    def check(value: Any) -> float:
        v = _finite(value, name)
        if low is not None and (v < low or (low_open and v == low)):
            raise MeasureError(f"{name} must be {'>' if low_open else '>='} {low:g}, got {value!r}")
        if high is not None and (v > high or (high_open and v == high)):
            raise MeasureError(f"{name} must be {'<' if high_open else '<='} {high:g}, got {value!r}")
        return v

    def parse(text: str) -> float:
        try:
            return float(_strip_quotes(text))
        except ValueError:
            raise MeasureError(f"{name} must be a number, got {text!r}") from None

    return Param(name=name, doc=doc, default=default, parse=parse, check=check, show=lambda v: f"{v:g}")


def flag(name: str, doc: str, default: bool = False) -> Param:
    """A True/False parameter (``judged_only=True``; ``1`` and ``0`` are accepted in names)."""

    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise MeasureError(f"{name} must be True or False, got {value!r}")
        return value

    def parse(text: str) -> bool:
        value = _strip_quotes(text).lower()
        if value not in ("true", "false", "1", "0"):
            raise MeasureError(f"{name} must be True or False, got {text!r}")
        return value in ("true", "1")

    return Param(name=name, doc=doc, default=default, parse=parse, check=check)


#: Weight of recall in F measures (SetF, F@k).
BETA = number("beta", "weight of recall relative to precision: F = (beta + 1) P R / (beta P + R) (trec_eval set_F.x, "
              "ir_measures SetF(beta=x); van Rijsbergen's beta squared)", 1.0, low=0.0)


def _check_min_grade(value: Any) -> int:
    grade = _int_grade(value, "min_grade")
    if grade < 0:
        raise MeasureError(f"min_grade must be a non-negative integer grade, got {value!r}")
    return grade


#: ranx's relevance level ``-lN`` on graded measures (nDCG, DCG, ranx's RBP).
MIN_GRADE = Param(
    name="min_grade",
    doc="grades below min_grade gain 0 (ranx's -l level, e.g. ndcg@10-l2: only grades >= 2 gain); "
    "0 (default): every grade keeps its gain",
    default=0,
    parse=_parse_rel,
    check=_check_min_grade,
)
