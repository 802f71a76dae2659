"""Evaluation reports as Markdown or LaTeX tables (``gpukit eval --format markdown|latex``).

One table for any number of reports: a row per run, a column per measure
(the union of the reports' measures, in first-seen order; a cell is empty
where a run lacks the measure), each value the reported aggregate (the
mean with ``digits`` decimals; a count's sum as a whole number). A mean over no query is
``nan`` in Markdown and ``--`` in LaTeX. The conventions follow the table
(Markdown) or precede it as ``%`` comments (LaTeX). With ``per_query``, each
run adds a table with a row per query and an empty cell where the query was
omitted from a measure. Run names, measure names and query ids are escaped.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gpukit.errors import UsageError
from gpukit.markup import latex_escape, latex_tabular, markdown_table, number

if TYPE_CHECKING:
    from gpukit.report import ResultSet


def _check_digits(digits: int) -> None:
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or not 0 <= digits <= 17:
        raise UsageError(f"digits must be an integer from 0 to 17, got {digits!r}")


def _tables(reports: Sequence[ResultSet], per_query: bool, digits: int, missing: str,
            escape: Callable[[str], str]) -> tuple[list[str], list[list[str]], list[tuple[str, list[str], list[list[str]]]], str]:
    """The summary header and rows, the per-query tables and the conventions line, as cell text."""
    _check_digits(digits)
    if not reports:
        raise UsageError("no report to write")
    dicts: list[dict[str, Any]] = [r.to_dict(per_query=per_query) for r in reports]
    measures = list(dict.fromkeys(m for d in dicts for m in d["measures"]))

    def cell(value: float | None, aggregate: str) -> str:
        # Counts (sums: num_rel, num_ret...) are whole numbers: written without decimals.
        if aggregate == "sum" and value is not None and float(value).is_integer():
            return str(int(value))
        return number(value, digits)

    rows = [[escape(str(d["run"]))] + [
        "" if m not in d["measures"] else missing if d["measures"][m]["mean"] is None
        else cell(d["measures"][m]["mean"], d["measures"][m]["aggregate"]) for m in measures
    ] for d in dicts]
    per_query_tables = []
    if per_query:
        for d in dicts:
            names = list(d["measures"])
            body = [[escape(q)] + [cell(values.get(m), d["measures"][m]["aggregate"]) for m in names]
                    for q, values in d["per_query"].items()]
            per_query_tables.append((str(d["run"]), [escape(m) for m in names], body))
    settings = sorted({(d["convention"], d["topics"]) for d in dicts}, key=str)
    words = "; ".join(f"convention {c}, {t} topics" for c, t in settings)
    return [escape(m) for m in measures], rows, per_query_tables, words


def reports_markdown(reports: Sequence[ResultSet], per_query: bool = False, digits: int = 4) -> str:
    """GFM pipe tables of ``reports`` (see the module docstring); cells are escaped by the table writer."""
    measures, rows, per_query_tables, words = _tables(reports, per_query, digits, "nan", str)
    parts = [markdown_table(["run", *measures], rows, "l" + "r" * len(measures)), f"{words}."]
    for run, names, body in per_query_tables:
        parts += [f"Per-query values, run {run}:", markdown_table(["query", *names], body, "l" + "r" * len(names))]
    return "\n\n".join(parts)


def reports_latex(reports: Sequence[ResultSet], per_query: bool = False, digits: int = 4) -> str:
    """booktabs ``tabular`` environments of ``reports`` (see the module docstring)."""
    measures, rows, per_query_tables, words = _tables(reports, per_query, digits, "--", latex_escape)
    parts = [latex_tabular(["Run", *measures], rows, "l" + "r" * len(measures), [words])]
    for run, names, body in per_query_tables:
        comment = f"per-query values, run {run}".replace("\n", " ")
        parts.append(latex_tabular(["Query", *names], body, "l" + "r" * len(names), [comment]))
    return "\n\n".join(parts)
