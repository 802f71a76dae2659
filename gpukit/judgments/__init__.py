"""Judgments, one module per kind, each with its reader and its ranking form.

=================  ==========================================  ================================
kind               class (reader)                              ranking form
=================  ==========================================  ================================
``qrels``          :class:`~gpukit.judgments.qrels.Qrels`       :mod:`gpukit.ranking`
``prefs``          :class:`~gpukit.judgments.prefs.Prefs`       :mod:`gpukit.judgments.prefs_ranking`
``judgment_groups`` :class:`~gpukit.judgments.judgment_groups.JudgmentGroups`  :mod:`gpukit.judgments.prefs_ranking`
``subtopics``      :class:`~gpukit.judgments.subtopics.SubtopicQrels`  :mod:`gpukit.judgments.subtopic_ranking`
=================  ==========================================  ================================

Every class states its ``kind`` and forms its own ranking
(``form_ranking(run, complete=, max_depth=, score_dtype=)``), so that
:func:`gpukit.evaluate` takes any of them and dispatches on the type. A
measure family names the kind it reads in its record (``needs``); asking a
measure of judgments of another kind is an error naming the class to use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Sequence

from gpukit.errors import MeasureError
from gpukit.lazy_names import lazy_names

if TYPE_CHECKING:
    from gpukit.measures import Measure

#: Each kind of judgments and how a user makes it (for error messages).
KINDS: dict[str, str] = {
    "qrels": "ordinary qrels (gpukit.Qrels.from_trec: 'query 0 doc grade')",
    "prefs": "preference judgments (gpukit.Prefs.from_trec, or Prefs.from_qrels_file for trec_eval -R qrels_prefs)",
    "judgment_groups": "judgment groups (gpukit.JudgmentGroups.from_trec: trec_eval -R qrels_jg)",
    "subtopics": "judgments per subtopic (gpukit.SubtopicQrels.from_trec: 'query subtopic doc grade', ndeval's format)",
}

_LAZY: dict[str, str] = {
    "JudgmentGroups": "gpukit.judgments.judgment_groups",
    "Prefs": "gpukit.judgments.prefs",
    "Qrels": "gpukit.judgments.qrels",
    "SubtopicQrels": "gpukit.judgments.subtopics",
}
__all__ = sorted([*_LAZY, "KINDS", "JudgmentsKind", "check_kind", "kind_needed", "trec_nickname"])
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


class JudgmentsKind:
    """What every judgments class states about its kind (see above):
    ``kind`` (a key of :data:`KINDS`), the measures :func:`gpukit.evaluate`
    computes when none are named (``None``: they must be named), the
    convention it uses by default, the nicknames that stand for several of
    its measures, and ``form_ranking(run, complete=, max_depth=,
    score_dtype=)``, the ranking form its families' kernels read."""

    kind: ClassVar[str]
    default_measures: ClassVar[tuple[str, ...] | None] = None
    default_convention: ClassVar[str] = "gpukit"

    @staticmethod
    def nicknames() -> dict[str, Sequence[str]]:
        return {}


def kind_needed(measure: "Measure") -> str:
    """The kind of judgments ``measure``'s family reads (its record's ``needs``)."""
    return next((k for k in KINDS if k != "qrels" and k in measure.spec.needs), "qrels")


def trec_nickname(group: str, kind: str) -> tuple[str, ...]:
    """The measures of trec_eval's ``-m`` nickname ``group`` that read
    judgments of ``kind`` (trec_eval's ``num_q`` and ``runid`` are printed by
    ``gpukit trec_eval`` beside them)."""
    from gpukit.measures import parse_measures
    from gpukit.trec_eval.measure_names import nickname_measures

    return tuple(n for n in nickname_measures(group) if kind_needed(parse_measures([n])[0]) == kind)


def check_kind(measures: Sequence["Measure"], kind: str) -> None:
    """Refuse a measure that reads judgments of another kind than ``kind``,
    naming the judgments it needs and how to make them."""
    for m in measures:
        need = kind_needed(m)
        if need != kind:
            raise MeasureError(f"{m} needs {KINDS[need]}, not {KINDS[kind].split(' (')[0]}")
