"""Measures as small immutable values, and the parser for their names.

Everything about a family (names, parameters, cutoff rule, trec_eval syntax)
comes from its record in :mod:`gpukit.families`; this module only turns text
into :class:`Measure` values and back.

Canonical names follow ir_measures (``nDCG@10``, ``P(rel=2)@5``, ``R@100``,
``RR@10``, ``AP``, ``Rprec``, ``nDCG(gain=exp)@10``). trec_eval names
(``ndcg_cut.10``, ``P.10``, ``P_10``, ``recip_rank``, ``map``,
``map_cut.100``, ``ndcg.1=3,2=9``) and ranx names (``ndcg@10``,
``ndcg_burges@10``, ``mrr@10``, ``map@100``, ``r-precision``, ``hits@10``,
``f1@10``) are aliases; ranx's ``-lN`` level (``ndcg@10-l2``), ``rbp.95``
and ``@0`` are read by :mod:`gpukit.ranx_names`.

A bare trec_eval group name means what it means in trec_eval: ``P``,
``recall``, ``ndcg_cut``, ``map_cut``, ``success`` (and every family with
default cutoffs) expand to trec_eval's default cutoffs
(5, 10, 15, 20, 30, 100, 200, 500, 1000; success: 1, 5, 10).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Union

from gpukit import ranx_names
from gpukit.errors import MeasureError
from gpukit.families import registry
from gpukit.families.params import flag
from gpukit.families.spec import Alias, Family, TrecSyntax
from gpukit.metrics.graded import Gain

__all__ = ["Gain", "Measure", "MeasureLike", "parse_measure", "parse_measure_names", "parse_measures"]

#: Longest measure name echoed back in an error message.
_ECHO = 80


def _echo(text: str) -> str:
    return repr(text if len(text) <= _ECHO else text[:_ECHO] + "...")


@dataclass(frozen=True)
class Measure:
    """One evaluation measure with its parameters: an immutable, hashable value.

    Attributes:
        family: the registry family (``P``, ``nDCG``, ``AP``, ... see
            ``gpukit measures``).
        cutoff: rank cutoff k (``None`` = the whole ranking); a float level
            for families whose cutoff is one (``IPrec@0.1``).
        rel: minimum grade counted as relevant, for families with a ``rel``
            parameter (``rel=2``: grades >= 2 are relevant); else ``None``.
        gain: ``"linear"``, ``"exp"`` or ``((grade, gain), ...)`` for families
            with a ``gain`` parameter; else ``None``.
        params: the family's other parameters as ``((name, value), ...)`` in
            the family's order, defaults filled in (so equal measures are equal
            values whether or not a default was spelled out).
        judged_only: compute the measure on each ranking with its unjudged
            documents (absent from the qrels, or with a negative grade)
            removed first, the others keeping their order: trec_eval's
            ``-J``, ir_measures' ``judged_only=True``, written
            ``nDCG(judged_only=True)@10``. A family with a ``judged_only``
            parameter of its own (the diversity measures) keeps it there.
    """

    family: str
    cutoff: Any = None
    rel: int | None = None
    gain: Gain | None = None
    params: tuple[tuple[str, Any], ...] = ()
    judged_only: bool = False

    def __post_init__(self) -> None:
        fam = registry.get_family(self.family)
        if not isinstance(self.judged_only, bool):
            raise MeasureError(f"judged_only must be True or False, got {self.judged_only!r}")
        if self.judged_only and fam.param("judged_only") is not None:
            # The family's own parameter says it (one spelling, one value).
            object.__setattr__(self, "params", tuple(dict(self.params, judged_only=True).items()))
            object.__setattr__(self, "judged_only", False)
        object.__setattr__(self, "cutoff", _check_cutoff(fam, self.cutoff))
        for name, field_value in (("rel", self.rel), ("gain", self.gain)):
            spec = fam.param(name)
            if spec is None:
                if field_value is not None:
                    raise MeasureError(f"{fam.name} takes no {name}= parameter{_why_not(fam, name)}")
                continue
            object.__setattr__(self, name, spec.check(spec.default if field_value is None else field_value))
        given = dict(self.params)
        known = [p for p in fam.params if p.name not in ("rel", "gain")]
        unknown = set(given) - {p.name for p in known}
        if unknown:
            raise MeasureError(f"{fam.name} has no parameter {sorted(unknown)[0]!r}{_param_list(fam)}")
        normal = tuple((p.name, p.check(given.get(p.name, p.default))) for p in known)
        object.__setattr__(self, "params", normal)
        if fam.validate is not None:
            fam.validate(self)

    def __str__(self) -> str:
        fam = self.spec
        shown = []
        for p in fam.params:
            value = self.param(p.name)
            if p.always_show or value != p.check(p.default):
                key = "gains" if p.name == "gain" and isinstance(value, tuple) else p.name
                shown.append(f"{key}={p.show(value)}")
        if self.judged_only:
            shown.append("judged_only=True")
        text = fam.name + (f"({','.join(shown)})" if shown else "")
        if self.cutoff is None:
            return text
        return text + "@" + (f"{self.cutoff:g}" if isinstance(self.cutoff, float) else str(self.cutoff))

    @property
    def name(self) -> str:
        return str(self)

    @property
    def spec(self) -> Family:
        """The family's registry record."""
        return registry.get_family(self.family)

    def param(self, name: str) -> Any:
        """The value of any parameter of the family (``rel``, ``gain``, ``p``, ...)."""
        if name == "rel":
            return self.rel
        if name == "gain":
            return self.gain
        for key, value in self.params:
            if key == name:
                return value
        raise MeasureError(f"{self.family} has no parameter {name!r}")

    @property
    def is_graded(self) -> bool:
        return self.spec.param("gain") is not None

    @property
    def is_binary(self) -> bool:
        # rel=None: a family where a relevance level is opt-in (graded RBP unless RBP(rel=...)).
        return self.spec.param("rel") is not None and self.rel is not None

    def with_rel(self, rel: int) -> "Measure":
        """Same measure at another relevance level (no-op for families without ``rel``, and
        for graded RBP, whose ``rel`` is opt-in)."""
        return replace(self, rel=rel) if self.is_binary else self

    def with_judged_only(self, judged_only: bool = True) -> "Measure":
        """Same measure computed on the judged documents only (see ``judged_only``)."""
        if self.spec.param("judged_only") is not None:
            return replace(self, params=tuple(dict(self.params, judged_only=judged_only).items()))
        return replace(self, judged_only=judged_only)

    def gain_of(self, grade: int) -> float:
        """Gain of a judged grade (graded measures). Unjudged documents gain 0."""
        if self.gain == "exp":
            return float(2**grade - 1) if grade > 0 else 0.0
        if isinstance(self.gain, tuple):
            custom = dict(self.gain)
            if grade in custom:
                return custom[grade]
        return float(grade) if grade > 0 else 0.0


