"""Markdown and LaTeX reports (Report.to_markdown/to_latex, ``gpukit eval --format markdown|latex``,
ComparisonTable.to_markdown): the tables parse back to the reports' own values and names."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

import gpukit
from gpukit.cli import main
from gpukit.errors import UsageError
from gpukit.markup import latex_escape
from gpukit.stats import ComparisonSettings, compare_per_query

DATA = Path(__file__).parent / "data" / "trec_eval"
NAME = "my_run 100% & #1 | {x}~^\\y"
MEASURES = ["nDCG(judged_only=True)@10", "AP", "P@2", "RR"]
LATEX_LITERALS = {r"\textasciitilde{}": "~", r"\textasciicircum{}": "^", r"\textbackslash{}": "\\",
                  r"\textbar{}": "|", r"\textless{}": "<", r"\textgreater{}": ">"}


def _markdown_tables(text: str) -> list[list[list[str]]]:
    """Each pipe table's rows (header first, the rule row dropped), cells unescaped."""
    tables, current = [], None
    for line in text.splitlines() + [""]:
        if line.startswith("| "):
            cells = [re.sub(r"\\(.)", r"\1", c) for c in line[2:-2].split(" | ")]
            current = (current or []) + ([] if all(set(c) <= set(":-") for c in cells) else [cells])
        elif current is not None:
            tables.append(current)
            current = None
    return tables


def _latex_unescape(cell: str) -> str:
    for macro, ch in LATEX_LITERALS.items():
        cell = cell.replace(macro, ch)
    return re.sub(r"\\([&%$#_{}])", r"\1", cell)


def _latex_tables(text: str) -> list[list[list[str]]]:
    """Each tabular's header and body rows, cells unescaped."""
    tables = []
    for block in re.findall(r"\\toprule\n(.*?)\\bottomrule", text, re.DOTALL):
        lines = [line for line in block.splitlines() if line != "\\midrule"]
        tables.append([[_latex_unescape(c) for c in line.removesuffix(" \\\\").split(" & ")] for line in lines])
    return tables


def _report():
    qrels = gpukit.Qrels.from_dict({"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}, "q_3": {"d9": 0}})
    run = gpukit.Run.from_dict({"q1": {"d1": 1.0, "d2": 0.5, "d7": 0.2}, "q2": {"d3": 0.1, "d4": 0.9},
                                "q_3": {"d9": 1.0}}, name=NAME)
    return gpukit.evaluate(qrels, run, MEASURES)


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_report_tables_parse_back_to_the_values(fmt):
    report = _report()
    text = report.to_markdown(per_query=True, digits=12) if fmt == "markdown" else report.to_latex(per_query=True, digits=12)
    summary, per_query = (_markdown_tables if fmt == "markdown" else _latex_tables)(text)
    assert [summary[0][0].lower(), *summary[0][1:]] == ["run", *MEASURES]
    assert summary[1][0] == NAME
    for name, cell in zip(MEASURES, summary[1][1:]):
        assert abs(float(cell) - report[name].mean) <= 5e-13
    by_query = report.by_query()
    assert [row[0] for row in per_query[1:]] == list(by_query)
    for row in per_query[1:]:
        for name, cell in zip(MEASURES, row[1:]):
            value = by_query[row[0]].get(name)
            assert (cell == "") if value is None else abs(float(cell) - value) <= 5e-13


def test_default_digits_round_and_nan_cells():
    report = _report()
    md = _markdown_tables(report.to_markdown())[0]
    assert [float(c) for c in md[1][1:]] == [float(f"{report[m].mean:.4f}") for m in MEASURES]
    # A measure no query is evaluated on has a NaN mean: "nan" in Markdown, "--" in LaTeX.
    qrels = gpukit.Qrels.from_dict({"q1": {"d1": 0}})
    empty = gpukit.evaluate(qrels, gpukit.Run.from_dict({"q1": {"d1": 1.0}}), ["AP"])
    assert math.isnan(empty["AP"].mean)
    assert _markdown_tables(empty.to_markdown())[0][1][1] == "nan"
    assert _latex_tables(empty.to_latex())[0][1][1] == "--"
    with pytest.raises(UsageError, match="digits"):
        report.to_markdown(digits=-1)


def test_latex_escapes_every_special_character():
    assert latex_escape("a_b%c&d#e$f{g}h~i^j\\k|l<m>") == (
        r"a\_b\%c\&d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k\textbar{}l\textless{}m\textgreater{}")
    text = _report().to_latex()
    assert "my\\_run 100\\% \\& \\#1" in text and "nDCG(judged\\_only=True)@10" in text


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_eval_command_writes_one_table_for_all_runs(fmt, capsys):
    runs = [str(DATA / "results.test"), str(DATA / "results.test")]
    assert main(["eval", str(DATA / "qrels.test"), *runs, "-m", "AP", "-m", "P@10", "--format", fmt]) == 0
    out = capsys.readouterr().out
    table = (_markdown_tables if fmt == "markdown" else _latex_tables)(out)[0]
    report = gpukit.evaluate(gpukit.Qrels.from_trec(DATA / "qrels.test"), gpukit.Run.from_trec(runs[0]), ["AP", "P@10"])
    assert len(table) == 3 and table[1] == table[2]
    assert [float(c) for c in table[1][1:]] == [float(f"{report[m].mean:.4f}") for m in ("AP", "P@10")]


def test_comparison_table_markdown_parses_back():
    g = torch.Generator().manual_seed(1)
    names = ["base|1", "sys_a", "c%"]
    scores = {s: {"AP": torch.rand(20, generator=g, dtype=torch.float64)} for s in names}
    table = compare_per_query(scores, settings=ComparisonSettings(n_resamples=100))
    rows = _markdown_tables(table.to_markdown())[0]
    assert rows[0][:4] == ["measure", "system", "mean", "diff"]
    assert [r[1] for r in rows[1:]] == names
    for cells in rows[1:]:
        r = table.row(cells[1], "AP")
        assert float(cells[2]) == float(f"{r.mean:.4f}")
        if not r.is_baseline:
            assert float(cells[3]) == float(f"{r.difference:.4f}") and cells[8] == f"{r.wins}/{r.ties}/{r.losses}"
    assert "base\\textbar{}1 (baseline)" in table.to_latex()
