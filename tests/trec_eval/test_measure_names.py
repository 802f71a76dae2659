"""trec_eval's -m nicknames, derived from the registry records
(``TrecSyntax.groups``), against trec_eval 10.0's own lists.

Four nicknames are read from what trec_eval printed for them in its own
quick test (tests/data/trec_eval: ``out.test`` is the default ``official``,
``out.test.aq`` is ``-m all_trec -q``, ``out.test.prefs`` ``-m all_prefs``,
``out.test.qrels_jg`` ``-m qrels_jg``): the measure-table name of each
printed line. ``set`` and ``prefs`` have no quick-test output; their lists
are measures.c's ``set_names`` and ``prefs_off_name`` as trec_eval 10.0
ships them.
"""
from __future__ import annotations

import os

import pytest
from fixture_paths import TESTS

from gpukit.families import TREC_ORDER
from gpukit.trec_eval.measure_names import NICKNAMES

DATA = os.path.join(str(TESTS), "data", "trec_eval")

PRINTED = {"official": "out.test", "all_trec": "out.test.aq", "all_prefs": "out.test.prefs", "qrels_jg": "out.test.qrels_jg"}
MEASURES_C = {
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "prefs": ("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
              "prefs_simp", "prefs_pair", "prefs_avgjg"),
}


def table_name(printed: str) -> str:
    """The measure-table name a printed measure comes from (``P_5`` -> ``P``, ``set_P`` -> ``set_P``)."""
    if printed in TREC_ORDER:
        return printed
    roots = [r for r in TREC_ORDER if printed.startswith(r + "_")]
    assert roots, printed
    return max(roots, key=len)


def printed_names(file: str) -> set[str]:
    with open(os.path.join(DATA, file)) as fh:
        return {table_name(line.split()[0]) for line in fh if line.strip()}


@pytest.mark.parametrize("nickname", sorted(PRINTED))
def test_nickname_is_what_trec_eval_printed_for_it(nickname):
    assert set(NICKNAMES[nickname]) == printed_names(PRINTED[nickname])


@pytest.mark.parametrize("nickname", sorted(MEASURES_C))
def test_nickname_is_trec_evals_list(nickname):
    assert set(NICKNAMES[nickname]) == set(MEASURES_C[nickname])


def test_every_nickname_is_in_trec_evals_table_order():
    for names in NICKNAMES.values():
        assert list(names) == sorted(names, key=TREC_ORDER.index)