MeasureLike = Union[str, Measure]


def _why_not(fam: Family, name: str) -> str:
    if name == "rel" and fam.param("gain") is not None:
        return ": gains come from the grades (use gain=...)"
    if name == "rel":
        return ": it does not depend on a relevance level"
    return ""


def _param_list(fam: Family) -> str:
    names = [p.name for p in fam.params]
    return f" (known: {', '.join(names)})" if names else " (it takes no parameters)"


def _check_cutoff(fam: Family, cutoff: Any) -> Any:
    if cutoff is None:
        if fam.cutoff == "required":
            example = "0.5" if fam.cutoff_type is float else "10"
            raise MeasureError(f"{fam.name} needs a cutoff, e.g. {fam.name}@{example}")
        return None
    if fam.cutoff == "none":
        raise MeasureError(f"{fam.name} takes no cutoff")
    if isinstance(cutoff, bool):
        raise MeasureError(f"cutoff must be a number, got {cutoff!r}")
    if fam.cutoff_type is float:
        try:
            value = float(cutoff)
        except (TypeError, ValueError):
            raise MeasureError(f"{fam.name}'s cutoff must be a number, got {cutoff!r}") from None
        if not 0.0 <= value <= 1.0:
            raise MeasureError(f"{fam.name}'s cutoff is a level in [0, 1], got {cutoff!r}")
        return value
    if not isinstance(cutoff, int) and not (isinstance(cutoff, float) and cutoff.is_integer()):
        raise MeasureError(f"cutoff must be a positive integer, got {cutoff!r}")
    if not 1 <= int(cutoff) < 2**63:
        raise MeasureError(f"cutoff must be a positive integer below 2^63, got {cutoff!r}")
    return int(cutoff)


