"""docs/statistics.md's worked example, executed: it prints the text block that follows it, and
its numbers are those of statsmodels' pairwise_tukeyhsd and of RR = 1 / rank worked here."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from fixture_paths import REPO

DOC = REPO / "docs" / "statistics.md"


def _example() -> tuple[dict, str, str]:
    section = DOC.read_text().split("\n## Worked example\n", 1)[1].split("\n## ", 1)[0]
    code, printed = re.findall(r"```python\n(.*?)```\n\n```text\n(.*?)```", section, re.DOTALL)[0]
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"{DOC} (Worked example)", "exec"), namespace)  # noqa: S102 - the documented example
    return namespace, out.getvalue(), printed


def test_worked_example_prints_what_the_page_shows():
    _, out, printed = _example()
    assert out == printed


def test_worked_example_values():
    multicomp = pytest.importorskip("statsmodels.stats.multicomp")
    ns, _, _ = _example()
    rr = {name: [1.0 / r for r in at] for name, at in ns["ranks"].items()}  # one relevant document per query
    names = list(rr)
    expected = multicomp.pairwise_tukeyhsd([x for n in names for x in rr[n]], [n for n in names for _ in rr[n]])
    rows = ns["tukey"].rows
    assert [(r.system_a, r.system_b) for r in rows] == [("bm25", "dense"), ("bm25", "splade"), ("dense", "splade")]
    for n, r in enumerate(rows):
        assert abs(r.difference - expected.meandiffs[n]) <= 1e-9 and abs(r.p_value - expected.pvalues[n]) <= 1e-6
        assert abs(r.ci_low - expected.confint[n, 0]) <= 1e-9 and abs(r.ci_high - expected.confint[n, 1]) <= 1e-9
    dense = next(r for r in ns["table"].winners_losers(2).rows if r.system == "dense")
    d = [a - b for a, b in zip(rr["dense"], rr["bm25"])]
    assert (dense.wins, dense.ties, dense.losses) == (sum(x > 0 for x in d), d.count(0.0), sum(x < 0 for x in d))
    assert dense.gains[0] == ("q8", pytest.approx(1 - 1 / 5)) and dense.drops == [("q7", pytest.approx(-0.5))]
