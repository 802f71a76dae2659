"""ranx's metric syntax: the ``-lN`` relevance level, ``rbp.X`` and ``@0``.

ranx 0.3 (``ranx.meta.evaluate.extract_metric_and_params``) spells a measure
``name[@k][-lN]``: ``ndcg@10-l2`` is nDCG@10 where grades >= 2 are relevant,
``@0`` or no ``@k`` is the whole ranking, and the level N defaults to 1.
RBP is ``rbp.X[-lN]`` (or ``rbp@X``): persistence ``0.X``, read from the
digits (``rbp.95`` is p = 0.95, ``rbp.5`` p = 0.5).

The names themselves are the families' ``ranx`` aliases (gpukit/families/*.py:
``hits``, ``precision``, ``f1``, ``hit_rate``, ``r-precision``, ``mrr``,
``dcg``, ``ndcg_burges``, ...) and the ranx names gpukit reads in another
dialect (``ndcg``, ``map``, ``recall``); :func:`read` reads ranx's syntax
around them, for names that use it (a level, ``rbp.X``, ``@0``). Plain names
(``ndcg@10``, ``recall@100``, bare ``recall``) are the ordinary parser's.

How the level N is applied, to give ranx's values (ranx drops the judgments
below the level from its qrels):

* binary families (P, R, Success, Hits, F, RR, AP, Rprec, SetP, SetF): ``rel=N``;
* graded ones (nDCG, DCG, RBP): ``min_grade=N``, grades below N gain 0;
  N <= 1 changes nothing there (grade 0 gains 0).

Without a cutoff a name means the whole ranking, as in ranx: ``recall-l2`` is
R(rel=2) (where bare ``recall`` is trec_eval's nine cutoffs), ``precision``
is SetP and ``f1`` SetF (their aliases' ``bare_family``). ``rbp.X`` is
``RBP(p=0.X,scale=False)``: ranx weighs raw grades over the whole ranking,
without trec_eval's gain scaling.

Refused, with the gpukit name to use: ranx's ``bpref`` with a level (ranx
counts negative grades as judged non-relevant and scores NaN without a
judged non-relevant document; gpukit's Bpref is trec_eval's, as bare
``bpref`` is), bare ``hit_rate`` (gpukit's Success needs a cutoff) and
``rbp`` without a persistence.
"""
from __future__ import annotations

import re
from typing import Any

from gpukit.errors import MeasureError
from gpukit.families import name_index
from gpukit.families.spec import Family

#: ranx 0.3's metric names (``ranx.metrics.metric_switch``), in its order.
RANX_METRICS = ("hits", "hit_rate", "precision", "recall", "f1", "r-precision", "mrr", "map", "dcg", "dcg_burges",
                "ndcg", "ndcg_burges", "bpref", "rbp")

_SYNTAX = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_\-]*?)(?:(?P<sep>[@.])(?P<arg>\d+))?(?:-l(?P<level>\d+))?$")


def is_ranx_name(name: str) -> bool:
    """Whether ``name`` (no cutoff, any case) is one of ranx's metric names or a ``ranx`` alias."""
    key = name.lower()
    if key in RANX_METRICS:
        return True
    found = name_index().lookup(key)
    return found is not None and found[1] is not None and found[1].dialect == "ranx"


def has_level(text: str) -> bool:
    """Whether ``text`` is a ranx name with a ``-lN`` level (it then sets its relevance level itself)."""
    match = _SYNTAX.match(text.strip())
    return bool(match and match.group("level") is not None and is_ranx_name(match.group("name")))


def bare_hit_rate_error(text: str) -> MeasureError:
    return MeasureError(f"{text!r}: ranx's bare hit_rate reads the whole ranking, and gpukit's Success needs a cutoff: "
                        "use hit_rate@k (Success@k) with k at least the ranking depth, e.g. hit_rate@1000")


def read(text: str) -> tuple[Family, dict[str, Any], int | None] | None:
    """(family, parameters, cutoff) of a name in ranx's syntax; ``None`` when
    ``text`` does not use it (the ordinary parser reads it). MeasureError for
    a ranx name gpukit has no equal of (see the module docstring)."""
    match = _SYNTAX.match(text)
    if match is None:
        return None
    name, sep, arg, level = (match.group(g) for g in ("name", "sep", "arg", "level"))
    if not is_ranx_name(name):
        if level is not None and name_index().lookup(name) is not None:
            raise MeasureError(f"{text!r}: -l{level} is ranx's relevance level, read after ranx's names only "
                               f"({', '.join(RANX_METRICS)}); give {name} the level as a parameter (rel={level})")
        return None
    key = name.lower()
    if key == "rbp":
        if arg is None:
            if level is None:
                return None  # bare rbp: trec_eval's
            raise MeasureError(f"{text!r}: ranx's rbp needs a persistence, e.g. rbp.95-l{level} (p = 0.95)")
        fam, params, cutoff = name_index().canonical["RBP"], {"p": float(f"0.{arg}"), "scale": False}, None
    else:
        if level is None and (arg is None or sep != "@" or int(arg) != 0):
            return None  # no ranx-only syntax: ndcg@10, recall, ...
        if sep == ".":
            return None  # ranx reads cutoffs after "@" only
        if key == "bpref":
            rel = 1 if level is None else int(level)
            raise MeasureError(f"{text!r}: ranx's bpref counts negative grades as judged non-relevant and is NaN "
                               f"without a judged non-relevant document; gpukit's Bpref is trec_eval's: use Bpref(rel={rel})")
        found = name_index().lookup(key)
        assert found is not None
        fam, alias = found
        params = dict(alias.preset) if alias is not None else {}
        cutoff = int(arg) if arg is not None and int(arg) > 0 else None
        if cutoff is None and alias is not None and alias.bare_family is not None:
            fam = name_index().canonical[alias.bare_family]
        elif cutoff is None and fam.cutoff == "required":
            raise bare_hit_rate_error(text) if fam.name == "Success" else MeasureError(
                f"{text!r}: ranx's bare {key} reads the whole ranking; gpukit's {fam.name} needs a cutoff")
    if level is not None:
        rel_spec = fam.param("rel")
        if rel_spec is not None and rel_spec.default is not None:
            params["rel"] = int(level)
        elif fam.param("min_grade") is not None:
            if int(level) > 1:  # grade 0 gains 0: levels 0 and 1 change no gain
                params["min_grade"] = int(level)
        else:  # pragma: no cover - every ranx name is binary or graded
            raise MeasureError(f"{text!r}: {fam.name} has no relevance level")
    return fam, params, cutoff