# ------------------------------------------------------------------ parsing
# \w: ir_measures names are Python identifiers, α_nDCG included.
_CANONICAL_RE = re.compile(r"^(?P<name>[^\W_][\w\-]*?)(?:\((?P<params>.*)\))?(?:@(?P<cut>[0-9.]+))?$")
#: ir_measures' parser is Python's: ``nDCG @ 10`` and ``P(rel=2) @5`` are its names too.
_AT_SPACES = re.compile(r"\s*@\s*")
#: ir_measures names whose family depends on a parameter being given: ``NumRet(rel=2)``
#: is its number of relevant documents retrieved (trec_eval num_rel_ret).
RENAMED_BY_PARAM = {("NumRet", "rel"): "NumRelRet"}
_TREC_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_\-]*?)[._](?P<rest>[0-9.].*)$")


def _known_names() -> str:
    """Every family and spelling, short: ``P@k, ...; trec_eval: P.k, ...; aliases: ...``."""
    def at(fam: Family, name: str, sep: str = "@") -> str:
        k = "r" if fam.cutoff_type is float else "k"
        return name + {"required": f"{sep}{k}", "optional": f", {name}{sep}{k}", "none": ""}[fam.cutoff]

    fams = registry.families()
    canonical = ", ".join(at(f, f.name) for f in fams)
    trec = ", ".join(
        t.name + {"cutoffs": ".k", "levels": ".r", "string": "[.params]", "none": ""}[t.kind] for f in fams for t in f.trec
    )
    aliases = ", ".join(at(f, a.name) for f in fams for a in f.aliases if a.dialect != "trec_eval")
    return f"known measures: {canonical}; trec_eval: {trec}; aliases: {aliases} (`gpukit measures` explains each)"


