"""Measures as small immutable values, and the parser for their names.

Canonical names follow ir_measures (``nDCG@10``, ``P(rel=2)@5``, ``R@100``,
``RR@10``, ``AP``, ``Rprec``, ``Success@10``, ``Judged@10``, ``Bpref``,
``nDCG(gain=exp)@10``). trec_eval names (``ndcg_cut.10``, ``P.10``, ``P_10``,
``recip_rank``, ``map``, ``map_cut.100``, ``success.10``, ``recall.100``,
``ndcg.1=3,2=9``) and ranx names (``ndcg@10``, ``ndcg_burges@10``,
``precision@10``, ``mrr@10``, ``hit_rate@10``, ``map@100``, ``r-precision``)
are accepted as aliases and normalised to the canonical form.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Iterable, Union

from gpukit.errors import MeasureError

# family -> (needs cutoff, accepts cutoff, uses binary relevance level, uses gains)
_FAMILIES: dict[str, tuple[bool, bool, bool, bool]] = {
    "P": (True, True, True, False),
    "R": (False, True, True, False),
    "Rprec": (False, False, True, False),
    "RR": (False, True, True, False),
    "Success": (True, True, True, False),
    "AP": (False, True, True, False),
    "Bpref": (False, False, True, False),
    "nDCG": (False, True, False, True),
    "DCG": (False, True, False, True),
    "Judged": (True, True, False, False),
    "NumRet": (False, False, False, False),
    "NumRel": (False, False, True, False),
    "NumRelRet": (False, False, True, False),
}

# Lower-cased alias -> (family, default params). Separators for the cutoff are
# "@" (ir_measures, ranx), "." (trec_eval -m) and "_" (trec_eval output).
_ALIASES: dict[str, tuple[str, dict[str, object]]] = {
    "p": ("P", {}),
    "precision": ("P", {}),
    "r": ("R", {}),
    "recall": ("R", {}),
    "rprec": ("Rprec", {}),
    "r-precision": ("Rprec", {}),
    "r_precision": ("Rprec", {}),
    "rr": ("RR", {}),
    "mrr": ("RR", {}),
    "recip_rank": ("RR", {}),
    "success": ("Success", {}),
    "hit_rate": ("Success", {}),
    "hitrate": ("Success", {}),
    "ap": ("AP", {}),
    "map": ("AP", {}),
    "map_cut": ("AP", {}),
    "bpref": ("Bpref", {}),
    "ndcg": ("nDCG", {}),
    "ndcg_cut": ("nDCG", {}),
    "ndcg_burges": ("nDCG", {"gain": "exp"}),
    "dcg": ("DCG", {}),
    "dcg_cut": ("DCG", {}),
    "dcg_burges": ("DCG", {"gain": "exp"}),
    "judged": ("Judged", {}),
    "num_ret": ("NumRet", {}),
    "numret": ("NumRet", {}),
    "num_rel": ("NumRel", {}),
    "numrel": ("NumRel", {}),
    "num_rel_ret": ("NumRelRet", {}),
    "numrelret": ("NumRelRet", {}),
}

Gain = Union[str, tuple[tuple[int, float], ...]]


@dataclass(frozen=True)
class Measure:
    """One evaluation measure with its parameters.

    Attributes:
        family: ``P``, ``R``, ``Rprec``, ``RR``, ``Success``, ``AP``, ``Bpref``,
            ``nDCG``, ``DCG``, ``Judged``, ``NumRet``, ``NumRel``, ``NumRelRet``.
        cutoff: rank cutoff k (``None`` = the whole ranking).
        rel: minimum grade counted as relevant for binary measures
            (``rel=2``: grades >= 2 are relevant). ``None`` for graded
            measures, whose gains come from the grades themselves.
        gain: ``"linear"`` (gain = grade), ``"exp"`` (gain = 2**grade - 1) or a
            tuple of ``(grade, gain)`` pairs overriding the linear gain for those
            grades (trec_eval's ``ndcg.1=3,2=9``). Only for nDCG/DCG.
    """

    family: str
    cutoff: int | None = None
    rel: int | None = None
    gain: Gain | None = None

    def __post_init__(self) -> None:
        if self.family not in _FAMILIES:
            raise MeasureError(f"unknown measure family {self.family!r}; known: {', '.join(_FAMILIES)}")
        needs_cut, takes_cut, binary, graded = _FAMILIES[self.family]
        if self.cutoff is not None:
            if not takes_cut:
                raise MeasureError(f"{self.family} takes no cutoff")
            if int(self.cutoff) != self.cutoff or self.cutoff < 1:
                raise MeasureError(f"cutoff must be a positive integer, got {self.cutoff!r}")
        elif needs_cut:
            raise MeasureError(f"{self.family} needs a cutoff, e.g. {self.family}@10")
        if binary:
            rel = 1 if self.rel is None else self.rel
            if int(rel) != rel or rel < 0:
                raise MeasureError(f"rel must be a non-negative integer grade, got {self.rel!r}")
            object.__setattr__(self, "rel", int(rel))
        elif self.rel is not None:
            raise MeasureError(
                f"{self.family} takes no rel= parameter: "
                + ("gains come from the grades (use gain=...)" if graded else "it counts judged documents")
            )
        if graded:
            gain = "linear" if self.gain is None else self.gain
            if isinstance(gain, dict):
                gain = tuple(sorted((int(k), float(v)) for k, v in gain.items()))
            if not (gain in ("linear", "exp") or isinstance(gain, tuple)):
                raise MeasureError(f"gain must be 'linear', 'exp' or a {{grade: gain}} mapping, got {gain!r}")
            object.__setattr__(self, "gain", gain)
        elif self.gain is not None:
            raise MeasureError(f"{self.family} takes no gain= parameter")

    def __str__(self) -> str:
        params = []
        if self.rel is not None and self.rel != 1:
            params.append(f"rel={self.rel}")
        if self.gain == "exp":
            params.append("gain=exp")
        elif isinstance(self.gain, tuple):
            inner = ",".join(f"{g}:{v:g}" for g, v in self.gain)
            params.append(f"gains={{{inner}}}")
        text = self.family + (f"({','.join(params)})" if params else "")
        return text + (f"@{self.cutoff}" if self.cutoff is not None else "")

    @property
    def name(self) -> str:
        return str(self)

    @property
    def is_graded(self) -> bool:
        return _FAMILIES[self.family][3]

    @property
    def is_binary(self) -> bool:
        return _FAMILIES[self.family][2]

    def with_rel(self, rel: int) -> "Measure":
        """Same measure at another relevance level (no-op for graded measures)."""
        return replace(self, rel=rel) if self.is_binary else self

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

_CANONICAL_RE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z_\-]*?)(?:\((?P<params>.*)\))?(?:@(?P<cut>\d+))?$")
_TREC_RE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z_\-]*?)[._](?P<rest>[0-9].*)$")


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


def _known_names() -> str:
    return (
        "canonical: P@k, R@k, Rprec, RR, RR@k, Success@k, AP, AP@k, Bpref, nDCG, nDCG@k, DCG@k, "
        "Judged@k, NumRet, NumRel, NumRelRet with parameters (rel=N) and for nDCG/DCG (gain=exp) "
        "or (gains={grade:gain,...}); trec_eval: P.k, recall.k, Rprec, recip_rank, map, map_cut.k, "
        "ndcg, ndcg_cut.k, success.k, bpref, num_ret, num_rel, num_rel_ret; ranx: precision@k, "
        "recall@k, mrr@k, hit_rate@k, map@k, ndcg@k, ndcg_burges@k, dcg@k, r-precision, bpref"
    )


def _family_for(name: str, original: str) -> tuple[str, dict[str, object]]:
    if name in _FAMILIES:
        return name, {}
    alias = _ALIASES.get(name.lower())
    if alias is None:
        raise MeasureError(f"unknown measure {original!r}. Known measures: {_known_names()}")
    return alias[0], dict(alias[1])


def _parse_param(key: str, value: str, original: str) -> tuple[str, object]:
    key = key.strip()
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]  # ir_measures quotes string values: dcg='exp-log2'
    if key == "rel":
        try:
            return "rel", int(value)
        except ValueError:
            raise MeasureError(f"{original!r}: rel must be an integer grade, got {value!r}") from None
    if key == "gain":
        if value not in ("linear", "exp"):
            raise MeasureError(f"{original!r}: gain must be 'linear' or 'exp', got {value!r}")
        return "gain", value
    if key == "dcg":  # ir_measures' spelling of the gain/discount pair
        mapping = {"log2": "linear", "exp-log2": "exp"}
        if value not in mapping:
            raise MeasureError(f"{original!r}: dcg must be 'log2' or 'exp-log2', got {value!r}")
        return "gain", mapping[value]
    if key == "gains":
        try:
            gains = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise MeasureError(f"{original!r}: gains must look like {{1:3,2:9}}, got {value!r}") from None
        if not isinstance(gains, dict) or not gains:
            raise MeasureError(f"{original!r}: gains must be a non-empty {{grade: gain}} mapping")
        return "gain", gains
    if key == "judged_only" and value.lower() in ("false", "0"):
        return "", None
    raise MeasureError(f"{original!r}: unknown parameter {key!r} (known: rel, gain, gains, dcg)")


def _build(family: str, params: dict[str, object], cutoff: int | None, original: str) -> Measure:
    try:
        return Measure(family, cutoff=cutoff, rel=params.get("rel"), gain=params.get("gain"))  # type: ignore[arg-type]
    except MeasureError as exc:
        raise MeasureError(f"{original!r}: {exc}") from None


def _parse_trec(name: str, rest: str, original: str) -> list[Measure]:
    """trec_eval style: ``P.5,10``, ``ndcg_cut_10``, ``ndcg.1=3,2=9``."""
    family, params = _family_for(name, original)
    if "=" in rest:  # trec_eval gain parameters: level=gain pairs
        gains: dict[int, float] = {}
        for pair in rest.split(","):
            level, _, gain = pair.partition("=")
            try:
                gains[int(level)] = float(gain)
            except ValueError:
                raise MeasureError(f"{original!r}: expected level=gain pairs, got {pair!r}") from None
        params["gain"] = gains
        return [_build(family, params, None, original)]
    measures = []
    for cut in rest.split(","):
        if not cut.strip().isdigit():
            raise MeasureError(f"{original!r}: cutoff must be a positive integer, got {cut!r}")
        measures.append(_build(family, params, int(cut), original))
    return measures


def parse_measure_names(name: str) -> list[Measure]:
    """Parse one name, which in trec_eval syntax may expand to several cutoffs."""
    if isinstance(name, Measure):
        return [name]
    original = name
    text = name.strip()
    if not text:
        raise MeasureError(f"empty measure name. Known measures: {_known_names()}")
    match = _CANONICAL_RE.match(text)
    if match and (match.group("params") is not None or match.group("cut") is not None or "." not in text):
        family, params = _family_for(match.group("name"), original)
        if match.group("params"):
            for item in _split_params(match.group("params")):
                key, sep, value = item.partition("=")
                if not sep:
                    raise MeasureError(f"{original!r}: parameter {item!r} is not key=value")
                k, v = _parse_param(key, value, original)
                if k:
                    params[k] = v
        cutoff = int(match.group("cut")) if match.group("cut") else None
        if match.group("cut") is None and "_" in match.group("name"):
            # trec_eval output form, e.g. ndcg_cut_10, P_10 (but not recip_rank)
            trec = _TREC_RE.match(text)
            if trec and trec.group("name").lower() in _ALIASES | {f.lower(): () for f in _FAMILIES}:
                return _parse_trec(trec.group("name"), trec.group("rest"), original)
        return [_build(family, params, cutoff, original)]
    trec = _TREC_RE.match(text)
    if trec:
        return _parse_trec(trec.group("name"), trec.group("rest"), original)
    raise MeasureError(f"malformed measure name {original!r}. Known measures: {_known_names()}")


def parse_measure(name: MeasureLike) -> Measure:
    """Parse exactly one measure (``P.5,10`` style lists are rejected here)."""
    measures = parse_measure_names(name) if isinstance(name, str) else [name]
    if len(measures) != 1:
        raise MeasureError(f"{name!r} names {len(measures)} measures; use parse_measures")
    return measures[0]


def parse_measures(names: Iterable[MeasureLike] | MeasureLike, rel: int | None = None) -> list[Measure]:
    """Parse several names (deduplicated, order kept).

    ``rel`` sets the relevance level of binary measures that did not give one
    explicitly in their name (the CLI's ``--relevance-level``).
    """
    if isinstance(names, (str, Measure)):
        names = [names]
    out: list[Measure] = []
    for name in names:
        explicit_rel = isinstance(name, str) and "rel=" in name
        for measure in parse_measure_names(name) if isinstance(name, str) else [name]:
            if rel is not None and not explicit_rel and not isinstance(name, Measure):
                measure = measure.with_rel(rel)
            if measure not in out:
                out.append(measure)
    if not out:
        raise MeasureError(f"no measures given. Known measures: {_known_names()}")
    return out
