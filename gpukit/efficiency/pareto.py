"""The recall–throughput Pareto front.

Point ``a`` dominates ``b`` when it is at least as good on both axes and
strictly better on one:

    a >= b on recall and qps, and a > b on recall or qps

The front is the set of points no other point dominates (equal points do
not dominate each other, so duplicates are all kept). It is computed by one
sort by qps descending and a sweep that tracks the best recall seen at a
strictly higher qps: O(n log n).
"""
from __future__ import annotations

from typing import Sequence


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when ``a = (recall, qps)`` dominates ``b``."""
    return a[0] >= b[0] and a[1] >= b[1] and (a[0] > b[0] or a[1] > b[1])


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the non-dominated ``(recall, qps)`` points, by recall ascending.

    Ties in recall are ordered by qps descending, so the list traces the
    front from the fastest to the most accurate point.
    """
    order = sorted(range(len(points)), key=lambda i: (-points[i][1], -points[i][0]))
    front: list[int] = []
    best_faster = float("-inf")  # best recall among points with strictly higher qps
    pos = 0
    while pos < len(order):
        # One group of equal qps: within it only a higher recall dominates.
        qps = points[order[pos]][1]
        group = []
        while pos < len(order) and points[order[pos]][1] == qps:
            group.append(order[pos])
            pos += 1
        group_best = max(points[i][0] for i in group)
        for i in group:
            recall = points[i][0]
            if recall > best_faster and recall == group_best:
                front.append(i)
        best_faster = max(best_faster, group_best)
    return sorted(front, key=lambda i: (points[i][0], -points[i][1]))
