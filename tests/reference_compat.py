"""Plain-Python reference for Compat(p, normalize) (Clarke, Vtyurina and Smucker 2021).

Rank-biased overlap of the ranking with an ideal ranking, depth by depth
with sets, as the definition reads:

* ideal: the query's judged documents of grade > 0, by grade descending;
  documents of one grade in the order of the ranking, those the ranking
  lacks after (their order among themselves cannot change any overlap);
* D = max(|ranking|, |ideal|);
  RBO(a, b) = sum_{d=1..D} p^(d-1) |a[:d] ∩ b[:d]| / d / sum_{d=1..D} p^(d-1);
* Compat = RBO(ranking, ideal) / RBO(ideal, ideal) when normalize and the
  latter is > 0, else RBO(ranking, ideal); 0 when D = 0.

Defined (gpukit convention) when the query has a document of grade > 0.
"""
from __future__ import annotations

from reference import RefFamily, register


def _rbo(a: list, b: list, p: float, depth: int) -> float:
    score, norm, weight = 0.0, 0.0, 1.0
    for d in range(1, depth + 1):
        overlap = len(set(a[:d]) & set(b[:d]))
        score += weight * overlap / d
        norm += weight
        weight *= p
    return score / norm if norm else 0.0


def _flag(value) -> bool:
    return value in (True, 1, "True", "true", "1")  # names carry the flag as text


def compat(m, grades, judgments):
    p, normalize = float(m.param("p")), _flag(m.param("normalize"))
    # Ranked documents are named by rank; those the ranking lacks by (grade, index).
    ranking = [("ranked", i) for i in range(len(grades))]
    retrieved = {}
    for i, g in enumerate(grades):
        if g is not None and g > 0:
            retrieved.setdefault(g, []).append(("ranked", i))
    ideal = []
    for g in sorted({g for g in judgments.values() if g > 0}, reverse=True):
        mine = retrieved.get(g, [])
        missing = sum(1 for x in judgments.values() if x == g) - len(mine)
        ideal += mine + [("unretrieved", g, j) for j in range(missing)]
    depth = max(len(ranking), len(ideal))
    score = _rbo(ranking, ideal, p, depth)
    if normalize:
        best = _rbo(ideal, ideal, p, depth)
        if best > 0:
            score /= best
    return score, bool(ideal)


register("Compat", RefFamily(compat, "none", params=(("p", 0.95), ("normalize", True))))
