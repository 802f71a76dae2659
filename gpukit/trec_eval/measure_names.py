"""trec_eval's measure names: ``-m`` options resolved to the printed measures
(nicknames, parameter lists, cutoffs and levels) from the registry records."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from gpukit.conventions import get_convention
from gpukit.errors import MeasureError, TrecEvalError
from gpukit.families import TREC_ORDER, families, name_index
from gpukit.families.spec import Family, TrecSyntax
from gpukit.measures import Measure
from gpukit.trec_eval.options import c_atof, c_atol

#: Measures whose values are strings: printed by this module, not registry families.
STRING_MEASURES = ("runid", "relstring")
#: relstring's default length (trec_eval ``-m relstring`` = ``relstring.10``).
RELSTRING_DEFAULT_LEN = 10

#: trec_eval's -m nicknames, in measures.c's order.
NICKNAME_ORDER = ("official", "set", "all_trec", "all_prefs", "prefs", "qrels_jg")


#: The nicknames that include each string measure (no registry record holds them).
_STRING_GROUPS = {"runid": NICKNAME_ORDER, "relstring": ("all_trec",)}


def _nicknames() -> dict[str, tuple[str, ...]]:
    """Each nickname's measure-table names, in trec_eval's table order, from
    the registry records' ``TrecSyntax.groups`` (the one source) and
    ``_STRING_GROUPS``."""
    groups = {syntax.name: syntax.groups for fam in families() for syntax in fam.trec} | _STRING_GROUPS
    return {g: tuple(n for n in TREC_ORDER if g in groups.get(n, ())) for g in NICKNAME_ORDER}


#: trec_eval's -m nicknames (measures.c), each a tuple of measure-table names.
NICKNAMES: dict[str, tuple[str, ...]] = _nicknames()


def nickname_measures(group: str) -> tuple[str, ...]:
    """The measures of a nickname that registry records compute (no string measures)."""
    return tuple(n for n in NICKNAMES[group] if n not in STRING_MEASURES)


#: trec_eval's -R rel_info formats and the judgments class each is read as.
REL_INFO_FORMATS: dict[str, str] = {
    "qrels": "Qrels",
    "prefs": "Prefs",
    "qrels_prefs": "Prefs",
    "qrels_jg": "JudgmentGroups",
}


@dataclass(frozen=True)
class Output:
    """One printed measure: trec_eval's name for it and how it is printed.

    ``kind`` is ``"value"`` (a registry measure), ``"runid"`` or ``"relstring"``.
    """

    name: str
    kind: str = "value"
    measure: Measure | None = None
    int_format: bool = False
    per_query: bool = True
    aggregate: str = "mean"
    relstring_len: int = RELSTRING_DEFAULT_LEN


def measure_table() -> list[str]:
    """trec_eval's measure table order, then any other registry ``-m`` root."""
    table = list(TREC_ORDER)
    table += [t.name for fam in families() for t in fam.trec if t.name not in table]
    return table


@dataclass(frozen=True)
class MeasureRequest:
    """The measures marked by the -m options: roots in table order, and the
    parameter text of each root (the first -m that gave it one)."""

    roots: tuple[str, ...]
    params: dict[str, str]
    #: Roots marked only through a nickname and not computed by this build.
    skipped: tuple[str, ...] = ()


def mark_measures(args: Sequence[str]) -> MeasureRequest:
    """Resolve -m options as trec_eval's mark_measure does (default: ``official``)."""
    table = measure_table()
    available = set(STRING_MEASURES) | set(name_index().trec)
    marked: set[str] = set()
    params: dict[str, str] = {}
    for arg in args or ["official"]:
        name, dot, text = arg.partition(".")
        if dot:
            if text == "":
                raise TrecEvalError(
                    [f"trec_eval: improper measure in parameter '{name}'", f"trec_eval: illegal measure '{name}'"], 1
                )
            params.setdefault(name, text)
        if name in NICKNAMES:
            marked.update(NICKNAMES[name])
            continue
        if name not in table or name not in available:
            why = [] if name not in table else [f"gpukit trec_eval: measure '{name}' is not implemented in gpukit"]
            raise TrecEvalError([f"trec_eval: illegal measure '{name}'"] + why, 1)
        marked.add(name)
    roots = tuple(r for r in table if r in marked and r in available)
    skipped = tuple(r for r in table if r in marked and r not in available)
    return MeasureRequest(roots, params, skipped)


