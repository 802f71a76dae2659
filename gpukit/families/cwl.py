"""C/W/L user-model families as ir_measures' cwl_eval provider computes them.

SDCG@k, NERR8@k, NERR9@k, NERR10(p), NERR11(T), INST(T), INSQ(T) and BPM(T)@k,
with ir_measures' names and parameters. Each is cwl_eval's expected utility
per document read, EU = sum_i C_i g_i / sum_i C_i over ranks 1..1000 (see
:mod:`gpukit.metrics.cwl`). Gains come from the grades as ir_measures makes
them: negative grades count as 0, then (clip(grade, min_rel, max_rel) -
min_rel) / (max_rel - min_rel); unjudged documents gain 0. max_rel has no
default (ir_measures requires it too), so every name carries it.
"""
from __future__ import annotations

from typing import Any

from gpukit.errors import MeasureError
from gpukit.families.common import always
from gpukit.families.params import number
from gpukit.families.registry import register
from gpukit.families.spec import Family, Param
from gpukit.metrics import cwl


def _int_param(name: str, value: Any) -> int:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and float(value).is_integer()
    if not ok or not abs(value) < 2**31:
        raise MeasureError(f"{name} must be an integer grade (32-bit), got {value!r}")
    return int(value)


def _parse_int(name: str):
    def parse(text: str) -> int:
        text = text.strip().strip("'\"")
        if not (text.isascii() and text.lstrip("-").isdigit()):
            raise MeasureError(f"{name} must be an integer grade, got {text!r}")
        return int(text)
    return parse


def _check_min_rel(value: Any) -> int:
    v = _int_param("min_rel", value)
    if v < 0:
        # ir_measures clips negative grades to 0 before scaling: a negative
        # min_rel would give judged non-relevant documents positive gain and
        # unjudged ones none.
        raise MeasureError(f"min_rel must be >= 0 (negative grades count as 0), got {value!r}")
    return v


def _check_max_rel(value: Any) -> int | None:
    return None if value is None else _int_param("max_rel", value)


MIN_REL = Param(
    name="min_rel",
    doc="grade that gains 0: grades <= min_rel (and negative grades, and unjudged documents) gain 0",
    default=0,
    parse=_parse_int("min_rel"),
    check=_check_min_rel,
)
MAX_REL = Param(
    name="max_rel",
    doc="grade that gains 1 (required, as in ir_measures): gain = (clip(grade, min_rel, max_rel) - min_rel) / "
    "(max_rel - min_rel)",
    default=None,
    parse=_parse_int("max_rel"),
    check=_check_max_rel,
    show=lambda v: "required" if v is None else str(v),
)
# T is bounded so that INST's closed-form tail (x^2 with x ~ 2T) stays finite; past
# the 1000 ranks read, T = 1e6 already means "wants everything".
T = number("T", "total gain the user wants (gains are in [0, 1]: T = 1 is one fully relevant document); "
           "0 < T <= 1e6", 1.0, low=0, low_open=True, high=1e6)
P_NERR = number("p", "persistence: chance of going on past a document of gain 0", 0.9, low=0, high=1)
SCALE = (MIN_REL, MAX_REL)


def _validate(m) -> None:
    lo, hi = m.param("min_rel"), m.param("max_rel")
    if hi is None:
        raise MeasureError(f"{m.family} needs max_rel=, the grade that gains 1 (ir_measures requires it too), "
                           f"e.g. {m.family}(max_rel=3)" + ("@10" if m.spec.cutoff == "required" else ""))
    if lo >= hi:
        raise MeasureError(f"{m.family}: min_rel must be below max_rel, got min_rel={lo}, max_rel={hi}")


def _gains(r, m):
    return cwl.cwl_gains(r.grades[:, : cwl.CWL_DEPTH], m.param("min_rel"), m.param("max_rel"))


def _adapter(kernel, *params: str, cut: bool = False):
    def run(r, m, cuts):
        args = [m.param(p) for p in params]
        v = kernel(_gains(r, m), *args, cuts) if cut else kernel(_gains(r, m), *args)
        return v, always(v)
    return run


def _describe(extra: dict[str, str]):
    def describe(m) -> dict[str, str]:
        lo, hi = m.param("min_rel"), m.param("max_rel")
        return {
            "gain": f"(clip(grade, {lo}, {hi}) - {lo}) / {hi - lo}; negative grades count as 0; unjudged documents gain 0",
            "depth": f"ranks 1..{cwl.CWL_DEPTH} (cwl_eval's max_n): longer rankings are cut, shorter ones padded with "
                     "zero gain, so the normaliser runs over all those ranks",
            "ties": "score descending, then doc id descending (cwl_eval takes the ranking as given; ir_measures sorts "
                    "by score, ties in input order)",
            **extra,
        }
    return describe


