"""The measure registry: one record per family, holding everything about it.

Adding a family is one kernel plus one :class:`Family` record registered in
a module imported here; the parser, ``evaluate``, reports, trec_eval names,
the streaming evaluator, ``gpukit measures`` and the docs table follow.
Modules are imported in trec_eval's measure order where it has one.
"""
from gpukit.families import counts, binary, graded, trec_binary, trec_graded, user_models, prefs  # noqa: F401  (registration)
from gpukit.families import evidence  # noqa: F401  (registration; not trec_eval measures)
from gpukit.families import diversity  # noqa: F401  (registration; ndeval's measures)
from gpukit.families import compat  # noqa: F401  (registration; ir_measures' compat provider)
from gpukit.families import cwl  # noqa: F401  (registration; ir_measures' cwl_eval measures)
from gpukit.families.registry import TREC_ORDER, families, get_family, name_index, register
from gpukit.families.spec import Alias, Family, Param, TrecSyntax

__all__ = ["Alias", "Family", "Param", "TREC_ORDER", "TrecSyntax", "families", "get_family", "name_index", "register"]