#: The parameter that trec_eval's -N (documents in the collection) sets, in families that have it.
NUM_DOCS_PARAM = "num_docs"


def _build(fam: Family, syntax: TrecSyntax, value: Any = None, has_value: bool = False, num_docs: int = 0) -> Measure:
    """The measure a trec_eval name stands for (its syntax's preset, plus the
    cutoff or the parameter that a cutoff/level/string value sets, plus -N)."""
    params = dict(syntax.preset)
    if fam.param(NUM_DOCS_PARAM) is not None:
        params[NUM_DOCS_PARAM] = num_docs
    cutoff = None
    if has_value:
        if syntax.param is None:
            cutoff = value
        else:
            params[syntax.param] = value
    rel, gain = params.pop("rel", None), params.pop("gain", None)
    return Measure(fam.name, cutoff=cutoff, rel=rel, gain=gain, params=tuple(params.items()))


def _init_failure(root: str, why: Sequence[str]) -> TrecEvalError:
    return TrecEvalError(list(why) + [f"trec_eval: Cannot initialize measure '{root}'"], 2)


def init_outputs(request: MeasureRequest, relevance_level: int = 1, num_docs: int = 0) -> list[Output]:
    """The printed measures of each marked root, as trec_eval's init_meas names them
    (``relevance_level``: -l; ``num_docs``: -N)."""
    index = name_index()
    conv = get_convention("trec_eval")
    out: list[Output] = []
    for root in request.roots:
        text = request.params.get(root)
        if root == "runid":
            out.append(Output("runid", kind="runid", per_query=False))
            continue
        if root == "relstring":
            length = int(c_atof(text.split(",")[0])) if text is not None else RELSTRING_DEFAULT_LEN
            out.append(Output("relstring" if text is None else f"relstring_{text}", kind="relstring", relstring_len=length))
            continue
        fam, syntax = index.trec[root]
        named: list[tuple[str, Measure]] = []
        try:
            if syntax.kind in ("cutoffs", "levels"):
                named = _listed(root, fam, syntax, text, num_docs)
            elif syntax.kind == "string" and text is not None:
                assert syntax.parse_string is not None
                named = [(f"{root}_{text}", _build(fam, syntax, syntax.parse_string(text), True, num_docs))]
            else:  # no parameters, or a string parameter left at its default; trec_eval ignores unused text
                named = [(root, _build(fam, syntax, num_docs=num_docs))]
        except MeasureError as exc:
            raise _init_failure(root, [f"trec_eval: {exc}"]) from None
        for name, m in named:
            out.append(Output(
                name,
                measure=m.with_rel(relevance_level),
                int_format=fam.trec_format == "int",
                per_query=fam.trec_per_query,
                aggregate=fam.aggregate_under(conv),
            ))
    return out


def _listed(root: str, fam: Family, syntax: TrecSyntax, text: str | None, num_docs: int) -> list[tuple[str, Measure]]:
    """Cutoff (``%ld``) or level (``%3.2f``) lists: sorted, checked as trec_eval does."""
    if text is None:
        values = list(syntax.defaults or fam.trec_cutoffs)
    elif syntax.kind == "cutoffs":
        values = sorted(c_atol(v) for v in text.split(","))
        if values[0] <= 0:
            raise _init_failure(root, ["trec_eval: Negative cutoff detected"])
    else:
        values = sorted(c_atof(v) for v in text.split(","))
    if any(a == b for a, b in zip(values, values[1:])):
        raise _init_failure(root, ["trec_eval: duplicate cutoffs detected"])
    if syntax.kind == "cutoffs":
        return [(f"{root}_{int(v)}", _build(fam, syntax, int(v), True, num_docs)) for v in values]
    return [(f"{root}_{float(v):3.2f}", _build(fam, syntax, float(v), True, num_docs)) for v in values]


