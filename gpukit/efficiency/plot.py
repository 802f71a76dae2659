"""Recall–throughput plot of a sweep, one curve per index (PNG).

x: recall@k, y: queries per second on a log scale (ann-benchmarks'
layout). Each index's points are joined in sweep order; points on the
overall Pareto front are ringed and the front is drawn as a dashed
staircase: at recall r it shows the best qps of any point with recall >= r.
Uses matplotlib's Agg canvas directly, so no global backend is switched.
"""
from __future__ import annotations

import os

from gpukit.efficiency.sweep import SweepResult
from gpukit.errors import GpukitError


def plot_pareto(result: SweepResult, path: str | os.PathLike[str], title: str | None = None) -> None:
    """Write the sweep's plot to ``path`` (PNG)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise GpukitError("plotting needs matplotlib: pip install 'gpukit[stats]'") from exc
    figure = Figure(figsize=(7, 4.5), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for name in result.index_names():
        points = [p for p in result.points if p.index == name]
        xs, ys = [p.recall for p in points], [p.qps for p in points]
        (line,) = axes.plot(xs, ys, marker="o", label=name)
        for p in points:
            label = ",".join(f"{k}={v}" for k, v in p.params.items())
            if label:
                axes.annotate(label, (p.recall, p.qps), fontsize=6, xytext=(3, 3), textcoords="offset points", color=line.get_color())
    front = result.front()
    if front:
        axes.step([p.recall for p in front], [p.qps for p in front], where="pre", linestyle="--", color="black", linewidth=1, label="Pareto front")
        axes.scatter([p.recall for p in front], [p.qps for p in front], s=90, facecolors="none", edgecolors="black", zorder=3)
    if all(p.qps > 0 for p in result.points) and result.points:
        axes.set_yscale("log")
    axes.set_xlabel(f"recall@{result.k} (vs exact float32)")
    axes.set_ylabel("queries / s (median of repeats)")
    axes.set_title(title or f"recall–throughput, {result.queries} queries on {result.device}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(os.fspath(path), format="png")
