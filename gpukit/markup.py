"""Markdown and LaTeX tables for reports and comparisons (no torch: ``gpukit eval`` imports it).

Every table is a header row and body rows of cell strings. Markdown is a
GitHub (GFM) pipe table: cells are joined by ``" | "``, a ``|`` inside a cell
is written ``\\|`` and a backslash ``\\\\`` (so a cell never ends a column early),
and line breaks become spaces. LaTeX is a booktabs ``tabular`` (``\\toprule``,
``\\midrule``, ``\\bottomrule``; needs ``\\usepackage{booktabs}``) with every
text cell escaped by :func:`latex_escape`; numeric cells are written as given.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

_LATEX_SPECIALS = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                   "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
                   # OT1, LaTeX's default font encoding, prints these three as other glyphs
                   "|": r"\textbar{}", "<": r"\textless{}", ">": r"\textgreater{}"}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters (``& % $ # _ { } ~ ^ \\ | < >``) made literal."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def markdown_escape(text: str) -> str:
    """``text`` safe inside one GFM table cell: ``\\`` and ``|`` escaped, line breaks made spaces."""
    return " ".join(text.replace("\\", "\\\\").replace("|", "\\|").splitlines())


def number(value: float | None, digits: int = 4, *, signed: bool = False, missing: str = "") -> str:
    """``value`` with ``digits`` decimals (a sign with ``signed``); ``missing`` for None,
    ``nan``/``inf``/``-inf`` for the non-finite."""
    if value is None:
        return missing
    if not math.isfinite(value):
        return str(value)
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def p_value(value: float | None, missing: str = "") -> str:
    """A p-value: 4 decimals, or 2 significant digits in exponent form below 1e-4 (never 0.0000)."""
    if value is None:
        return missing
    return f"{value:.1e}" if 0 < value < 1e-4 else f"{value:.4f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> str:
    """A GFM pipe table; ``align`` holds ``l`` or ``r`` per column. Cells are escaped here."""
    rule = {"l": ":---", "r": "---:"}
    escaped = [[markdown_escape(c) for c in row] for row in [header, *rows]]
    lines = [escaped[0], [rule[a] for a in align], *escaped[1:]]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def latex_tabular(header: Sequence[str], rows: Sequence[Sequence[str]], align: str,
                  comments: Sequence[str] = ()) -> str:
    """A booktabs ``tabular``; ``header`` and ``rows`` are LaTeX already (escape text with
    :func:`latex_escape`); each of ``comments`` becomes a ``%`` line above it."""
    lines = [f"% {c}" for c in comments]
    lines += [f"\\begin{{tabular}}{{{align}}}", "\\toprule", " & ".join(header) + " \\\\", "\\midrule"]
    lines += [" & ".join(row) + " \\\\" for row in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)
