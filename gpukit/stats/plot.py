"""Per-query difference plots (matplotlib, PNG).

Each line shows one system's per-query differences to the baseline sorted
from largest gain to largest loss: the area above 0 is where the system
wins, below 0 where it loses -- the shape a mean hides. One panel per
measure. Uses the object-oriented Agg canvas, so no pyplot global state or
display backend is touched.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import torch

from gpukit.stats._common import StatsError
from gpukit.stats.compare import ComparisonTable


def _panels(source: ComparisonTable | Mapping[str, Any], measure: str | None) -> dict[str, dict[str, torch.Tensor]]:
    """``{panel title: {line label: differences}}`` from a table or a plain mapping."""
    if isinstance(source, ComparisonTable):
        measures = source.measures if measure is None else [measure]
        if measure is not None and measure not in source.measures:
            raise StatsError(f"measure {measure!r} is not in the table: {', '.join(source.measures)}")
        return {
            f"{m} (vs {source.baseline})": {
                s: source.differences[(s, m)] for s in source.systems if s != source.baseline
            }
            for m in measures
        }
    lines = {str(k): torch.as_tensor(v, dtype=torch.float64).cpu() for k, v in source.items()}
    return {measure or "per-query differences": lines}


def plot_differences(
    table_or_diffs: ComparisonTable | Mapping[str, Any],
    path: str | os.PathLike,
    *,
    measure: str | None = None,
    title: str | None = None,
    dpi: int = 120,
) -> str:
    """Write a PNG of sorted per-query differences and return its path.

    Args:
        table_or_diffs: a :class:`ComparisonTable` (one panel per measure,
            one line per non-baseline system) or ``{label: differences}``
            (one panel; ``measure`` then only names it).
        path: output file (PNG).
        measure: restrict a table to one measure.
        title: figure title.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StatsError("plotting needs matplotlib; install gpukit[stats]") from exc
    panels = _panels(table_or_diffs, measure)
    if not panels or not any(panels.values()):
        raise StatsError("nothing to plot: no differences given")
    figure = Figure(figsize=(7.0, 3.0 * len(panels)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (panel, lines) in zip(axes, panels.items()):
        for label, diffs in lines.items():
            ordered = torch.sort(diffs.flatten(), descending=True).values
            # Markers only while individual queries stay distinguishable.
            marker = "." if ordered.numel() <= 100 else None
            ax.plot(range(1, ordered.numel() + 1), ordered.tolist(), label=label, linewidth=1.2, marker=marker)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_title(panel)
        ax.set_xlabel("queries, sorted by difference")
        ax.set_ylabel("difference")
        ax.legend(loc="best", fontsize="small")
    if title:
        figure.suptitle(title)
    figure.savefig(os.fspath(path), format="png", dpi=dpi)
    return os.fspath(path)