def _split_params(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if current:
        parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _parse_params(fam: Family, text: str, original: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in _split_params(text):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise MeasureError(f"{_echo(original)}: parameter {item!r} is not key=value")
        if key == "judged_only" and fam.param(key) is None:
            if "judged_only" in out:
                raise MeasureError(f"{_echo(original)}: parameter 'judged_only' given twice")
            out["judged_only"] = _JUDGED_ONLY.parse(value)  # every family: Measure.judged_only
            continue
        spec = fam.param(key)
        if key == "judged_only" and spec is None:
            raise MeasureError(f"{_echo(original)}: judged_only=True is trec_eval's -J (unjudged documents dropped from "
                               "the ranking), a run-wide option in gpukit, not a parameter: use `gpukit trec_eval -J` "
                               "or gpukit.compat.pytrec_eval.RelevanceEvaluator(..., judged_docs_only_flag=True)")
        if spec is None:
            if key in ("rel", "gain", "gains", "dcg"):
                raise MeasureError(f"{_echo(original)}: {fam.name} takes no {key}= parameter{_why_not(fam, key)}")
            raise MeasureError(f"{_echo(original)}: unknown parameter {key!r}{_param_list(fam)}")
        if spec.name in out:
            raise MeasureError(f"{_echo(original)}: parameter {spec.name!r} given twice")
        if spec.name == "gain":
            from gpukit.families.params import parse_gain_spelling

            out["gain"] = parse_gain_spelling(key, value)
        else:
            out[spec.name] = spec.parse(value)
    return out


#: ``judged_only=`` as written in a name, for families without a parameter of that name.
_JUDGED_ONLY = flag("judged_only", "compute on the judged documents only (trec_eval -J)")


def _build(fam: Family, params: dict[str, Any], cutoff: Any, original: str) -> Measure:
    rel, gain = params.pop("rel", None), params.pop("gain", None)
    judged_only = params.pop("judged_only", False) if fam.param("judged_only") is None else False
    try:
        return Measure(fam.name, cutoff=cutoff, rel=rel, gain=gain, params=tuple(params.items()), judged_only=judged_only)
    except MeasureError as exc:
        raise MeasureError(f"{_echo(original)}: {exc}") from None


def _trec_cutoff(text: str, original: str, trec_atol: bool) -> int:
    """A trec_eval cutoff; with ``trec_atol`` read as C's atol (``23.4`` -> 23)."""
    text = text.strip()
    if trec_atol:
        match = re.match(r"^[+-]?\d+", text)
        if match and int(match.group()) > 0:
            return int(match.group())
    elif text.isascii() and text.isdigit():
        return int(text)
    raise MeasureError(f"{_echo(original)}: cutoff must be a positive integer, got {text!r}")


def _parse_trec(fam: Family, syntax: TrecSyntax, rest: str | None, original: str, trec_atol: bool) -> list[Measure]:
    """trec_eval style: ``P.5,10``, ``ndcg_cut_10``, ``ndcg.1=3,2=9``, bare ``ndcg_cut``."""
    params = dict(syntax.preset)
    if rest is None or rest == "":
        if syntax.kind in ("cutoffs", "levels") and syntax.defaults:
            values = list(syntax.defaults)
        else:
            return [_build(fam, params, None, original)]
    elif syntax.kind == "none":
        raise MeasureError(f"{_echo(original)}: {syntax.name} takes no parameters")
    elif syntax.kind == "string":
        assert syntax.parse_string is not None and syntax.param is not None
        try:
            params[syntax.param] = syntax.parse_string(rest)
        except MeasureError as exc:
            raise MeasureError(f"{_echo(original)}: {exc}") from None
        return [_build(fam, params, None, original)]
    elif syntax.kind == "cutoffs":
        values = [_trec_cutoff(v, original, trec_atol) for v in rest.split(",")]
    else:  # levels
        try:
            values = [float(v) for v in rest.split(",")]
        except ValueError:
            raise MeasureError(f"{_echo(original)}: expected a list of numbers, got {rest!r}") from None
    out = []
    for v in values:
        if syntax.param is None:
            out.append(_build(fam, dict(params), v, original))
        else:
            out.append(_build(fam, {**params, syntax.param: v}, None, original))
    return out


def _bare_alias(fam: Family, alias: Alias, params: dict[str, Any], original: str) -> list[Measure]:
    if alias.bare_family is not None:  # ranx's bare precision: the whole retrieved set (SetP)
        return [_build(registry.get_family(alias.bare_family), params, None, original)]
    if alias.bare == "expand" and fam.trec_cutoffs:
        return [_build(fam, dict(params), k, original) for k in fam.trec_cutoffs]
    if alias.bare == "error" and alias.dialect == "ranx" and fam.name == "Success":
        raise ranx_names.bare_hit_rate_error(original)
    if alias.bare == "error":
        raise MeasureError(f"{_echo(original)} needs a cutoff, e.g. {original}@10")
    return [_build(fam, params, None, original)]


#: Names parsed already, per name index (a new family clears them): ``report["AP"]``
#: and repeated ``evaluate(..., ["nDCG@10", ...])`` calls parse the same few names
#: again and again, each parse building Measures and checking every parameter.
_PARSED: dict[tuple[str, bool], tuple[Measure, ...]] = {}
_PARSED_FOR: list = [None]  # the name index the entries were parsed against
_PARSED_MAX = 4096


def parse_measure_names(name: MeasureLike, *, trec_atol: bool = False) -> list[Measure]:
    """Parse one name, which may expand to several measures (``P.5,10``, bare ``ndcg_cut``).

    ``trec_atol`` reads trec_eval cutoff lists as trec_eval does (C's atol:
    ``ndcg_cut.23.4`` is ``ndcg_cut_23``); off by default, where such a
    cutoff is an error. Successful parses are remembered (Measures are
    immutable) until a family is registered; errors are raised every time.
    """
    if isinstance(name, Measure):
        return [name]
    if not isinstance(name, str):
        raise MeasureError(f"a measure is a name or a Measure, got {type(name).__name__}")
    index = registry.name_index()
    if _PARSED_FOR[0] is not index or len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
        _PARSED_FOR[0] = index
    key = (name, trec_atol)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = _PARSED[key] = tuple(_parse_names(name, index, trec_atol))
    return list(parsed)


def _parse_names(name: str, index, trec_atol: bool) -> list[Measure]:
    """:func:`parse_measure_names` of a string, against the registry's ``index``."""
    original, text = name, name.strip()
    if not text:
        raise MeasureError(f"empty measure name; {_known_names()}")
    if len(text) > 4096:
        raise MeasureError(f"measure name of {len(text)} characters is too long: {_echo(text)}")
    # Exact trec_eval -m roots first (ndcg_cut, map_cut, P, recall, iprec_at_recall...).
    if text in index.trec:
        fam, syntax = index.trec[text]
        return _parse_trec(fam, syntax, None, original, trec_atol)
    ranx = ranx_names.read(text)  # ranx's -lN level, rbp.X, @0 (gpukit.ranx_names)
    if ranx is not None:
        return [_build(ranx[0], ranx[1], ranx[2], original)]
    match = _CANONICAL_RE.match(_AT_SPACES.sub("@", text))
    if match:
        base, params_text, cut = match.group("name"), match.group("params"), match.group("cut")
        found = index.lookup(base)
        if found is not None and (params_text is not None or cut is not None or not _TREC_RE.match(text)):
            fam, alias = found
            params = dict(alias.preset) if alias is not None else {}
            if params_text:
                for (source, param), target in RENAMED_BY_PARAM.items():
                    if fam.name == source and any(p.partition("=")[0].strip() == param for p in _split_params(params_text)):
                        fam = registry.get_family(target)
                params.update(_parse_params(fam, params_text, original))
            if cut is None:
                if alias is not None:
                    return _bare_alias(fam, alias, params, original)
                return [_build(fam, params, None, original)]
            try:
                cutoff: Any = float(cut) if fam.cutoff_type is float else int(cut)
            except ValueError:
                raise MeasureError(f"{_echo(original)}: cutoff must be a positive integer, got {cut!r}") from None
            return [_build(fam, params, cutoff, original)]
    trec = _TREC_RE.match(text)
    if trec and trec.group("name") in index.trec:
        fam, syntax = index.trec[trec.group("name")]
        return _parse_trec(fam, syntax, trec.group("rest"), original, trec_atol)
    if trec or match:
        raise MeasureError(f"unknown measure {_echo(original)}; {_known_names()}")
    raise MeasureError(f"malformed measure name {_echo(original)}; {_known_names()}")


def parse_measure(name: MeasureLike) -> Measure:
    """Parse exactly one measure (``P.5,10`` style lists are rejected here)."""
    measures = parse_measure_names(name)
    if len(measures) != 1:
        raise MeasureError(f"{_echo(str(name))} names {len(measures)} measures; use parse_measures")
    return measures[0]


def parse_measures(names: Iterable[MeasureLike] | MeasureLike, rel: int | None = None) -> list[Measure]:
    """Parse several names (deduplicated, order kept).

    ``rel`` sets the relevance level of binary measures that did not give one
    explicitly in their name (the CLI's ``--relevance-level``).
    """
    if isinstance(names, (str, Measure)):
        names = [names]
    out: list[Measure] = []
    seen: set[Measure] = set()
    for name in names:
        explicit_rel = not isinstance(name, str) or "rel=" in name or ranx_names.has_level(name)
        for measure in parse_measure_names(name):
            if rel is not None and not explicit_rel:
                measure = measure.with_rel(rel)
            if measure not in seen:
                seen.add(measure)
                out.append(measure)
    if not out:
        raise MeasureError(f"no measures given; {_known_names()}")
    return out