EU = "EU = sum_i C_i g_i / sum_i C_i, C_i = c_1 ... c_(i-1), ranks 1..1000 (cwl_eval's depth, zero gain past the ranking)"
CUT = "; the cutoff is part of the user model (c_k = 0): the normaliser counts min(k, 1000) ranks however short the ranking"
ALWAYS = "always (0 where no retrieved document has gain)"


def _register(name: str, summary: str, continuation: str, kernel, params: tuple[Param, ...], cut: bool,
              examples: tuple[str, ...], model: str) -> Family:
    return register(Family(
        name=name,
        summary=summary,
        definition=f"{EU}; c_i = {continuation}{CUT if cut else ''} (ir_measures' cwl_eval provider)",
        kernel=_adapter(kernel, *(p.name for p in params), cut=cut),
        cutoff="required" if cut else "none",
        params=params + SCALE,  # ir_measures' order: T or p, then min_rel, max_rel
        needs=frozenset({"grades"}),
        describe=_describe({"user model": model}),
        examples=examples,
        validate=_validate,
    ))


SDCG = _register(
    "SDCG", "scaled DCG: DCG@k over the DCG of k fully relevant documents (C/W/L, cwl_eval)",
    "log2(i+1) / log2(i+2) for i < k, 0 at k: SDCG@k = sum_{i<=k} g_i / log2(i+1) / sum_{i<=k} 1 / log2(i+1)",
    cwl.scaled_dcg, (), True, ("SDCG(max_rel=3)@10", "SDCG(max_rel=2)@5", "SDCG(min_rel=1,max_rel=3)@20"),
    "reads rank i with weight 1 / log2(i+1) down to k; the ideal is k documents of gain 1, not the query's judgments")
NERR8 = _register(
    "NERR8", "not-but-nearly ERR, truncated at k (Azzopardi et al. 2021, eq. 8; cwl_eval)",
    "1 - g_i for i < k, 0 at k", cwl.nerr8, (), True, ("NERR8(max_rel=3)@10", "NERR8(max_rel=2)@3"),
    "stops at a document with probability its gain, and at rank k")
NERR9 = _register(
    "NERR9", "not-but-nearly ERR with the 1/i discount, truncated at k (Azzopardi et al. 2021, eq. 9; cwl_eval)",
    "i / (i+1) * (1 - g_i) for i < k, 0 at k", cwl.nerr9, (), True, ("NERR9(max_rel=3)@10", "NERR9(max_rel=1)@4"),
    "stops at a document with probability its gain, otherwise goes on with probability i / (i+1), and stops at k")
NERR10 = _register(
    "NERR10", "not-but-nearly ERR with RBP persistence p (Azzopardi et al. 2021, eq. 10; cwl_eval)",
    "p * (1 - g_i)", cwl.nerr10, (P_NERR,), False, ("NERR10(max_rel=3)", "NERR10(p=0.5,max_rel=2)"),
    "stops at a document with probability its gain, otherwise goes on with probability p")
NERR11 = _register(
    "NERR11", "not-but-nearly ERR with INSQ's goal T (Azzopardi et al. 2021, eq. 11; cwl_eval)",
    "((i+2T-1) / (i+2T))^2 * (1 - g_i)", cwl.nerr11, (T,), False, ("NERR11(max_rel=3)", "NERR11(T=2,max_rel=2)"),
    "stops at a document with probability its gain, otherwise goes on as INSQ with goal T")
INST = _register(
    "INST", "INST: adaptive user model, goes on while the gain still wanted is large (Moffat et al. 2015; cwl_eval)",
    "((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T - sum_{j<=i} g_j", cwl.inst, (T,), False,
    ("INST(max_rel=3)", "INST(T=2,max_rel=2)", "INST(T=0.5,min_rel=1,max_rel=3)"),
    "wants total gain T; the less of it is still missing (T_i), the likelier it stops")
INSQ = _register(
    "INSQ", "INSQ: user model expecting total gain T, gain-independent continuation (Moffat et al. 2012; cwl_eval)",
    "((i+2T-1) / (i+2T))^2", cwl.insq, (T,), False, ("INSQ(max_rel=3)", "INSQ(T=3,max_rel=2)"),
    "goes on with a probability that grows with the rank and with T, whatever it has found")
BPM = _register(
    "BPM", "Bejeweled Player Model, static, unit costs: reads until gain T or k documents (Zhang et al. 2017; cwl_eval)",
    "1 while sum_{j<=i} g_j < T and i < k, else 0: BPM = sum_{i<=s} g_i / s, s the first rank where either goal "
    "is met (at most 1000); the gain sum is a left-to-right float64 sum, as cwl_eval's", cwl.bejeweled, (T,), True, ("BPM(max_rel=3)@10", "BPM(T=2,max_rel=2)@5", "BPM(T=0.5,max_rel=3)@20"),
    "reads one document per unit of cost until it has gain T or has read k documents")
