"""The building shared by judgment-group qrels and subtopic qrels (gpukit.judgments.grouped)."""
from __future__ import annotations

import numpy as np
import pytest

from gpukit.errors import InputFormatError
from gpukit.judgments.judgment_groups import JudgmentGroups
from gpukit.judgments.subtopics import SubtopicQrels

NESTED = {"q2": {"10": {"d1": 1, "d0": 0}, "2": {"d1": 2}}, "q1": {"1": {"d3": -1}}}


@pytest.mark.parametrize("cls", [JudgmentGroups, SubtopicQrels])
def test_dict_and_arrays_build_the_same_sorted_rows(cls):
    rows = [(q, g, d, r) for q, groups in NESTED.items() for g, docs in groups.items() for d, r in docs.items()]
    from_dict = cls.from_dict(NESTED)
    from_arrays = cls.from_arrays(*zip(*reversed(rows)))  # input order does not matter
    assert from_dict.to_dict() == from_arrays.to_dict() == NESTED
    assert from_dict.query_ids.to_pylist() == ["q1", "q2"]
    # Rows sorted by (query, group, doc); group order: byte-wise for JGs, numeric for subtopics.
    groups = from_dict.jg_ids if cls is JudgmentGroups else from_dict.subtopic_ids
    assert groups.to_pylist() == (["1", "10", "2"] if cls is JudgmentGroups else ["1", "2", "10"])
    assert from_dict.doc_ids.to_pylist() == (["d3", "d0", "d1", "d1"] if cls is JudgmentGroups else ["d3", "d1", "d0", "d1"])
    np.testing.assert_array_equal(from_dict.grades, from_arrays.grades)


@pytest.mark.parametrize("cls, what", [(JudgmentGroups, "qrels_jg"), (SubtopicQrels, "subtopic qrels")])
def test_bad_columns_are_errors_naming_the_row(cls, what):
    with pytest.raises(InputFormatError, match=r"row 1: grade 2\.5 is not an integer"):
        cls.from_arrays(["q", "q"], ["1", "1"], ["a", "b"], [1, 2.5])
    with pytest.raises(InputFormatError, match="grades must be integers, got dtype"):
        cls.from_arrays(["q"], ["1"], ["a"], ["x"])
    with pytest.raises(InputFormatError, match="differ in length"):
        cls.from_arrays(["q"], ["1"], [], [1])
    with pytest.raises(InputFormatError, match=f"empty {what}: no judgments"):
        cls.from_dict({})
    with pytest.raises(InputFormatError, match=r"out of range"):
        cls.from_arrays(["q"], ["1"], ["a"], [2**31])
    with pytest.raises(InputFormatError, match=r"rows 0 and 2"):
        cls.from_arrays(["q", "q", "q"], ["1", "2", "1"], ["a", "a", "a"], [1, 1, 0])
