"""docs/fusion.md's worked example, executed; each commented value checked
against its formula written here."""
from __future__ import annotations

import math
import re

from fixture_paths import REPO

import gpukit

DOC = REPO / "docs" / "fusion.md"


def _example() -> dict:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1
    namespace: dict = {}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # noqa: S102 - the documented example
    return namespace


def test_worked_example_values():
    ns = _example()
    rrf = ns["rrf"].to_dict()["q1"]
    assert math.isclose(rrf["d1"], 1 / 61 + 1 / 62) and math.isclose(rrf["d3"], 1 / 62 + 1 / 61)
    assert math.isclose(rrf["d2"], 1 / 63) and math.isclose(rrf["d6"], 1 / 63)
    assert list(rrf)[:2] == ["d3", "d1"]  # tied: doc id descending
    assert list(rrf)[2:] == ["d6", "d2"]
    combsum = ns["combsum"].to_dict()["q1"]
    # min-max: a (3, 2, 2) -> d1 1, d2 0, d3 0; b (0.9, 0.4, 0.1) -> d3 1, d1 0.375, d6 0
    expected = {"d1": 1 + (0.4 - 0.1) / 0.8, "d3": 0 + 1.0, "d2": 0.0, "d6": 0.0}
    assert combsum.keys() == expected.keys()
    assert all(math.isclose(combsum[d], v, abs_tol=1e-12) for d, v in expected.items())
    assert math.isclose(ns["wsum"].to_dict()["q1"]["d1"], 0.2 * 1 + 0.8 * 0.375)
    rr = ns["gpukit"].evaluate(ns["qrels"], ns["combsum"], ["RR"])["RR"].per_query.tolist()
    assert rr == [1 / 2, 1 / 2]
    best = ns["best"]
    assert sum(best.params["weights"]) == 1.0 and len(best.params["weights"]) == 2
    assert best.score == gpukit.evaluate(ns["qrels"], ns["fused"], "nDCG@10")["nDCG@10"].mean
    assert best.score == max(best.scores)
