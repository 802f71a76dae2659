"""What a registry record says about one measure family.

A :class:`Family` holds everything gpukit knows about a family of measures —
its names in every dialect, its typed parameters, its cutoff rule, which
inputs of the ranking form it reads, its kernel, when its value is defined,
how it aggregates under each convention, its trec_eval output name and
number format, and its explanation. The parser, ``evaluate``, the report's
conventions, ``--format trec``, ``gpukit trec_eval``, the streaming evaluator,
``gpukit measures`` and the docs table are all derived from these records.

This module defines the record types only; the records live in the family
modules of :mod:`gpukit.families`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from gpukit.errors import RegistryError

if TYPE_CHECKING:  # pragma: no cover
    from gpukit.conventions import Convention
    from gpukit.measures import Measure
    from gpukit.ranking import RankedJudgments

#: A kernel adapter: (ranking, representative measure, cutoffs) ->
#: (values (T, C) float64, defined (T, C) bool). One call answers every
#: cutoff of a group of measures that differ only in their cutoff.
Kernel = Callable[["RankedJudgments", "Measure", Sequence[Any]], tuple[torch.Tensor, torch.Tensor]]

#: Inputs a kernel may read from the ranking form (see RankedJudgments).
RANKING_INPUTS = frozenset(
    {
        "grades",  # (T, K) ranked grades (NOT_JUDGED where absent)
        "ideal",  # (T, L) judged grades of each topic, sorted descending
        "num_ret",  # (T,) retrieved documents
        "pool",  # negative grades: in the pool but unjudged
        "annotated",  # (T, K) ranked doc judged for any query of the qrels (BEIR's Hole@k)
        "topics",  # the topic set itself (num_q)
        "run_name",  # the run tag (runid)
        "prefs",  # preference judgments (gpukit.judgments.prefs_ranking.PrefsRanking)
        "judgment_groups",  # several judgment groups per query (JudgmentGroupRanking)
        "subtopics",  # judgments per subtopic, (T, K, S) (gpukit.judgments.subtopic_ranking.SubtopicRanking)
    }
)

#: How a family aggregates per-query values into the reported value.
AGGREGATES = frozenset({"mean", "sum", "gmean", "first"})


@dataclass(frozen=True)
class Param:
    """One typed, documented parameter of a family (ir_measures' ParamInfo).

    ``parse`` turns the text of a name (``p=0.8``) into a value; ``check``
    validates and normalises a value (from text or from Python) and raises
    :class:`~gpukit.errors.MeasureError` with the problem; ``show`` writes it
    back in canonical names. A parameter whose value equals ``default`` is
    left out of the canonical name.
    """

    name: str
    doc: str
    default: Any
    parse: Callable[[str], Any]
    check: Callable[[Any], Any]
    show: Callable[[Any], str] = str
    #: other spellings accepted in names (ir_measures' ``dcg='exp-log2'``).
    spellings: tuple[str, ...] = ()
    #: show the value in canonical names even when it is the default (where
    #: tools disagree on the default, e.g. RBP's p: the name must carry it).
    always_show: bool = False


@dataclass(frozen=True)
class Alias:
    """A name of the family in another dialect.

    ``preset`` fixes parameters (``ndcg_burges`` = nDCG with ``gain=exp``).
    ``bare`` says what the name means without a cutoff: ``"uncut"`` (the
    whole ranking), ``"error"`` or ``"expand"`` (trec_eval's default cutoffs
    of the family, ``Family.trec_cutoffs``). ``bare_family``, where given, is
    the family the name means without a cutoff instead (ranx's bare
    ``precision`` reads the whole ranking: SetP); it must take the
    family's parameters.
    """

    name: str
    dialect: str  # "ir_measures", "trec_eval", "ranx", "gpukit"
    preset: tuple[tuple[str, Any], ...] = ()
    bare: str = "uncut"
    bare_family: str | None = None


@dataclass(frozen=True)
class TrecSyntax:
    """How trec_eval spells one of the family's ``-m`` names and its parameters.

    ``kind`` is the meaning of the text after the dot (``P.5,10``):

    * ``"none"``: no parameters.
    * ``"cutoffs"``: a list of rank cutoffs, one measure each (trec_eval reads
      each with ``atol``: ``23.4`` is 23); printed ``name_K``.
    * ``"levels"``: a list of float levels, one measure each (``iprec_at_recall``,
      ``Rprec_mult``); printed ``name_%3.2f``.
    * ``"string"``: the whole text is one parameter of one measure (``ndcg``'s
      gains ``1=3,2=9``, ``utility.2,-1,0,0``, ``11pt_avg..25,.5``); printed
      ``name_TEXT`` when given, ``name`` when defaulted.

    ``defaults`` are the cutoffs/levels trec_eval uses when none are given;
    ``groups`` the -m nicknames whose list (trec_eval's measures.c) holds the name.
    ``param`` names the gpukit parameter that a ``"string"`` text or a
    ``"levels"`` value sets (``None``: the cutoff).
    """

    name: str
    kind: str = "none"
    defaults: tuple[Any, ...] = ()
    preset: tuple[tuple[str, Any], ...] = ()
    param: str | None = None
    parse_string: Callable[[str], Any] | None = None
    #: trec_eval's -m nicknames (``official``, ``set``, ``all_trec``,
    #: ``all_prefs``, ``prefs``, ``qrels_jg``) that include this name: the one
    #: source of :data:`gpukit.trec_eval.measure_names.NICKNAMES`.
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    """Everything about one measure family. See the module docstring."""

    name: str
    #: One line: what the family measures.
    summary: str
    #: The formula and the convention, in words (docs, ``gpukit measures``).
    definition: str
    kernel: Kernel
    #: ``"required"``, ``"optional"`` or ``"none"``.
    cutoff: str = "none"
    #: Python type of the cutoff: int ranks, or float levels (IPrec@0.1).
    cutoff_type: type = int
    params: tuple[Param, ...] = ()
    aliases: tuple[Alias, ...] = ()
    trec: tuple[TrecSyntax, ...] = ()
    #: trec_eval's default cutoffs when its name is given bare.
    trec_cutoffs: tuple[Any, ...] = ()
    #: Inputs of the ranking form the kernel reads (subset of RANKING_INPUTS).
    needs: frozenset[str] = frozenset({"grades"})
    #: When the per-query value is defined, in words; None = always.
    defined_when: str | None = None
    #: Aggregate per convention name; conventions not listed use "mean".
    aggregate: tuple[tuple[str, str], ...] = ()
    #: True, or the reason the streaming evaluator cannot compute it.
    streamable: bool | str = True
    #: trec_eval output: "float" (%.4f), "int" (%ld) or "string".
    trec_format: str = "float"
    #: Whether trec_eval prints a per-query line (-q) for it.
    trec_per_query: bool = True
    #: Extra conventions of a measure, in words, for the report.
    describe: Callable[["Measure"], dict[str, str]] | None = None
    #: trec_eval output name of a measure (None: not a trec_eval measure).
    trec_name: Callable[["Measure"], str | None] | None = None
    #: Names exercised by the registry-wide tests (reference, streaming).
    examples: tuple[str, ...] = ()
    #: Checks across a measure's parameters (raise MeasureError), run when a Measure is made.
    validate: Callable[["Measure"], None] | None = None
    #: The kernel forms the ranking's running hits (``RankedJudgments.running_hits``),
    #: which P, R and Success then read instead of counting; ``compute_measures``
    #: runs such families first (the order changes no value).
    forms_running_hits: bool = False
    #: The kernel reads the ideal grades although the family is not graded
    #: (Compat's ideal ranking): a dense batch must then sort its targets.
    reads_ideal_grades: bool = False

    def __post_init__(self) -> None:
        if self.cutoff not in ("required", "optional", "none"):
            raise RegistryError(f"{self.name}: cutoff rule {self.cutoff!r}")
        unknown = set(self.needs) - RANKING_INPUTS
        if unknown:
            raise RegistryError(f"{self.name}: unknown ranking inputs {sorted(unknown)}")
        for _, agg in self.aggregate:
            if agg not in AGGREGATES:
                raise RegistryError(f"{self.name}: unknown aggregate {agg!r}")

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name or name in p.spellings:
                return p
        return None

    def aggregate_under(self, convention: "Convention") -> str:
        return dict(self.aggregate).get(convention.name, "mean")
