"""The registry: one :class:`~gpukit.families.spec.Family` record per family.

Family modules call :func:`register` at import; :mod:`gpukit.families`
imports them all. Lookups are by canonical name (:func:`get_family`) or by
any spelling (:func:`name_index`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from gpukit.errors import MeasureError, RegistryError
from gpukit.families.spec import Alias, Family, TrecSyntax

_FAMILIES: dict[str, Family] = {}

#: trec_eval 10.0's measure table order (measures.c): trec_eval computes and
#: prints measures in this order, whatever the order of its -m options.
TREC_ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult",
    "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut",
    "map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
    "num_nonrel_judged_ret", "num_nonjudged_ret", "prefs_num_prefs_poss", "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel",
    "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
    "prefs_pair_imp", "prefs_avgjg_imp", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "yaap", "rbp",
    "rbp_resid", "unj",
)


def register(family: Family) -> Family:
    """Add a family; its names must not collide with another family's."""
    if family.name in _FAMILIES:
        raise RegistryError(f"family {family.name!r} registered twice")
    _FAMILIES[family.name] = family
    name_index.cache_clear()
    name_index()  # fail at import on a name collision
    return family


def get_family(name: str) -> Family:
    try:
        return _FAMILIES[name]
    except KeyError:
        raise MeasureError(f"unknown measure family {name!r}; known: {', '.join(_FAMILIES)}") from None


def families() -> list[Family]:
    """Every family, in registration order."""
    return list(_FAMILIES.values())


@dataclass(frozen=True)
class NameIndex:
    canonical: dict[str, Family]
    aliases: dict[str, tuple[Family, Alias]]  # exact spelling
    folded: dict[str, tuple[Family, Alias]]  # lower-cased spelling
    trec: dict[str, tuple[Family, TrecSyntax]]  # trec_eval -m roots, case-sensitive

    def lookup(self, base: str) -> tuple[Family, Alias | None] | None:
        """Family (and alias, if not canonical) for a name without cutoff or parameters."""
        if base in self.canonical:
            return self.canonical[base], None
        if base in self.aliases:
            return self.aliases[base]
        return self.folded.get(base.lower())


@lru_cache(maxsize=1)
def name_index() -> NameIndex:
    canonical = dict(_FAMILIES)
    aliases: dict[str, tuple[Family, Alias]] = {}
    folded: dict[str, tuple[Family, Alias]] = {}
    trec: dict[str, tuple[Family, TrecSyntax]] = {}
    for fam in _FAMILIES.values():
        for alias in fam.aliases:
            for table, key in ((aliases, alias.name), (folded, alias.name.lower())):
                other = table.get(key)
                if other is not None and (other[0].name, other[1].preset) != (fam.name, alias.preset):
                    raise RegistryError(f"alias {alias.name!r} of {fam.name} is already {other[0].name}'s")
                table.setdefault(key, (fam, alias))
        for syntax in fam.trec:
            if syntax.name in trec and trec[syntax.name][0].name != fam.name:
                raise RegistryError(f"trec_eval name {syntax.name!r} of {fam.name} is already {trec[syntax.name][0].name}'s")
            trec[syntax.name] = (fam, syntax)
    return NameIndex(canonical, aliases, folded, trec)
